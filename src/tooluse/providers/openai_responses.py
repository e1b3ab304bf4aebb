"""OpenAI Responses API wire adapter.

Calls are ``function_call`` items (``call_id`` pairs them with ``function_call_output`` items;
the item ``id`` starts with ``fc_`` and is replayed only when it came from OpenAI). Reasoning
items and output messages (``msg_...`` ids) are kept whole as provider state and replayed, in
their original position, only to the same provider and model: reasoning models reject a call
replayed without its reasoning item, and a reasoning item replayed without the item that
followed it ("reasoning provided without its required following item"). So a reasoning item
goes back only when the next item goes back with its original id; otherwise it is left out.
A hosted tool search's ``tool_search_call`` / ``tool_search_output`` items are kept and replayed
the same way (see :mod:`tooluse.providers.tool_loading` for deferred tools).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
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
from tooluse.messages import ChatMessage, ProviderState, TextPart, ToolCall, ToolResult, Usage
from tooluse.providers.base import GenerationResult, SamplingParams, ToolChoice
from tooluse.providers.call_ids import CallIdMapper
from tooluse.providers.code_execution import (
    RESPONSES_PROGRAM_ITEMS,
    responses_call_caller,
    responses_programs,
    with_responses_callers,
)
from tooluse.providers.openai_chat import result_text
from tooluse.providers.tool_loading import RESPONSES_SEARCH_ITEMS, responses_tools
from tooluse.providers.turn_builder import TurnBuilder, make_call
from tooluse.providers.wire_common import (
    ResultBatch,
    cut_short,
    encode_assistant_parts,
    group_turns,
    log,
    normalize_tool_choice,
    replayable,
    tool_schema,
    wire_name,
)
from tooluse.tools.definition import ToolDefinition

__all__ = ["DIALECT", "PROVIDER", "ResponsesStreamAssembler", "decode_response", "encode_request"]

PROVIDER = "openai"
#: The schema dialect of this wire (tool definitions and tool names).
DIALECT = "openai_responses"
# Provider state replayed as the item it was, and the items a reasoning item may precede.
_REPLAYED_ITEMS = frozenset({"reasoning", *RESPONSES_SEARCH_ITEMS, *RESPONSES_PROGRAM_ITEMS})
_FOLLOWING_ITEMS = frozenset(
    {"message", "function_call", *RESPONSES_SEARCH_ITEMS, *RESPONSES_PROGRAM_ITEMS}
)


def encode_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition] = (),
    params: SamplingParams | None = None,
    tool_choice: ToolChoice = "auto",
    *,
    model: str = "",
    strict: bool = False,
) -> dict[str, Any]:
    """The Responses request body (stateless: the whole history goes in ``input``)."""
    items = _input_items(messages, CallIdMapper("openai"), model)
    body: dict[str, Any] = {"input": items}
    if model:
        body["model"] = model
    if tools:
        schemas = [tool_schema(t, "openai_responses", strict=strict) for t in tools]
        body["tools"] = with_responses_callers(
            responses_tools(schemas, tools, params), tools, params
        )
        choice = normalize_tool_choice(tool_choice, tools)
        body["tool_choice"] = (
            {"type": "function", "name": wire_name(choice[1], DIALECT)}
            if isinstance(choice, tuple)
            else choice
        )
    if params is not None:
        if params.temperature is not None:
            body["temperature"] = params.temperature
        if params.max_tokens is not None:
            body["max_output_tokens"] = params.max_tokens
        if params.top_p is not None:
            body["top_p"] = params.top_p
        if params.parallel_tool_calls is not None and tools:
            body["parallel_tool_calls"] = params.parallel_tool_calls
        if params.stop or params.seed is not None:
            log.warning("the Responses API has no stop sequences or seed; not sent")
        body.update(params.extra)
    return body


def _input_items(
    messages: Sequence[ChatMessage], wire_id: CallIdMapper, model: str
) -> list[dict[str, Any]]:
    """The history as ``input`` items."""
    items: list[dict[str, Any]] = []
    callers: dict[str, dict[str, Any]] = {}  # a program's calls: their results name it too
    for turn in group_turns(messages, keep_system=True):
        if isinstance(turn, ResultBatch):
            for r in turn.results:
                output: dict[str, Any] = {
                    "type": "function_call_output",
                    "call_id": wire_id(r.call_id),
                    "output": _output(r),
                }
                if r.call_id in callers:
                    output["caller"] = callers[r.call_id]
                items.append(output)
        elif turn.role == "assistant":
            for call in turn.tool_calls:
                state = replayable(call.state, PROVIDER, model)
                if state is not None and isinstance(state.data.get("caller"), dict):
                    callers[call.id] = dict(state.data["caller"])
            items.extend(_assistant_items(turn, wire_id, model))
        else:
            items.append({"role": turn.role, "content": turn.content})
    return items


def _output(result: ToolResult) -> str | list[dict[str, Any]]:
    """A result's ``output``: its text, or input parts when it holds images or files."""
    if not result.media:
        return result_text(result)
    parts: list[dict[str, Any]] = []
    for part in result.parts:
        if isinstance(part, str):
            parts.append({"type": "input_text", "text": part})
        elif isinstance(part, Image):
            parts.append({"type": "input_image", "image_url": part.data_url, "detail": "auto"})
        else:
            parts.append({"type": "input_file", "filename": part.name, "file_data": part.data_url})
    return parts


