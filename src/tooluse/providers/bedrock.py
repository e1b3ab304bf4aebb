"""AWS Bedrock Converse wire adapter.

Rules: results go in a user message holding only ``toolResult`` blocks (user text follows in a
separate message), in call order, with ``status: "error"`` for failures (Claude and Nova models;
for others the error stays in the text); ``toolConfig`` is always sent when the history holds
tool blocks; there is no ``none`` tool choice (``toolChoice`` is omitted, with a logged warning)
and a named choice is refused on models other than Claude and Nova; user text right after results
gets a short assistant turn in between (roles must alternate); reasoning blocks with their
signature are replayed only to Bedrock and the same model; Claude models get only the sampling
parameters they accept (see :mod:`tooluse.providers.claude_models`); whitespace-only text
blocks are not replayed (Converse refuses blank text); ``SamplingParams(cache_tools=True)`` ends
``toolConfig.tools`` with a ``cachePoint``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tooluse.errors import BackendError
from tooluse.events import (
    ArgumentsDelta,
    ParseError,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from tooluse.media import Image
from tooluse.messages import ChatMessage, ProviderState, ToolResult, Usage
from tooluse.providers.base import GenerationResult, SamplingParams, ToolChoice
from tooluse.providers.call_ids import CallIdMapper
from tooluse.providers.claude_models import apply_sampling_rules
from tooluse.providers.openai_chat import result_text
from tooluse.providers.tool_loading import bedrock_tools
from tooluse.providers.turn_builder import TurnBuilder, make_call
from tooluse.providers.wire_common import (
    ResultBatch,
    cut_short,
    encode_assistant_parts,
    group_turns,
    log,
    normalize_tool_choice,
    system_text,
    tool_schema,
    tools_for_history,
    wire_name,
)
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "DIALECT",
    "PROVIDER",
    "RESULTS_ACK_TEXT",
    "BedrockStreamAssembler",
    "decode_response",
    "encode_request",
    "supports_named_choice",
]

PROVIDER = "bedrock"
#: The schema dialect of this wire (tool definitions and tool names).
DIALECT = PROVIDER
# The assistant turn placed between tool results and a following user message.
RESULTS_ACK_TEXT = "(tool results received)"

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "malformed_tool_use": "malformed_tool_call",
    "malformed_model_output": "malformed_tool_call",
}


def supports_named_choice(model: str) -> bool:
    """Whether a Bedrock model takes ``toolChoice.tool`` and ``status: "error"`` (Claude, Nova)."""
    lowered = model.lower()
    return any(family in lowered for family in ("anthropic", "claude", "nova"))


def encode_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition] = (),
    params: SamplingParams | None = None,
    tool_choice: ToolChoice = "auto",
    *,
    model: str = "",
    strict: bool = False,
) -> dict[str, Any]:
    """The Converse request body (the model id goes in the URL)."""
    body: dict[str, Any] = {"messages": _messages(messages, model)}
    system = system_text(messages)
    if system:
        body["system"] = [{"text": system}]
    declared = tools_for_history(messages, tools)
    if declared:
        schemas = [tool_schema(t, "bedrock", strict=strict) for t in declared]
        config: dict[str, Any] = {"tools": bedrock_tools(schemas, params)}
        choice = _tool_choice(tools, tool_choice, model)
        if choice is not None:
            config["toolChoice"] = choice
        body["toolConfig"] = config
    inference = _inference_config(params)
    apply_sampling_rules(inference, model, keys=("temperature", "topP", "topK"))
    if inference:
        body["inferenceConfig"] = inference
    if params is not None:
        body.update(params.extra)
    native = body.get("additionalModelRequestFields")
    if isinstance(native, dict):  # Claude's own fields (top_k goes here on Converse)
        body["additionalModelRequestFields"] = native = dict(native)
        apply_sampling_rules(native, model)
        if not native:
            del body["additionalModelRequestFields"]
    return body


def _messages(messages: Sequence[ChatMessage], model: str) -> list[dict[str, Any]]:
    wire_id = CallIdMapper("bedrock")
    error_status = supports_named_choice(model) or not model
    out: list[dict[str, Any]] = []
    for turn in group_turns(messages):
        if isinstance(turn, ResultBatch):
            blocks = [_result_block(r, wire_id(r.call_id), error_status) for r in turn.results]
            out.append({"role": "user", "content": blocks})  # never merged: results stand alone
        elif turn.role == "assistant":
            _append(out, "assistant", _assistant_blocks(turn, wire_id, model))
        elif turn.content.strip():  # a blank text block is refused with a 400
            _append(out, "user", [{"text": turn.content}])
    return out


def _tool_choice(
    tools: Sequence[ToolDefinition], tool_choice: ToolChoice, model: str
) -> dict[str, Any] | None:
    """``toolChoice``, or ``None`` where Converse has no form for it (``none``)."""
    choice = normalize_tool_choice(tool_choice, tools) if tools else "none"
    if choice == "none":
        log.warning("Bedrock has no tool_choice 'none'; tools stay declared, choice omitted")
        return None
    if isinstance(choice, tuple):
        if model and not supports_named_choice(model):
            raise ValueError(
                f"Bedrock model {model!r} does not accept a named tool_choice "
                "(only Anthropic Claude and Amazon Nova do); use 'required' or 'auto'"
            )
        return {"tool": {"name": wire_name(choice[1], PROVIDER)}}
    return {"auto": {}} if choice == "auto" else {"any": {}}


def _inference_config(params: SamplingParams | None) -> dict[str, Any]:
    inference: dict[str, Any] = {}
    if params is None:
        return inference
    for key, value in (
        ("maxTokens", params.max_tokens),
        ("temperature", params.temperature),
        ("topP", params.top_p),
    ):
        if value is not None:
            inference[key] = value
    if params.stop:
        inference["stopSequences"] = list(params.stop)
    if params.seed is not None:
        log.warning("Bedrock Converse has no seed parameter; not sent")
    return inference


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if not blocks:
        return
    last = out[-1] if out else None
    if last is not None and last["role"] == role:
        if not any("toolResult" in b for b in last["content"]):
            last["content"].extend(blocks)
            return
        # User text may not share the results' turn, and Converse wants alternating roles, so a
        # short assistant turn goes between (visible in the request, noted in the log).
        log.info("Bedrock: inserting an assistant turn between tool results and user text")
        out.append({"role": "assistant", "content": [{"text": RESULTS_ACK_TEXT}]})
    out.append({"role": role, "content": list(blocks)})


def _result_block(result: ToolResult, wire: str, error_status: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"toolUseId": wire}
    if result.is_error and error_status:
        block["content"] = [{"text": result.output}]
        block["status"] = "error"
    else:
        block["content"] = _content(result)
    return {"toolResult": block}


_FORMATS = {"image/jpeg": "jpeg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}
_DOCUMENTS = {"application/pdf": "pdf", "text/plain": "txt", "text/csv": "csv", "text/html": "html",
              "text/markdown": "md"}  # fmt: skip


def _content(result: ToolResult) -> list[dict[str, Any]]:
    """A ``toolResult``'s content blocks: text, image and document blocks (bytes as base64)."""
    if not result.media:
        return [{"text": result_text(result)}]
    blocks: list[dict[str, Any]] = []
    for part in result.parts:
        if isinstance(part, str):
            if part:
                blocks.append({"text": part})
        elif isinstance(part, Image):
            source = {"bytes": part.base64}
            blocks.append({"image": {"format": _FORMATS[part.media_type], "source": source}})
        else:
            name = "".join(c if c.isalnum() else "-" for c in part.name)[:200] or "document"
            document = {"format": _DOCUMENTS[part.media_type], "name": name}
            blocks.append({"document": {**document, "source": {"bytes": part.base64}}})
    return blocks


