"""The SDK callbacks that answer a server's requests from :class:`MCPHandlers`.

:func:`sdk_callbacks` gives the ``Client`` keywords (``sampling_callback``,
``elicitation_callback``, ``list_roots_callback``) for the handlers that are set; the SDK then
declares those capabilities and routes both ways a server may ask to them: a request sent in
the middle of a call (the 2025-11-25 way) and the input requests of an ``input_required``
result (2026-07-28). :func:`progress_callback` adapts ``on_progress`` for one call.

A handler that refuses, fails or answers wrongly gives the server an MCP error with a reason;
it never hangs the call. The conversions from the SDK's types are pure functions. The SDK
itself is reached through :mod:`~tooluse.execution.mcp.sdk`; this module is imported only
when a connection opens.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.execution.mcp.server_requests import (
    ElicitationHandler,
    ElicitationRequest,
    ElicitationResponse,
    MCPHandlers,
    MCPProgress,
    MCPSampling,
    SamplingRequest,
)
from tooluse.messages import ChatMessage, ToolCall
from tooluse.providers.base import Backend, GenerationResult, SamplingParams, as_backend

__all__ = [
    "REFUSED",
    "check_elicited_content",
    "create_message_result",
    "elicitation_request_from_mcp",
    "progress_callback",
    "sampling_request_from_mcp",
    "sdk_callbacks",
    "with_defaults",
]

logger = logging.getLogger("tooluse.mcp")

types = mcp_sdk.mcp_types

#: The error code of a refused sampling request (the MCP specification's example uses -1).
REFUSED = -1

_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}


def sdk_callbacks(handlers: MCPHandlers | None, server: str) -> dict[str, Any]:
    """The SDK ``Client`` callback keywords for the handlers that are set (``server``: the
    label requests are tagged with)."""
    if handlers is None:
        return {}
    callbacks: dict[str, Any] = {}
    if handlers.sampling is not None:
        callbacks["sampling_callback"] = _sampling_callback(handlers.sampling, server)
    if handlers.elicitation is not None:
        callbacks["elicitation_callback"] = _elicitation_callback(handlers.elicitation, server)
    if handlers.roots is not None:
        callbacks["list_roots_callback"] = _roots_callback(handlers)
    return callbacks


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    """Await an async handler; run a blocking one in a worker thread (a terminal prompt must
    not stop the connection's event loop)."""
    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004 - a callable object's async __call__
    ):
        return await function(*args)
    outcome = await asyncio.to_thread(function, *args)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


def _error(code: int, message: str) -> Any:
    return types.ErrorData(code=code, message=message[:500])


def _failure_text(what: str, exc: BaseException) -> str:
    return f"the client's {what} failed: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------------
# Sampling


def sampling_request_from_mcp(params: Any, server: str) -> SamplingRequest:
    """A ``CreateMessageRequestParams`` as a :class:`SamplingRequest` of tooluse messages.

    Text content is kept; images, audio and other blocks are described in brackets (the
    client declares no sampling with tools, so servers send none).
    """
    messages: list[ChatMessage] = []
    if params.system_prompt:
        messages.append(ChatMessage.system(params.system_prompt))
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(mcp_sdk.describe_content_block(block) for block in blocks)
        if message.role == "assistant":
            messages.append(ChatMessage(role="assistant", content=text))
        else:
            messages.append(ChatMessage.user(text))
    preferences = params.model_preferences
    hints = (
        tuple(hint.name for hint in (preferences.hints or ()) if hint.name)
        if preferences is not None
        else ()
    )
    return SamplingRequest(
        server=server,
        messages=tuple(messages),
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=hints,
        include_context=params.include_context,
        metadata=dict(params.metadata or {}),
    )


def create_message_result(result: GenerationResult, *, model: str) -> Any:
    """A backend's turn as the ``CreateMessageResult`` a server gets back."""
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=result.text or ""),
        model=model,
        stop_reason=_STOP_REASONS.get(result.finish_reason, result.finish_reason),
    )