def _assistant_items(
    message: ChatMessage, wire_id: CallIdMapper, model: str
) -> list[dict[str, Any]]:
    def call_item(call: ToolCall) -> dict[str, Any]:
        item: dict[str, Any] = {
            "type": "function_call",
            "call_id": wire_id(call.id),
            "name": wire_name(call.name, DIALECT),
            "arguments": call.arguments_json(),
        }
        state = replayable(call.state, PROVIDER, model)
        if state is not None and str(state.data.get("item_id", "")).startswith("fc"):
            item["id"] = state.data["item_id"]
        if state is not None and isinstance(state.data.get("caller"), dict):
            item["caller"] = dict(state.data["caller"])  # a call a program made
        return item

    items: list[dict[str, Any]] = []
    for part in message.ordered_parts():
        # One part at a time, so that a text part can go back as its original output message.
        if isinstance(part, TextPart):
            state = replayable(part.state, PROVIDER, model)
            original = state.data if state is not None else {}
            if original.get("type") == "message" and _message_text(original) == part.text:
                items.append(_replayed_message(original))
                continue
        items.extend(
            encode_assistant_parts(
                replace(message, parts=(part,)),
                PROVIDER,
                model,
                # only whole reasoning, tool search and program items go back
                reasoning=lambda state: (
                    dict(state.data) if state.data.get("type") in _REPLAYED_ITEMS else None
                ),
                text=lambda text: {"role": "assistant", "content": text},
                call=call_item,
            )
        )
    return _with_following_items(items)


def _replayed_message(original: dict[str, Any]) -> dict[str, Any]:
    """An output message item as input: the SDK's ``ResponseOutputMessageParam`` requires its
    ``status`` and a list of ``output_text`` / ``refusal`` parts (a string content, as some
    servers send, becomes one part)."""
    item = dict(original)
    item.setdefault("status", "completed")
    content = item.get("content")
    if isinstance(content, str):
        item["content"] = [{"type": "output_text", "text": content, "annotations": []}]
    elif isinstance(content, list):
        item["content"] = [_output_part(part) for part in content]
    return item


def _output_part(part: Any) -> Any:
    if isinstance(part, dict) and part.get("type") == "output_text" and "annotations" not in part:
        return {**part, "annotations": []}
    return part


def _message_text(item: dict[str, Any]) -> str:
    """The visible text of an output message item (its output_text and refusal parts)."""
    if isinstance(item.get("content"), str):
        return str(item["content"])
    texts = []
    for content in item.get("content") or []:
        if content.get("type") == "output_text":
            texts.append(content.get("text") or "")
        elif content.get("type") == "refusal":
            texts.append(content.get("refusal") or "")
    return "".join(texts)


