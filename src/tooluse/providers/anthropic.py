"""Anthropic Messages wire adapter.

Rules: the system prompt goes in ``system``; all results of one assistant turn go in one user
message as ``tool_result`` blocks (in call order, before any user text), with ``is_error`` for
failures; consecutive same-role turns are merged; ``tools`` are always declared when the history
holds tool blocks; thinking blocks (with their signature) are replayed unchanged to Anthropic and
dropped for any other provider; a forced ``tool_choice`` is downgraded to ``auto`` (with a logged
warning) when thinking is on or the caller says the model refuses forced choices; sampling
parameters a model refuses (see :mod:`tooluse.providers.claude_models`) are left out, logged;
whitespace-only text blocks are not replayed (the API refuses them); server-tool blocks (a tool
search's ``server_tool_use`` and ``tool_search_tool_result``) are kept and replayed in place
(see :mod:`tooluse.providers.tool_loading` for deferred tools and the tools' cache breakpoint).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tooluse.errors import BackendError
from tooluse.events import (
    ArgumentsDelta,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from tooluse.media import Image
from tooluse.messages import ChatMessage, ProviderState, ToolCall, ToolResult, Usage
from tooluse.providers.base import GenerationResult, SamplingParams, ToolChoice
from tooluse.providers.call_ids import CallIdMapper
from tooluse.providers.claude_models import apply_sampling_rules
from tooluse.providers.code_execution import (
    CONTAINER_KEY,
    anthropic_call,
    anthropic_container,
    anthropic_programs,
    with_anthropic_callers,
)
from tooluse.providers.tool_loading import anthropic_tools, is_anthropic_server_block
from tooluse.providers.turn_builder import TurnBuilder, make_call
from tooluse.providers.wire_common import (
    ResultBatch,
    cut_short,
    decode_arguments,
    encode_assistant_parts,
    group_turns,
    log,
    normalize_tool_choice,
    replayable,
    system_text,
    tool_schema,
    tools_for_history,
    wire_name,
)
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DIALECT",
    "PROVIDER",
    "AnthropicStreamAssembler",
    "decode_response",
    "encode_request",
]

PROVIDER = "anthropic"
#: The schema dialect of this wire (tool definitions and tool names).
DIALECT = PROVIDER
DEFAULT_MAX_TOKENS = 4096

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}


def encode_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition] = (),
    params: SamplingParams | None = None,
    tool_choice: ToolChoice = "auto",
    *,
    model: str = "",
    strict: bool = False,
    forced_choice_supported: bool = True,
) -> dict[str, Any]:
    """The Messages request body."""
    wire_id = CallIdMapper("anthropic")
    out: list[dict[str, Any]] = []
    for turn in group_turns(messages):
        if isinstance(turn, ResultBatch):
            blocks = [_result_block(r, wire_id(r.call_id)) for r in turn.results]
            _append(out, "user", blocks)
        elif turn.role == "assistant":
            _append(out, "assistant", _assistant_blocks(turn, wire_id, model))
        elif turn.content.strip():  # whitespace-only text blocks are refused with a 400
            _append(out, "user", [{"type": "text", "text": turn.content}])
    body: dict[str, Any] = {"model": model, "messages": out} if model else {"messages": out}
    system = system_text(messages)
    if system:
        body["system"] = system
    params = params or SamplingParams()
    body["max_tokens"] = params.max_tokens or DEFAULT_MAX_TOKENS
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if params.top_p is not None:
        body["top_p"] = params.top_p
    if params.stop:
        body["stop_sequences"] = list(params.stop)
    if params.seed is not None:
        log.warning("Anthropic has no seed parameter; not sent")
    container = anthropic_container(messages)
    if container is not None:  # a program waits for its calls' results in this container
        body["container"] = container
    body.update(params.extra)
    apply_sampling_rules(body, model)  # newer models refuse temperature/top_p; logged
    declared = tools_for_history(messages, tools)
    if declared:
        schemas = [tool_schema(t, "anthropic", strict=strict) for t in declared]
        body["tools"] = with_anthropic_callers(
            anthropic_tools(schemas, declared, params), declared, params
        )
        if tools:
            choice = _tool_choice(
                normalize_tool_choice(tool_choice, tools),
                thinking=_thinking_on(body),
                forced_ok=forced_choice_supported,
            )
        else:  # placeholders for an old history: nothing may be called
            choice = {"type": "none"}
        if params.parallel_tool_calls is False and choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
        body["tool_choice"] = choice
    return body


def _thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _tool_choice(choice: Any, *, thinking: bool, forced_ok: bool) -> dict[str, Any]:
    forced = choice == "required" or isinstance(choice, tuple)
    if forced and (thinking or not forced_ok):
        why = "extended thinking is on" if thinking else "this model rejects forced tool choice"
        log.warning("tool_choice %r downgraded to 'auto' for Anthropic: %s", choice, why)
        return {"type": "auto"}
    if isinstance(choice, tuple):
        return {"type": "tool", "name": wire_name(choice[1], PROVIDER)}
    return {"type": {"required": "any"}.get(choice, choice)}


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    # Anthropic wants alternating roles; same-role neighbours become one message.
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": list(blocks)})


def _result_block(result: ToolResult, wire: str) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": wire,
        "content": _content(result),
    }
    if result.is_error:
        block["is_error"] = True
    return block


def _content(result: ToolResult) -> str | list[dict[str, Any]]:
    """A ``tool_result``'s content: its text, or text, image and document blocks."""
    if not result.media:
        return result.output
    blocks: list[dict[str, Any]] = []
    for part in result.parts:
        if isinstance(part, str):
            if part:
                blocks.append({"type": "text", "text": part})
            continue
        kind = "image" if isinstance(part, Image) else "document"
        source = {"type": "base64", "media_type": part.media_type, "data": part.base64}
        if kind == "document" and part.media_type.startswith("text/"):
            source = {"type": "text", "media_type": "text/plain", "data": part.data.decode()}
        blocks.append({"type": kind, "source": source})
    return blocks