def _model_name(backend: Backend) -> str:
    for attribute in ("model", "model_name", "name"):
        value = getattr(backend, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(backend).__name__


def _sampling_callback(sampling: MCPSampling, server: str) -> Any:
    backend = as_backend(sampling.backend)
    model = _model_name(sampling.backend)

    async def answer_sampling(_context: Any, params: Any) -> Any:
        request = sampling_request_from_mcp(params, server)
        try:
            allowed = await _call(sampling.allow, request)
        except Exception as exc:
            logger.warning("MCP server %r: the sampling policy failed", server, exc_info=True)
            return _error(types.INTERNAL_ERROR, _failure_text("sampling policy", exc))
        if allowed is not True:
            logger.info("MCP server %r: a sampling request was refused", server)
            return _error(REFUSED, "the client refused the sampling request")
        temperature = request.temperature
        options = SamplingParams(
            max_tokens=min(request.max_tokens, sampling.max_tokens),
            temperature=temperature if temperature is not None else sampling.temperature,
            stop=request.stop_sequences,
        )
        try:
            result = await backend.agenerate(list(request.messages), params=options)
        except Exception as exc:
            logger.warning("MCP server %r: sampling with the model failed", server, exc_info=True)
            return _error(types.INTERNAL_ERROR, _failure_text("model", exc))
        return create_message_result(result, model=model)

    return answer_sampling


# ---------------------------------------------------------------------------------------------
# Elicitation


def elicitation_request_from_mcp(params: Any, server: str) -> ElicitationRequest:
    """An ``ElicitRequestParams`` (form or URL mode) as an :class:`ElicitationRequest`."""
    if getattr(params, "mode", "form") == "url":
        return ElicitationRequest(
            server=server,
            message=params.message,
            mode="url",
            url=params.url,
            elicitation_id=params.elicitation_id,
        )
    schema = params.requested_schema
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    return ElicitationRequest(server=server, message=params.message, schema=dict(schema))


def with_defaults(schema: Mapping[str, Any], content: Mapping[str, Any]) -> dict[str, Any]:
    """An accepted form's content with the schema's ``default`` filled in for each field the
    answer leaves out (the protocol's elicitation defaults, SEP-1034)."""
    properties = schema.get("properties")
    filled = dict(content)
    if isinstance(properties, Mapping):
        for name, spec in properties.items():
            if name not in filled and isinstance(spec, Mapping) and "default" in spec:
                filled[name] = spec["default"]
    return filled


def check_elicited_content(schema: Mapping[str, Any], content: Mapping[str, Any]) -> str | None:
    """Why ``content`` does not match the requested ``schema``, or ``None`` when it does."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator = validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(dict(content)), key=lambda error: list(error.path))
    except (SchemaError, TypeError, ValueError):  # the server's schema is broken: it checks
        logger.info("an elicitation schema could not be read; the answer is sent unchecked")
        return None
    if not errors:
        return None
    return "; ".join(
        f"{'/'.join(str(p) for p in error.absolute_path) or '(answer)'}: {error.message}"
        for error in errors
    )


def _elicitation_callback(handler: ElicitationHandler, server: str) -> Any:
    async def answer_elicitation(_context: Any, params: Any) -> Any:
        request = elicitation_request_from_mcp(params, server)
        try:
            response = await _call(handler, request)
        except Exception as exc:
            logger.warning("MCP server %r: the elicitation handler failed", server, exc_info=True)
            return _error(types.INTERNAL_ERROR, _failure_text("elicitation handler", exc))
        if not isinstance(response, ElicitationResponse):
            return _error(
                types.INTERNAL_ERROR,
                "the client's elicitation handler returned "
                f"{type(response).__name__}, not an ElicitationResponse",
            )
        content = None
        if response.action == "accept" and request.mode == "form":
            content = with_defaults(request.schema, response.content or {})
            problem = check_elicited_content(request.schema, content)
            if problem is not None:
                return _error(
                    types.INVALID_PARAMS,
                    f"the client's answer does not match the requested schema: {problem}",
                )
        try:
            return types.ElicitResult(action=response.action, content=content)
        except ValueError as exc:  # values the protocol cannot carry (nested objects...)
            return _error(types.INVALID_PARAMS, f"the client's answer cannot be sent: {exc}")

    return answer_elicitation


# ---------------------------------------------------------------------------------------------
# Roots and progress


def _roots_callback(handlers: MCPHandlers) -> Any:
    async def answer_roots(_context: Any) -> Any:
        try:
            roots = handlers.current_roots()
        except Exception as exc:
            return _error(types.INTERNAL_ERROR, _failure_text("roots callback", exc))
        return types.ListRootsResult(
            roots=[types.Root.model_validate({"uri": r.uri, "name": r.name}) for r in roots]
        )

    return answer_roots


def progress_callback(handlers: MCPHandlers | None, server: str, call: ToolCall) -> Any:
    """The SDK progress callback for one call, or ``None`` when nobody listens.

    A failing ``on_progress`` is logged and ignored: progress must not break the call.
    """
    if handlers is None or handlers.on_progress is None:
        return None
    listener = handlers.on_progress

    async def report(progress: float, total: float | None, message: str | None) -> None:
        event = MCPProgress(
            server=server,
            tool_name=call.name,
            call_id=call.id,
            progress=progress,
            total=total,
            message=message,
        )
        try:
            outcome = listener(event)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.warning("MCP server %r: on_progress failed", server, exc_info=True)

    return report
