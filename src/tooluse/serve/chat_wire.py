"""The OpenAI Chat Completions shape, server side: pure decoding of requests and encoding of
responses, stream chunks and errors.

:func:`decode_chat_request` turns the JSON body a client sends into tooluse messages, tool
definitions and options, accepting what real clients send (``content: null`` or ``""`` on
assistant tool-call turns, content as a list of parts, ``tool`` messages with or without
``name``, the ``developer`` role, unknown fields). Problems raise :class:`RequestError`, which
carries OpenAI's error shape and HTTP status.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tooluse.errors import HistoryError, ToolDefinitionError
from tooluse.events import ArgumentsDelta, StreamEvent, TextDelta, ToolCallStarted
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage
from tooluse.providers.base import GenerationResult, SamplingParams, ToolChoice
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ChatRequest",
    "RequestError",
    "chunk",
    "decode_chat_request",
    "encode_chat_completion",
    "error_body",
    "finish_reason",
    "stream_delta",
    "usage_body",
]

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
_FINISH = {"stop", "length", "tool_calls", "content_filter"}


class RequestError(Exception):
    """A request the server refuses, with OpenAI's error ``type``/``code`` and HTTP status."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return error_body(self.message, type=self.type, param=self.param, code=self.code)


def error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """OpenAI's JSON error shape."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


@dataclass(frozen=True, kw_only=True)
class ChatRequest:
    """A decoded Chat Completions request."""

    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice = "auto"
    params: SamplingParams = field(default_factory=SamplingParams)
    stream: bool = False
    include_usage: bool = False
    #: ``response_format`` json_schema: (name, schema); answered through a forced tool call.
    response_schema: tuple[str, dict[str, Any]] | None = None


def decode_chat_request(body: Any) -> ChatRequest:
    """The request a client sent, checked; raises :class:`RequestError` on anything invalid."""
    if not isinstance(body, Mapping):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError("'model' is required and must be a string", param="model")
    n = body.get("n", 1)
    if n not in (None, 1):
        raise RequestError("only n=1 is supported", param="n")
    tools = _tools(body.get("tools"))
    functions = {t.name for t in tools}
    messages = _messages(body.get("messages"))
    choice = _tool_choice(body.get("tool_choice"), functions)
    response_schema = _response_format(body.get("response_format"))
    if response_schema is not None and response_schema[0] in functions:
        raise RequestError(
            f"response_format name {response_schema[0]!r} is also a tool name",
            param="response_format",
        )
    stream = _bool(body, "stream", False)
    options = body.get("stream_options") or {}
    if not isinstance(options, Mapping):
        raise RequestError("'stream_options' must be an object", param="stream_options")
    return ChatRequest(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice="none" if choice == "none" and not tools else choice,
        params=_params(body),
        stream=stream,
        include_usage=bool(stream and options.get("include_usage")),
        response_schema=response_schema,
    )


def _bool(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RequestError(f"'{key}' must be a boolean", param=key)
    return value


def _number(body: Mapping[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(f"'{key}' must be a number", param=key)
    return float(value)


def _params(body: Mapping[str, Any]) -> SamplingParams:
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise RequestError("'max_tokens' must be a positive integer", param="max_tokens")
    stop = body.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,)
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = tuple(stop)
    else:
        raise RequestError("'stop' must be a string or a list of strings", param="stop")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RequestError("'seed' must be an integer", param="seed")
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise RequestError("'parallel_tool_calls' must be a boolean", param="parallel_tool_calls")
    return SamplingParams(
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        max_tokens=max_tokens,
        stop=stops,
        seed=seed,
        parallel_tool_calls=parallel,
    )


def _content_text(content: Any, where: str) -> str:
    """Message content as text: a string, ``null``, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in ("text", "input_text"):
                texts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping) and part.get("type") == "refusal":
                texts.append(str(part.get("refusal", "")))
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise RequestError(f"{where}: content part of type {kind!r} is not supported")
        return "".join(texts)
    raise RequestError(f"{where}: content must be a string, null or a list of parts")


def _messages(raw: Any) -> tuple[ChatMessage, ...]:
    if not isinstance(raw, list) or not raw:
        raise RequestError("'messages' must be a non-empty list", param="messages")
    out: list[ChatMessage] = []
    names: dict[str, str] = {}  # call id -> tool name, for tool messages without 'name'
    for i, message in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise RequestError(f"{where} must be an object", param="messages")
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise RequestError(f"{where}: a tool message needs 'tool_call_id'")
            name = message.get("name") or names.get(call_id, "")
            result = ToolResult(
                call_id=call_id,
                tool_name=str(name),
                output=_content_text(message.get("content"), where),
            )
            out.append(ChatMessage.tool_result(result))
        elif role in _ROLES:
            content = _content_text(message.get("content"), where)
            calls = _calls(message.get("tool_calls"), where) if role == "assistant" else ()
            names.update((c.id, c.name) for c in calls)
            name = message.get("name")
            out.append(
                ChatMessage(
                    role=_ROLES[role],  # type: ignore[arg-type]
                    content=content,
                    tool_calls=calls,
                    name=name if isinstance(name, str) and role == "user" else None,
                )
            )
        else:
            raise RequestError(f"{where}: unsupported role {role!r}", param="messages")
    from tooluse.providers.history import validate_history

    try:
        return tuple(validate_history(out))
    except HistoryError as exc:
        raise RequestError(str(exc), param="messages") from None


