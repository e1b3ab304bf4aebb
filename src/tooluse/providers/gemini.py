"""Google Gemini ``generateContent`` wire adapter.

Rules: the assistant role is ``model``; all results of one turn go in one ``user`` Content,
one ``functionResponse`` per call in call order, ``response`` always an object (``{"output": ...}``
or ``{"error": ...}``), and the call ``id`` echoed only when Gemini sent one (minted ids are
never sent); ``thoughtSignature``s are replayed on the part they came with, only to Gemini and
the same model; a named ``tool_choice`` is mode ``ANY`` with ``allowedFunctionNames``; the
finish reason is ``STOP`` even with calls, so a tool turn is recognised from its parts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tooluse.errors import BackendError
from tooluse.events import (
    ParseError,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from tooluse.messages import ChatMessage, ProviderState, ReasoningPart, TextPart, ToolResult, Usage
from tooluse.providers.base import GenerationResult, SamplingParams, ToolChoice
from tooluse.providers.call_ids import CallIdMapper
from tooluse.providers.turn_builder import TurnBuilder, make_call
from tooluse.providers.wire_common import (
    ResultBatch,
    cut_short,
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

__all__ = ["DIALECT", "PROVIDER", "GeminiStreamAssembler", "decode_response", "encode_request"]

PROVIDER = "gemini"
#: The schema dialect of this wire (tool definitions and tool names).
DIALECT = PROVIDER

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "MALFORMED_FUNCTION_CALL": "malformed_tool_call",
    "UNEXPECTED_TOOL_CALL": "unexpected_tool_call",
    "TOO_MANY_TOOL_CALLS": "too_many_tool_calls",
}


def encode_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition] = (),
    params: SamplingParams | None = None,
    tool_choice: ToolChoice = "auto",
    *,
    model: str = "",
    strict: bool = False,
) -> dict[str, Any]:
    """The generateContent request body (the model goes in the URL, not the body).

    ``strict`` turns ``auto`` into mode ``VALIDATED`` (calls constrained to their schemas).
    """
    body: dict[str, Any] = {"contents": _contents(messages, model)}
    system = system_text(messages)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    declared = tools_for_history(messages, tools)
    if declared:
        body["tools"] = [{"functionDeclarations": [tool_schema(t, "gemini") for t in declared]}]
        config = _calling_config(tools, tool_choice, strict)
        body["toolConfig"] = {"functionCallingConfig": config}
    generation = _generation_config(params)
    if generation:
        body["generationConfig"] = generation
    if params is not None:
        body.update(params.extra)
    return body


def _contents(messages: Sequence[ChatMessage], model: str) -> list[dict[str, Any]]:
    wire_id = CallIdMapper("gemini")
    contents: list[dict[str, Any]] = []
    for turn in group_turns(messages):
        if isinstance(turn, ResultBatch):
            synthetic = {c.id for c in turn.calls if c.synthetic_id}
            parts = [_response_part(r, wire_id, r.call_id in synthetic) for r in turn.results]
            parts += [part for r in turn.results for part in _media_parts(r)]
            _append(contents, "user", parts)
        elif turn.role == "assistant":
            _append(contents, "model", _model_parts(turn, wire_id, model))
        elif turn.content:
            _append(contents, "user", [{"text": turn.content}])
    return contents


def _calling_config(
    tools: Sequence[ToolDefinition], tool_choice: ToolChoice, strict: bool
) -> dict[str, Any]:
    """``functionCallingConfig``: tools declared for the history only get mode ``NONE``."""
    if not tools:
        return {"mode": "NONE"}
    choice = normalize_tool_choice(tool_choice, tools)
    if isinstance(choice, tuple):
        return {"mode": "ANY", "allowedFunctionNames": [wire_name(choice[1], PROVIDER)]}
    auto = "VALIDATED" if strict else "AUTO"
    return {"mode": {"auto": auto, "required": "ANY", "none": "NONE"}[choice]}


def _generation_config(params: SamplingParams | None) -> dict[str, Any]:
    generation: dict[str, Any] = {}
    if params is None:
        return generation
    for key, value in (
        ("temperature", params.temperature),
        ("maxOutputTokens", params.max_tokens),
        ("topP", params.top_p),
        ("seed", params.seed),
    ):
        if value is not None:
            generation[key] = value
    if params.stop:
        generation["stopSequences"] = list(params.stop)
    if params.parallel_tool_calls is False:
        log.info("Gemini has no switch for parallel tool calls; every call is still answered")
    return generation


def _append(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": list(parts)})


def _response_part(result: ToolResult, wire_id: CallIdMapper, synthetic: bool) -> dict[str, Any]:
    response = {"error": result.output} if result.is_error else {"output": result.output}
    payload: dict[str, Any] = {"name": wire_name(result.tool_name, PROVIDER), "response": response}
    if not synthetic:
        payload["id"] = wire_id(result.call_id)
    return {"functionResponse": payload}


def _media_parts(result: ToolResult) -> list[dict[str, Any]]:
    """Images and files a result returned, as ``inlineData`` parts after its response."""
    return [{"inlineData": {"mimeType": p.media_type, "data": p.base64}} for p in result.media]


def _signature(state: ProviderState | None, model: str) -> str | None:
    kept = replayable(state, PROVIDER, model)
    return kept.data.get("thoughtSignature") if kept is not None else None


def _model_parts(message: ChatMessage, wire_id: CallIdMapper, model: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in message.ordered_parts():
        signature = _signature(part.state, model)
        if isinstance(part, ReasoningPart):
            if signature:  # thought text alone need not go back; its signature must
                parts.append({"text": part.text, "thought": True, "thoughtSignature": signature})
            continue
        if isinstance(part, TextPart):
            out: dict[str, Any] = {"text": part.text}
        else:
            call: dict[str, Any] = {"name": wire_name(part.name, PROVIDER), "args": part.arguments}
            if not part.synthetic_id:
                call["id"] = wire_id(part.id)
            out = {"functionCall": call}
        if signature:
            out["thoughtSignature"] = signature
        parts.append(out)
    return parts


def _usage(data: dict[str, Any] | None) -> Usage:
    data = data or {}
    output = int(data.get("candidatesTokenCount") or 0) + int(data.get("thoughtsTokenCount") or 0)
    return Usage(
        input_tokens=int(data.get("promptTokenCount") or 0),
        output_tokens=output,
        requests=1,
        cache_read_tokens=int(data.get("cachedContentTokenCount") or 0),  # part of the prompt's
    )


def _part_into(builder: TurnBuilder, part: dict[str, Any], model: str) -> list[StreamEvent]:
    """Adds one response part to the turn; returns its stream events."""
    signature = part.get("thoughtSignature")
    state = (
        ProviderState(provider=PROVIDER, model=model, data={"thoughtSignature": signature})
        if signature
        else None
    )
    # SDKs serialise unset fields as explicit nulls ({"functionCall": null, "text": "hi"}),
    # so a field counts only when it holds a value.
    fc = part.get("functionCall")
    if isinstance(fc, dict) and fc.get("name"):
        call = make_call(fc.get("id"), fc["name"], fc.get("args"), state)
        builder.call(call)
        number = len(builder.calls) - 1
        return [
            ToolCallStarted(index=number, name=call.name, id=call.id),
            ToolCallFinished(index=number, call=call),
        ]
    if fc:  # a call without a name is nothing that could be run or answered
        log.warning("Gemini sent a functionCall without a name; ignored: %s", fc)
    text = part.get("text")
    if not isinstance(text, str):
        text = None
    if text is None and (state is None or fc):
        return []
    if part.get("thought"):
        builder.reasoning(text or "", state)
        return [ReasoningDelta(text=text)] if text else []
    builder.text(text or "", state)
    return [TextDelta(text=text)] if text else []


def _check(body: dict[str, Any]) -> None:
    if body.get("error"):
        raise BackendError(f"Gemini error: {json.dumps(body['error'])[:500]}")


def decode_response(body: dict[str, Any], *, model: str = "") -> GenerationResult:
    """A generateContent response as one turn; ``model`` tags thought signatures for replay."""
    _check(body)
    builder = TurnBuilder()
    candidates = body.get("candidates") or []
    if not candidates:
        blocked = (body.get("promptFeedback") or {}).get("blockReason")
        return builder.build(
            finish_reason="content_filter" if blocked else "stop",
            usage=_usage(body.get("usageMetadata")),
            raw=body,
        )
    candidate = candidates[0]
    for part in (candidate.get("content") or {}).get("parts") or []:
        _part_into(builder, part, model)
    reason = candidate.get("finishReason") or "STOP"
    return builder.build(
        finish_reason=_FINISH.get(reason, reason.lower()),
        usage=_usage(body.get("usageMetadata")),
        raw=body,
    )


class GeminiStreamAssembler:
    """Gemini stream chunks (each a partial response; calls arrive whole) to events.

    The stream is complete once a candidate carries its ``finishReason`` (or the prompt was
    blocked); :meth:`finish` raises :class:`IncompleteStreamError` otherwise.
    """

    def __init__(self, *, model: str = "") -> None:
        self.model = model
        self._builder = TurnBuilder()
        self._usage: dict[str, Any] = {}
        self._finish = "STOP"
        self._complete = False

    def feed(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        _check(chunk)
        events: list[StreamEvent] = []
        if chunk.get("usageMetadata"):
            self._usage = chunk["usageMetadata"]  # cumulative
        if (chunk.get("promptFeedback") or {}).get("blockReason"):
            self._finish, self._complete = "SAFETY", True
        for candidate in (chunk.get("candidates") or [])[:1]:
            for part in (candidate.get("content") or {}).get("parts") or []:
                events.extend(_part_into(self._builder, part, self.model))
            if candidate.get("finishReason"):
                self._finish = candidate["finishReason"]
                self._complete = True
                if self._finish == "MALFORMED_FUNCTION_CALL":
                    events.append(
                        ParseError(
                            message="the model produced a malformed function call",
                            raw=candidate.get("finishMessage", ""),
                        )
                    )
        return events

    def finish(self) -> tuple[list[StreamEvent], GenerationResult]:
        reason = _FINISH.get(self._finish, self._finish.lower())
        result = self._builder.build(finish_reason=reason, usage=_usage(self._usage))
        if not self._complete:
            raise cut_short(result, "finishReason")
        return [], result