def _assistant_blocks(
    message: ChatMessage, wire_id: CallIdMapper, model: str
) -> list[dict[str, Any]]:
    return encode_assistant_parts(
        message,
        PROVIDER,
        model,
        reasoning=lambda state: {"reasoningContent": dict(state.data)},
        text=lambda text: {"text": text},
        call=lambda call: {
            "toolUse": {
                "toolUseId": wire_id(call.id),
                "name": wire_name(call.name, PROVIDER),
                "input": call.arguments,
            }
        },
        drop_blank_text=True,
    )


def _usage(data: dict[str, Any] | None) -> Usage:
    # Prompt caching reports cached tokens apart from inputTokens; they are still prompt
    # tokens (counted as Anthropic's cache_read/cache_creation tokens are).
    data = data or {}
    read = int(data.get("cacheReadInputTokens") or 0)
    written = int(data.get("cacheWriteInputTokens") or 0)
    return Usage(
        input_tokens=int(data.get("inputTokens") or 0) + read + written,
        output_tokens=int(data.get("outputTokens") or 0),
        requests=1,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def _block_into(builder: TurnBuilder, block: dict[str, Any], model: str) -> None:
    if "text" in block:
        builder.text(block["text"])
    elif "toolUse" in block:
        use = block["toolUse"]
        builder.call(make_call(use.get("toolUseId"), use.get("name", ""), use.get("input")))
    elif "reasoningContent" in block:
        content = block["reasoningContent"] or {}
        text = (content.get("reasoningText") or {}).get("text", "")
        builder.reasoning(text, ProviderState(provider=PROVIDER, model=model, data=dict(content)))


def decode_response(body: dict[str, Any], *, model: str = "") -> GenerationResult:
    """A Converse response as one turn; ``model`` tags reasoning state for replay."""
    message = (body.get("output") or {}).get("message")
    if message is None:
        raise BackendError(f"Bedrock response has no output message: {json.dumps(body)[:500]}")
    builder = TurnBuilder()
    for block in message.get("content") or []:
        _block_into(builder, block, model)
    reason = body.get("stopReason") or "end_turn"
    return builder.build(
        finish_reason=_STOP.get(reason, reason), usage=_usage(body.get("usage")), raw=body
    )


@dataclass
class _Block:
    kind: str = "text"
    text: str = ""
    signature: str = ""
    redacted: Any = None
    tool: dict[str, Any] = field(default_factory=dict)
    pieces: list[str] = field(default_factory=list)
    call_number: int | None = None
    call: Any = None


class BedrockStreamAssembler:
    """ConverseStream events (``{eventType: payload}``) to events, by ``contentBlockIndex``.

    The stream is complete at ``messageStop``; :meth:`finish` raises
    :class:`IncompleteStreamError` (with the partial turn) when it never came.
    """

    def __init__(self, *, model: str = "") -> None:
        self.model = model
        self._blocks: dict[int, _Block] = {}
        self._calls = 0
        self._stop = "end_turn"
        self._usage: dict[str, Any] = {}
        self._complete = False

    def feed(self, event: dict[str, Any]) -> list[StreamEvent]:
        for name, payload in event.items():
            if name.endswith("Exception"):
                message = (
                    (payload or {}).get("message", "") if isinstance(payload, dict) else payload
                )
                raise BackendError(f"Bedrock stream {name}: {message}")
            handler = getattr(self, f"_on_{name}", None)
            if handler is not None:
                return handler(payload or {})  # type: ignore[no-any-return]
        return []

    def _on_contentBlockStart(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = int(payload.get("contentBlockIndex", 0))
        use = (payload.get("start") or {}).get("toolUse")
        if use is None:
            return []
        self._blocks[index] = _Block(kind="tool", tool=dict(use), call_number=self._calls)
        self._calls += 1
        return [
            ToolCallStarted(
                index=self._calls - 1, name=use.get("name", ""), id=use.get("toolUseId", "")
            )
        ]

    def _on_contentBlockDelta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = int(payload.get("contentBlockIndex", 0))
        delta = payload.get("delta") or {}
        block = self._blocks.setdefault(index, _Block())
        if "text" in delta:
            block.text += delta["text"]
            return [TextDelta(text=delta["text"])]
        if "toolUse" in delta and block.call_number is not None:
            piece = (delta["toolUse"] or {}).get("input", "")
            block.pieces.append(piece)
            return [ArgumentsDelta(index=block.call_number, text=piece)] if piece else []
        if "reasoningContent" in delta:
            block.kind = "reasoning"
            content = delta["reasoningContent"] or {}
            if "text" in content:
                block.text += content["text"]
                return [ReasoningDelta(text=content["text"])]
            block.signature += content.get("signature", "")
            if "redactedContent" in content:
                block.redacted = content["redactedContent"]
        return []

    def _on_contentBlockStop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        block = self._blocks.get(int(payload.get("contentBlockIndex", 0)))
        return self._close(block) if block is not None else []

    def _close(self, block: _Block) -> list[StreamEvent]:
        if block.call_number is None or block.call is not None:
            return []
        block.call = make_call(
            block.tool.get("toolUseId"), block.tool.get("name", ""), "".join(block.pieces)
        )
        return [ToolCallFinished(index=block.call_number, call=block.call)]

    def _on_messageStop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self._complete = True
        self._stop = payload.get("stopReason") or self._stop
        if self._stop in ("malformed_tool_use", "malformed_model_output"):
            return [ParseError(message=f"the model produced a malformed tool call ({self._stop})")]
        return []

    def _on_metadata(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self._usage = payload.get("usage") or self._usage
        return []

    def finish(self) -> tuple[list[StreamEvent], GenerationResult]:
        events: list[StreamEvent] = []
        builder = TurnBuilder()
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.kind == "tool":
                events.extend(self._close(block))
                builder.call(block.call)
            elif block.kind == "reasoning":
                data: dict[str, Any] = {}
                if block.redacted is not None:
                    data["redactedContent"] = block.redacted
                else:
                    data["reasoningText"] = {"text": block.text, "signature": block.signature}
                builder.reasoning(
                    block.text, ProviderState(provider=PROVIDER, model=self.model, data=data)
                )
            else:
                builder.text(block.text)
        result = builder.build(
            finish_reason=_STOP.get(self._stop, self._stop), usage=_usage(self._usage)
        )
        if not self._complete:
            raise cut_short(result, "messageStop")
        return events, result