def _calls(raw: Any, where: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RequestError(f"{where}: 'tool_calls' must be a list")
    calls = []
    for j, entry in enumerate(raw):
        function = entry.get("function") if isinstance(entry, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise RequestError(f"{where}.tool_calls[{j}]: needs function.name")
        call_id = entry.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise RequestError(f"{where}.tool_calls[{j}]: needs an 'id'")
        arguments = function.get("arguments")
        decoded: Any = arguments
        if isinstance(arguments, str):
            try:
                decoded = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                decoded = None
        if isinstance(decoded, dict):
            calls.append(ToolCall(id=call_id, name=function["name"], arguments=decoded))
        else:  # kept as the model wrote it, so the history replays exactly
            calls.append(ToolCall(id=call_id, name=function["name"], raw_arguments=str(arguments)))
    return tuple(calls)


def _tools(raw: Any) -> tuple[ToolDefinition, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RequestError("'tools' must be a list", param="tools")
    tools: list[ToolDefinition] = []
    for i, entry in enumerate(raw):
        function = entry.get("function") if isinstance(entry, Mapping) else None
        if not isinstance(entry, Mapping) or entry.get("type", "function") != "function":
            raise RequestError(f"tools[{i}]: only type 'function' is supported", param="tools")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise RequestError(f"tools[{i}]: needs function.name", param="tools")
        schema = function.get("parameters")
        if schema is not None and not isinstance(schema, Mapping):
            raise RequestError(f"tools[{i}]: 'parameters' must be an object", param="tools")
        try:
            tool = ToolDefinition.from_schema(
                function["name"],
                dict(schema) if schema else None,
                description=str(function.get("description") or ""),
            )
        except (ToolDefinitionError, ValueError, TypeError) as exc:
            raise RequestError(f"tools[{i}] ({function['name']}): {exc}", param="tools") from None
        if tool.name in {t.name for t in tools}:
            raise RequestError(f"tools[{i}]: duplicate tool name {tool.name!r}", param="tools")
        tools.append(tool)
    return tuple(tools)


def _tool_choice(raw: Any, functions: set[str]) -> ToolChoice:
    if raw is None:
        return "auto"
    if raw in ("auto", "none", "required"):
        if raw == "required" and not functions:
            raise RequestError("tool_choice 'required' needs tools", param="tool_choice")
        return str(raw)
    if isinstance(raw, Mapping):
        function = raw.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str):
            if name not in functions:
                raise RequestError(
                    f"tool_choice names {name!r}, which is not in 'tools'", param="tool_choice"
                )
            return name
    raise RequestError(
        "tool_choice must be 'auto', 'none', 'required' or {'type': 'function', ...}",
        param="tool_choice",
    )


def _response_format(raw: Any) -> tuple[str, dict[str, Any]] | None:
    if raw is None:
        return None
    kind = raw.get("type") if isinstance(raw, Mapping) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return "json_object", {"type": "object", "properties": {}, "additionalProperties": True}
    if kind == "json_schema":
        spec = raw.get("json_schema")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
            raise RequestError(
                "response_format json_schema needs json_schema.schema", param="response_format"
            )
        return str(spec.get("name") or "response"), dict(spec["schema"])
    raise RequestError(
        "response_format type must be 'text', 'json_object' or 'json_schema'",
        param="response_format",
    )


# -- responses ----------------------------------------------------------------------------------


def new_completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def finish_reason(result: GenerationResult) -> str:
    if result.tool_calls:
        return "tool_calls"
    return result.finish_reason if result.finish_reason in _FINISH else "stop"


def usage_body(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _wire_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json()},
    }


def encode_chat_completion(
    result: GenerationResult,
    *,
    model: str,
    completion_id: str | None = None,
    content: str | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` object; ``content`` overrides the text (structured output)."""
    text = result.text if content is None else content
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if result.tool_calls and content is None:
        message["tool_calls"] = [_wire_call(c) for c in result.tool_calls]
    if result.finish_reason == "refusal":
        message["refusal"] = text
    return {
        "id": completion_id or new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if content is not None else finish_reason(result),
                "logprobs": None,
            }
        ],
        "usage": usage_body(result.usage),
    }


def chunk(
    completion_id: str,
    model: str,
    created: int,
    delta: dict[str, Any] | None,
    *,
    finish: str | None = None,
    usage: Usage | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``delta=None`` gives the usage-only last chunk."""
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if usage is not None:
        body["usage"] = usage_body(usage)
    return body


def stream_delta(event: StreamEvent, ids: dict[int, str]) -> dict[str, Any] | None:
    """The chunk delta for one stream event, as OpenAI sends it: a call's id and name in its
    first delta, argument fragments after; ``None`` for events with no wire form."""
    if isinstance(event, TextDelta):
        return {"content": event.text} if event.text else None
    if isinstance(event, ToolCallStarted):
        ids[event.index] = event.id
        return {
            "tool_calls": [
                {
                    "index": event.index,
                    "id": event.id,
                    "type": "function",
                    "function": {"name": event.name, "arguments": ""},
                }
            ]
        }
    if isinstance(event, ArgumentsDelta):
        if not event.text:
            return None
        return {"tool_calls": [{"index": event.index, "function": {"arguments": event.text}}]}
    return None