def _with_following_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` without the reasoning items whose following item lost its original id.

    The items after a dropped reasoning item (up to the next reasoning item) lose their ids
    too: an item sent with its id must come with the reasoning item that produced it.
    """
    kept: list[dict[str, Any]] = []
    orphaned = False
    for i, item in enumerate(items):
        if item.get("type") == "reasoning":
            follower = next((x for x in items[i + 1 :] if x.get("type") != "reasoning"), None)
            orphaned = follower is None or not (
                follower.get("type") in _FOLLOWING_ITEMS and follower.get("id")
            )
            if orphaned:
                log.info(
                    "Responses: reasoning item %s left out: the item that followed it is not "
                    "replayed with its original id",
                    item.get("id"),
                )
                continue
        elif orphaned and "id" in item:
            item = {k: v for k, v in item.items() if k != "id"}
        kept.append(item)
    return kept


def _usage(data: dict[str, Any] | None) -> Usage:
    data = data or {}
    details = data.get("input_tokens_details") or {}  # cached tokens are part of input_tokens
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
        requests=1,
        cache_read_tokens=int(details.get("cached_tokens") or 0),
        cache_write_tokens=int(details.get("cache_write_tokens") or 0),
    )


def _finish(body: dict[str, Any]) -> str:
    if body.get("status") == "incomplete":
        reason = (body.get("incomplete_details") or {}).get("reason", "")
        return "length" if reason == "max_output_tokens" else reason or "length"
    return "stop"


def decode_response(body: dict[str, Any], *, model: str = "") -> GenerationResult:
    """A Responses body as one turn; ``model`` tags the reasoning state for replay."""
    if body.get("error"):
        raise BackendError(f"response failed: {json.dumps(body['error'])[:500]}")
    if "output" not in body:
        raise BackendError(f"response has no output: {json.dumps(body)[:500]}")
    builder = TurnBuilder()
    refused = False
    for item in body.get("output") or []:
        kind = item.get("type")
        if kind == "reasoning":
            summary = "".join(s.get("text", "") for s in item.get("summary") or [])
            data = {k: v for k, v in item.items() if k != "status"}
            builder.reasoning(summary, ProviderState(provider=PROVIDER, model=model, data=data))
        elif kind == "message":
            data = dict(item)  # the status too: replayed, the item must carry it
            # Kept whole: a reasoning item must be replayed followed by this very message.
            state = ProviderState(provider=PROVIDER, model=model, data=data)
            builder.text(_message_text(item), state if item.get("id") else None)
            parts = item.get("content")
            parts = parts if isinstance(parts, list) else []
            refused = refused or any(c.get("type") == "refusal" for c in parts)
        elif kind in RESPONSES_SEARCH_ITEMS or kind in RESPONSES_PROGRAM_ITEMS:
            # replayed whole: the tools a search loaded stay loaded, a program goes on
            builder.reasoning("", ProviderState(provider=PROVIDER, model=model, data=dict(item)))
        elif kind == "function_call":
            builder.call(_call(item, model))
    finish = _finish(body)
    if refused and finish == "stop":
        finish = "refusal"  # as for Chat Completions: the refusal is the text
    result = builder.build(finish_reason=finish, usage=_usage(body.get("usage")), raw=body)
    programs = responses_programs(body.get("output") or [])
    return replace(result, programs=programs) if programs else result


def _call(item: dict[str, Any], model: str) -> ToolCall:
    """A ``function_call`` item as a call (with the program that made it, if any)."""
    caller, replay = responses_call_caller(item)
    data = {"item_id": item.get("id"), **replay}
    state = ProviderState(provider=PROVIDER, model=model, data=data)
    call = make_call(item.get("call_id"), item.get("name", ""), item.get("arguments"), state)
    return replace(call, caller=caller) if caller else call


class ResponsesStreamAssembler:
    """Responses stream events to tooluse events; the final turn comes from ``response.completed``.

    A stream without ``response.completed`` or ``response.incomplete`` is cut short:
    :meth:`finish` raises :class:`IncompleteStreamError` with the items that were done.
    """

    def __init__(self, *, model: str = "") -> None:
        self.model = model
        self._call_numbers: dict[int, int] = {}
        self._done_items: dict[int, dict[str, Any]] = {}
        # Items still being written, for the partial turn of a stream that is cut short.
        self._open_items: dict[int, dict[str, Any]] = {}
        self._final: dict[str, Any] | None = None

    def feed(self, event: dict[str, Any]) -> list[StreamEvent]:
        kind = event.get("type", "")
        index = event.get("output_index")
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if isinstance(index, int):
                self._open_items[index] = dict(item)
            if item.get("type") == "function_call" and isinstance(index, int):
                number = self._call_numbers.setdefault(index, len(self._call_numbers))
                return [
                    ToolCallStarted(
                        index=number, name=item.get("name", ""), id=item.get("call_id", "")
                    )
                ]
        elif kind == "response.output_text.delta":
            if isinstance(index, int) and index in self._open_items:
                item = self._open_items[index]
                text = (item.get("content") or [{}])[-1].get("text", "") + event.get("delta", "")
                item["content"] = [{"type": "output_text", "text": text}]
            return [TextDelta(text=event.get("delta", ""))]
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [ReasoningDelta(text=event.get("delta", ""))]
        elif kind == "response.function_call_arguments.delta" and index in self._call_numbers:
            assert isinstance(index, int)  # only int indexes are numbered
            if index in self._open_items:
                item = self._open_items[index]
                item["arguments"] = (item.get("arguments") or "") + event.get("delta", "")
            return [ArgumentsDelta(index=self._call_numbers[index], text=event.get("delta", ""))]
        elif kind == "response.output_item.done" and isinstance(index, int):
            item = event.get("item") or {}
            self._done_items[index] = item
            if item.get("type") == "function_call":
                number = self._call_numbers.setdefault(index, len(self._call_numbers))
                return [ToolCallFinished(index=number, call=_call(item, self.model))]
        elif kind in ("response.completed", "response.incomplete"):
            self._final = event.get("response") or {}
        elif kind in ("response.failed", "error"):
            detail = (event.get("response") or {}).get("error") or event
            raise BackendError(f"response failed: {json.dumps(detail)[:500]}")
        return []

    def finish(self) -> tuple[list[StreamEvent], GenerationResult]:
        body = self._final
        if body is None or not body.get("output"):
            items = {**self._open_items, **self._done_items}
            body = {**(body or {}), "output": [items[i] for i in sorted(items)]}
        result = decode_response(body, model=self.model)
        if self._final is None:
            raise cut_short(result, "response.completed")
        return [], result
