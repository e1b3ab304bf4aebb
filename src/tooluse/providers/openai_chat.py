"""OpenAI Chat Completions wire adapter (also vLLM, llama.cpp server, Ollama ``/v1``, Mistral).

Pure functions: :func:`encode_request` builds the JSON body, :func:`decode_response` reads a
completion, :class:`ChatStreamAssembler` turns streamed chunks into events and one turn.
Rules: one ``tool`` message per result in call order; arguments sent as a JSON string; failed
results keep an ``Error:`` prefix (the wire has no error flag); reasoning state is not sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage, new_call_id
from tooluse.providers.base import GenerationResult, SamplingParams, ToolChoice
from tooluse.providers.call_ids import CallIdMapper, IdStyle
from tooluse.providers.turn_builder import TurnBuilder, make_call
from tooluse.providers.wire_common import (
    SSE_DONE,
    ResultBatch,
    cut_short,
    group_turns,
    normalize_tool_choice,
    tool_schema,
    wire_name,
)
from tooluse.tools.definition import ToolDefinition

__all__ = ["DIALECT", "ChatStreamAssembler", "decode_response", "encode_request", "result_text"]

#: The schema dialect of this wire (tool definitions and tool names).
DIALECT = "openai"

_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def result_text(result: ToolResult) -> str:
    """A result's text for wires without an error flag: failures always start with ``Error:``."""
    if result.is_error and not result.output.lower().startswith("error"):
        return f"Error: {result.output}"
    return result.output


def encode_request(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition] = (),
    params: SamplingParams | None = None,
    tool_choice: ToolChoice = "auto",
    *,
    model: str = "",
    strict: bool = False,
    id_style: IdStyle = "openai",
    empty_content: str | None = None,
) -> dict[str, Any]:
    """The Chat Completions request body.

    ``empty_content`` is what an assistant turn with tool calls and no text sends as
    ``content``: ``None`` (JSON null, as OpenAI documents) or ``""`` for compatible servers
    whose schema wants a string (llama-cpp-python's server answers null with HTTP 500).
    """
    wire_id = CallIdMapper(id_style)
    out: list[dict[str, Any]] = []
    for turn in group_turns(messages, keep_system=True):
        if isinstance(turn, ResultBatch):
            out.extend(
                {"role": "tool", "tool_call_id": wire_id(r.call_id), "content": result_text(r)}
                for r in turn.results
            )
            media = _media_message(turn.results, wire_id)
            if media is not None:
                out.append(media)
        elif turn.role == "assistant":
            out.append(_assistant(turn, wire_id, empty_content))
        else:
            entry: dict[str, Any] = {"role": turn.role, "content": turn.content}
            if turn.name and turn.role == "user":
                entry["name"] = turn.name
            out.append(entry)
    body: dict[str, Any] = {"messages": out}
    if model:
        body["model"] = model
    if tools:
        body["tools"] = [tool_schema(t, "openai", strict=strict) for t in tools]
        choice = normalize_tool_choice(tool_choice, tools)
        body["tool_choice"] = (
            {"type": "function", "function": {"name": wire_name(choice[1], DIALECT)}}
            if isinstance(choice, tuple)
            else choice
        )
    _apply_params(body, params, bool(tools), model)
    return body


def _media_message(results: Sequence[ToolResult], wire_id: CallIdMapper) -> dict[str, Any] | None:
    """Tool messages take text only: the images and files that results returned follow them
    in one user message, each introduced by the call it answers (the documented way)."""
    content: list[dict[str, Any]] = []
    for result in results:
        if not result.media:
            continue
        content.append(
            {
                "type": "text",
                "text": f"The result of {result.tool_name} ({wire_id(result.call_id)}):",
            }
        )
        for part in result.media:
            if isinstance(part, Image):
                content.append({"type": "image_url", "image_url": {"url": part.data_url}})
            else:
                content.append(
                    {"type": "file", "file": {"filename": part.name, "file_data": part.data_url}}
                )
    return {"role": "user", "content": content} if content else None


def _assistant(
    message: ChatMessage, wire_id: CallIdMapper, empty_content: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": "assistant", "content": message.content or empty_content}
    if message.tool_calls:
        entry["tool_calls"] = [
            {
                "id": wire_id(call.id),
                "type": "function",
                "function": {
                    "name": wire_name(call.name, DIALECT),
                    "arguments": call.arguments_json(),
                },
            }
            for call in message.tool_calls
        ]
    return entry


def _uses_completion_tokens(model: str) -> bool:
    # OpenAI reasoning models reject max_tokens; compatible servers only know max_tokens.
    return model.startswith(("o1", "o3", "o4", "gpt-5"))


def _apply_params(
    body: dict[str, Any], params: SamplingParams | None, has_tools: bool, model: str
) -> None:
    if params is None:
        return
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if params.max_tokens is not None:
        key = "max_completion_tokens" if _uses_completion_tokens(model) else "max_tokens"
        body[key] = params.max_tokens
    if params.top_p is not None:
        body["top_p"] = params.top_p
    if params.stop:
        body["stop"] = list(params.stop)
    if params.seed is not None:
        body["seed"] = params.seed
    if params.parallel_tool_calls is not None and has_tools:
        body["parallel_tool_calls"] = params.parallel_tool_calls
    body.update(params.extra)


def _usage(data: dict[str, Any] | None) -> Usage:
    data = data or {}
    details = data.get("prompt_tokens_details") or {}  # cached tokens are part of the prompt's
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        requests=1,
        cache_read_tokens=int(details.get("cached_tokens") or 0),
        cache_write_tokens=int(details.get("cache_write_tokens") or 0),
    )