def _assistant_blocks(
    message: ChatMessage, wire_id: CallIdMapper, model: str
) -> list[dict[str, Any]]:
    return encode_assistant_parts(
        message,
        PROVIDER,
        model,
        reasoning=lambda state: dict(state.data),
        text=lambda text: {"type": "text", "text": text},
        call=lambda call: _tool_use(call, wire_id, model),
        drop_blank_text=True,
    )


def _tool_use(call: ToolCall, wire_id: CallIdMapper, model: str) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_use",
        "id": wire_id(call.id),
        "name": wire_name(call.name, PROVIDER),
        "input": call.arguments,
    }
    state = replayable(call.state, PROVIDER, model)
    if state is not None and isinstance(state.data.get("caller"), dict):
        block["caller"] = dict(state.data["caller"])  # a call its program made
    return block


def _usage(data: dict[str, Any] | None) -> Usage:
    # input_tokens leaves out the cached tokens; they are prompt tokens all the same.
    data = data or {}
    read = int(data.get("cache_read_input_tokens") or 0)
    written = int(data.get("cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0) + read + written,
        output_tokens=int(data.get("output_tokens") or 0),
        requests=1,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def _block_into(builder: TurnBuilder, block: dict[str, Any], model: str) -> None:
    kind = block.get("type")
    if kind == "text":
        builder.text(block.get("text", ""))
    elif kind == "thinking":
        state = ProviderState(provider=PROVIDER, model=model, data=dict(block))
        builder.reasoning(block.get("thinking", ""), state)
    elif kind == "redacted_thinking" or is_anthropic_server_block(block):
        # Opaque to the caller, replayed whole (a tool search's blocks keep its tools loaded).
        builder.reasoning("", ProviderState(provider=PROVIDER, model=model, data=dict(block)))
    elif kind == "tool_use":
        call = make_call(block.get("id"), block.get("name", ""), block.get("input"))
        builder.call(anthropic_call(call, block, model))


def decode_response(body: dict[str, Any], *, model: str = "") -> GenerationResult:
    """A Messages response body as one turn; ``model`` tags thinking state for replay."""
    if body.get("type") == "error" or "content" not in body:
        raise BackendError(f"Anthropic error: {json.dumps(body.get('error') or body)[:500]}")
    builder = TurnBuilder()
    for block in body.get("content") or []:
        _block_into(builder, block, model)
    reason = body.get("stop_reason") or "end_turn"
    result = builder.build(
        finish_reason=_STOP.get(reason, reason), usage=_usage(body.get("usage")), raw=body
    )
    return _with_programs(result, body.get("content") or [], body.get("container"))


def _with_programs(
    result: GenerationResult, blocks: Sequence[dict[str, Any]], container: Any
) -> GenerationResult:
    """The turn with the programs it started or ended, and the container they run in."""
    programs = anthropic_programs(blocks)
    if not programs and not container:
        return result
    message = result.to_message()
    if isinstance(container, dict) and container.get("id"):
        kept = {"id": container["id"], "expires_at": str(container.get("expires_at", ""))}
        message = dataclasses.replace(message, metadata={**message.metadata, CONTAINER_KEY: kept})
    return dataclasses.replace(result, programs=programs, message=message)


@dataclass
class _Block:
    data: dict[str, Any]
    pieces: list[str] = field(default_factory=list)
    call_number: int | None = None
    closed: bool = False


class AnthropicStreamAssembler:
    """Messages stream events to tooluse events; tool input is assembled per block index.

    The stream is complete at ``message_stop``; :meth:`finish` raises
    :class:`IncompleteStreamError` (with the partial turn) when it never came.
    """

    def __init__(self, *, model: str = "") -> None:
        self.model = model
        self._blocks: dict[int, _Block] = {}
        self._calls = 0
        self._usage: dict[str, Any] = {}
        self._stop = "end_turn"
        self._container: Any = None
        self._complete = False

    def _count(self, usage: dict[str, Any] | None) -> None:
        # Counts are cumulative; a null (message_delta sends "input_tokens": null) keeps the last.
        self._usage.update({k: v for k, v in (usage or {}).items() if v is not None})

    def feed(self, event: dict[str, Any]) -> list[StreamEvent]:
        kind = event.get("type")
        if kind == "message_start":
            self._count((event.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            return self._start(int(event.get("index", len(self._blocks))), event)
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index", 0)), event.get("delta") or {})
        elif kind == "content_block_stop":
            block = self._blocks.get(int(event.get("index", 0)))
            if block is not None:
                return self._close(block)
        elif kind == "message_delta":
            self._count(event.get("usage"))
            delta = event.get("delta") or {}
            self._stop = delta.get("stop_reason") or self._stop
            self._container = delta.get("container") or self._container
        elif kind == "message_stop":
            self._complete = True
        elif kind == "error":
            raise BackendError(f"Anthropic stream error: {json.dumps(event.get('error'))[:500]}")
        return []

    def _start(self, index: int, event: dict[str, Any]) -> list[StreamEvent]:
        data = dict(event.get("content_block") or {})
        block = self._blocks[index] = _Block(data=data)
        if data.get("type") == "tool_use":
            block.call_number = self._calls
            self._calls += 1
            return [
                ToolCallStarted(
                    index=block.call_number, name=data.get("name", ""), id=data.get("id", "")
                )
            ]
        if data.get("type") == "text" and data.get("text"):
            return [TextDelta(text=data["text"])]
        if data.get("type") == "thinking" and data.get("thinking"):
            return [ReasoningDelta(text=data["thinking"])]
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        block = self._blocks.setdefault(index, _Block(data={"type": "text", "text": ""}))
        kind = delta.get("type")
        if kind == "text_delta":
            block.data["text"] = block.data.get("text", "") + delta.get("text", "")
            return [TextDelta(text=delta.get("text", ""))]
        if kind == "thinking_delta":
            block.data["thinking"] = block.data.get("thinking", "") + delta.get("thinking", "")
            return [ReasoningDelta(text=delta.get("thinking", ""))]
        if kind == "signature_delta":
            block.data["signature"] = block.data.get("signature", "") + delta.get("signature", "")
        elif kind == "input_json_delta":  # a call's arguments, or a server tool's input
            text = delta.get("partial_json", "")
            block.pieces.append(text)
            if text and block.call_number is not None:
                return [ArgumentsDelta(index=block.call_number, text=text)]
        return []

    def _close(self, block: _Block) -> list[StreamEvent]:
        if block.closed:
            return []
        block.closed = True
        joined = "".join(block.pieces)
        if block.call_number is None:
            if joined.strip():  # a server tool's input, whole for its replay
                block.data["input"] = decode_arguments(joined)[0]
            return []
        block.data["input"] = joined if joined.strip() else block.data.get("input") or {}
        call = make_call(block.data.get("id"), block.data.get("name", ""), block.data["input"])
        call = anthropic_call(call, block.data, self.model)
        block.data["_call"] = call
        return [ToolCallFinished(index=block.call_number, call=call)]

    def finish(self) -> tuple[list[StreamEvent], GenerationResult]:
        events: list[StreamEvent] = []
        for index in sorted(self._blocks):
            events.extend(self._close(self._blocks[index]))
        builder = TurnBuilder()
        for index in sorted(self._blocks):
            data = self._blocks[index].data
            if "_call" in data:
                builder.call(data["_call"])
            else:
                _block_into(builder, data, self.model)
        result = builder.build(
            finish_reason=_STOP.get(self._stop, self._stop), usage=_usage(self._usage)
        )
        blocks = [self._blocks[index].data for index in sorted(self._blocks)]
        result = _with_programs(result, blocks, self._container)
        if not self._complete:
            raise cut_short(result, "message_stop")
        return events, result