def decode_response(body: dict[str, Any]) -> GenerationResult:
    """A Chat Completions response body as one turn."""
    choices = body.get("choices")
    if not choices:
        detail = body.get("error") or body
        raise BackendError(f"response has no choices: {json.dumps(detail)[:500]}")
    choice = choices[0]
    message = choice.get("message") or {}
    builder = TurnBuilder()
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str):
        builder.reasoning(reasoning)
    content = message.get("content")
    if isinstance(content, list):  # some compatible servers send content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    builder.text(content or "")
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        builder.text(refusal)  # the model's refusal is what the user gets to read
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        builder.call(
            make_call(call.get("id"), function.get("name") or "", function.get("arguments"))
        )
    finish = _FINISH.get(
        choice.get("finish_reason") or "stop", choice.get("finish_reason") or "stop"
    )
    if isinstance(refusal, str) and refusal:
        finish = "refusal"
    return builder.build(finish_reason=finish, usage=_usage(body.get("usage")), raw=body)


@dataclass
class _Slot:
    position: int
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    started: bool = False
    synthetic: bool = False


class ChatStreamAssembler:
    """Streamed chunks to events; calls are assembled by ``index``.

    When ``index`` is missing or repeated for a new call (some servers send 0 for every call),
    a fragment carrying a new id starts a new call. The stream is complete once the HTTP layer
    has fed ``{"type": "[DONE]"}`` (for ``data: [DONE]``), or once every choice it saw has its
    ``finish_reason`` and, when ``expect_usage`` (the request asked for
    ``stream_options.include_usage``), the usage chunk has arrived: some OpenAI-compatible
    servers never send ``[DONE]``, and the official SDK accepts such streams too. Otherwise
    :meth:`finish` raises :class:`IncompleteStreamError`. Chunks read through an SDK that hides
    all of this can be finished with ``finish(complete=True)``.
    """

    def __init__(self, *, expect_usage: bool = False) -> None:
        self._expect_usage = expect_usage
        self._usage_seen = False
        self._choices: set[int] = set()
        self._finished: set[int] = set()
        self._builder = TurnBuilder()
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}
        self._finish = "stop"
        self._usage = Usage(requests=1)
        self._refused = False
        self._done = False

    def feed(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if chunk.get("type") == SSE_DONE:
            self._done = True
            return events
        if chunk.get("usage"):
            self._usage = _usage(chunk["usage"])
            self._usage_seen = True
        if chunk.get("error"):
            raise BackendError(f"stream error: {json.dumps(chunk['error'])[:500]}")
        for choice in chunk.get("choices") or []:
            number = choice.get("index", 0)
            self._choices.add(number)
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._builder.reasoning(reasoning)
                events.append(ReasoningDelta(text=reasoning))
            for key in ("content", "refusal"):
                if isinstance(delta.get(key), str) and delta[key]:
                    self._refused = self._refused or key == "refusal"
                    self._builder.text(delta[key])
                    events.append(TextDelta(text=delta[key]))
            for fragment in delta.get("tool_calls") or []:
                events.extend(self._fragment(fragment))
            if choice.get("finish_reason"):
                reason = choice["finish_reason"]
                self._finish = _FINISH.get(reason, reason)
                self._finished.add(number)
        return events

    @property
    def complete(self) -> bool:
        """Whether the stream has ended properly (see the class docstring)."""
        if self._done:
            return True
        every_choice = bool(self._choices) and self._choices <= self._finished
        return every_choice and (self._usage_seen or not self._expect_usage)

    def _fragment(self, fragment: dict[str, Any]) -> list[StreamEvent]:
        index = fragment.get("index")
        new_id = fragment.get("id")
        slot = self._by_index.get(index) if isinstance(index, int) else None
        if slot is None and index is None and self._slots and not new_id:
            slot = self._slots[-1]
        if slot is not None and new_id and slot.id and new_id != slot.id:
            slot = None  # a repeated index with a new id is a new call
        if slot is None:
            slot = _Slot(position=self._builder.slot())
            self._slots.append(slot)
            if isinstance(index, int):
                self._by_index[index] = slot
        function = fragment.get("function") or {}
        if new_id:
            slot.id = new_id
        name = function.get("name")
        # OpenAI sends the name once; llama-cpp-python's server repeats it in every fragment.
        if name and name != slot.name:
            slot.name += name
        events: list[StreamEvent] = []
        number = self._slots.index(slot)
        if not slot.started and slot.name:
            slot.started = True
            if not slot.id:  # minted now so that the started and finished events agree
                slot.id, slot.synthetic = new_call_id(), True
            events.append(ToolCallStarted(index=number, name=slot.name, id=slot.id or ""))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        if arguments:
            slot.arguments.append(arguments)
            events.append(ArgumentsDelta(index=number, text=arguments))
        return events

    def finish(self, *, complete: bool = False) -> tuple[list[StreamEvent], GenerationResult]:
        """The closing events (one ``ToolCallFinished`` per call) and the whole turn.

        Raises :class:`IncompleteStreamError` (with the partial turn) when the stream did not end
        properly (:attr:`complete`), unless ``complete`` says it is known to have.
        """
        events: list[StreamEvent] = []
        for number, slot in enumerate(self._slots):
            call: ToolCall = make_call(slot.id, slot.name, "".join(slot.arguments))
            if slot.synthetic:
                call = replace(call, synthetic_id=True)
            self._builder.fill(slot.position, call)
            events.append(ToolCallFinished(index=number, call=call))
        finish = "refusal" if self._refused else self._finish
        result = self._builder.build(finish_reason=finish, usage=self._usage)
        if not (self.complete or complete):
            missing = "its usage chunk" if self._choices <= self._finished else "[DONE]"
            raise cut_short(result, missing)
        return events, result
