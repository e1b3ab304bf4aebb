"""An OpenAI-compatible HTTP server over any tooluse backend (Starlette; run it with uvicorn).

Routes: ``POST /v1/chat/completions`` (plain and SSE streaming), ``GET /v1/models`` and
``GET /health`` (with the API key, or when there is none, each model's load: requests running
and waiting, and a local model's engine counters). Each model runs a bounded number of generations at once (one for a local
llama.cpp model); further requests wait in a bounded queue and get 503 with ``Retry-After`` when
it is full. A client that disconnects stops its generation at the next event. Tool-call
arguments are validated (and safely coerced) against the request's own tool schemas before they
are returned; an invalid call is regenerated once, then returned as the model wrote it with the
problem in the ``x-tooluse-warning`` header.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import json
import logging
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tooluse.errors import BackendError, ContextLengthError, GrammarError, ToolArgumentError
from tooluse.events import (
    ArgumentsDelta,
    ReasoningDelta,
    StreamEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from tooluse.messages import ToolCall
from tooluse.providers.base import (
    Backend,
    GenerationDone,
    GenerationResult,
    StreamItem,
    as_backend,
)
from tooluse.serve.chat_wire import (
    ChatRequest,
    RequestError,
    chunk,
    decode_chat_request,
    encode_chat_completion,
    error_body,
    finish_reason,
    new_completion_id,
    stream_delta,
)
from tooluse.sync_bridge import aiter_on_thread
from tooluse.tools.definition import ToolDefinition

__all__ = ["ServedModel", "create_app"]

logger = logging.getLogger("tooluse.serve")


@dataclass(kw_only=True)
class ServedModel:
    """One backend the server answers for, under ``id`` (and ``aliases``)."""

    id: str
    backend: Backend
    aliases: tuple[str, ...] = ()
    #: Generations run at once (a local model's batch size: they are decoded together).
    max_concurrent: int = 1
    #: Requests allowed to wait for a slot; more get 503.
    max_queue: int = 32
    _waiting: int = field(default=0, init=False)
    _running: int = field(default=0, init=False)
    _slots: asyncio.Semaphore | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.backend = as_backend(self.backend)

    def answers_to(self, name: str) -> bool:
        return name == self.id or name in self.aliases

    def load(self) -> dict[str, Any]:
        """What ``/health`` reports of the model: generations running and requests waiting,
        and a local model's batch-engine counters by engine (``engine_stats``: tokens read and
        decoded, and the seconds spent reading prompts, decoding and stepping)."""
        load: dict[str, Any] = {"running": self._running, "waiting": self._waiting}
        engines = getattr(self.backend, "engine_stats", None)
        if isinstance(engines, dict):
            load["engines"] = {
                name: dataclasses.asdict(stats)
                for name, stats in engines.items()
                if dataclasses.is_dataclass(stats) and not isinstance(stats, type)
            }
        return load

    def check_capacity(self) -> None:
        """Raise the 503 a request gets when the queue is full."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_concurrent)
        if self._slots.locked() and self._waiting >= self.max_queue:
            raise RequestError(
                f"model {self.id!r} is busy: {self._waiting} requests are waiting",
                status=503,
                type="server_error",
                code="overloaded",
            )

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self.check_capacity()
        assert self._slots is not None
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            self._slots.release()


@dataclass(frozen=True, kw_only=True)
class _Plan:
    """What one request asks the backend for."""

    request: ChatRequest
    tools: tuple[ToolDefinition, ...]
    tool_choice: Any
    structured: str | None  # the forced tool's name for response_format


def _plan(request: ChatRequest) -> _Plan:
    if request.response_schema is None:
        return _Plan(
            request=request,
            tools=request.tools,
            tool_choice=request.tool_choice,
            structured=None,
        )
    name, schema = request.response_schema
    tool = ToolDefinition.from_schema(name, schema, description="Write the response.")
    return _Plan(request=request, tools=(tool,), tool_choice=name, structured=name)


# -- generation on a worker thread, cancellable between events ---------------------------------


def _events(backend: Backend, plan: _Plan, cancel: threading.Event) -> AsyncIterator[StreamItem]:
    """The backend's stream for ``plan``, produced on a thread; ``cancel`` stops the model."""
    request = plan.request

    def stream() -> Iterator[StreamItem]:
        return iter(backend.stream(request.messages, plan.tools, request.params, plan.tool_choice))

    return aiter_on_thread(stream, name="tooluse-serve-generate", stop=cancel)


def _checked_call(call: ToolCall, tools: dict[str, ToolDefinition]) -> tuple[ToolCall, str | None]:
    """The call with validated, coerced arguments, or the call and what is wrong with it."""
    tool = tools.get(call.name)
    if tool is None:
        return call, f"unknown tool {call.name!r}"
    if call.raw_arguments is not None:
        return call, f"arguments of {call.name!r} are not a JSON object"
    try:
        arguments = tool.validate_arguments(call.arguments)
    except ToolArgumentError as exc:
        return call, exc.model_message
    return dataclasses.replace(call, arguments=dict(arguments)), None


def _checked(
    result: GenerationResult, tools: Sequence[ToolDefinition]
) -> tuple[GenerationResult, list[str]]:
    by_name = {t.name: t for t in tools}
    calls, problems = [], []
    for call in result.tool_calls:
        checked, problem = _checked_call(call, by_name)
        calls.append(checked)
        if problem:
            problems.append(problem)
    return dataclasses.replace(result, tool_calls=tuple(calls)), problems


async def _generate(
    backend: Backend, plan: _Plan, request: Request
) -> tuple[GenerationResult, list[str]]:
    """A whole turn, regenerated once when a call is invalid; stops if the client leaves."""
    result, problems = await _generate_once(backend, plan, request)
    if problems:
        logger.info("regenerating after invalid tool call: %s", "; ".join(problems))
        result, problems = await _generate_once(backend, plan, request)
    return result, problems


async def _generate_once(
    backend: Backend, plan: _Plan, request: Request
) -> tuple[GenerationResult, list[str]]:
    cancel = threading.Event()
    watcher = asyncio.create_task(_watch_disconnect(request, cancel))
    result: GenerationResult | None = None
    try:
        async for event in _events(backend, plan, cancel):
            if isinstance(event, GenerationDone):
                result = event.result
    finally:
        watcher.cancel()
    if result is None:
        raise RequestError("the client disconnected", status=499)
    return _checked(result, plan.tools)


async def _watch_disconnect(request: Request, cancel: threading.Event) -> None:
    while not cancel.is_set():
        if await request.is_disconnected():
            cancel.set()
            return
        await asyncio.sleep(0.25)


# -- the application ------------------------------------------------------------------------------


def create_app(models: Sequence[ServedModel], *, api_key: str | None = None) -> Starlette:
    """The ASGI application serving ``models``; ``api_key`` requires ``Authorization: Bearer``."""
    server = _Server(list(models), api_key)
    return Starlette(
        routes=[
            Route("/v1/chat/completions", server.chat_completions, methods=["POST"]),
            Route("/v1/models", server.list_models, methods=["GET"]),
            Route("/health", server.health, methods=["GET"]),
        ],
        exception_handlers={404: _not_found, 405: _wrong_method},
    )


def _refuse(exc: RequestError) -> JSONResponse:
    headers = {"retry-after": "1"} if exc.status == 503 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


_UNAUTHORISED = RequestError("invalid or missing API key", status=401, code="invalid_api_key")


class _Server:
    """The routes' state: the served models and the API key."""

    def __init__(self, served: list[ServedModel], api_key: str | None) -> None:
        if not served:
            raise ValueError("create_app needs at least one model")
        self.served = served
        self.api_key = api_key

    def find(self, name: str) -> ServedModel:
        for model in self.served:
            if model.answers_to(name):
                return model
        known = ", ".join(m.id for m in self.served)
        raise RequestError(
            f"the model {name!r} does not exist; this server has: {known}",
            status=404,
            param="model",
            code="model_not_found",
        )

    def authorised(self, request: Request) -> bool:
        if not self.api_key:
            return True
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.api_key}".encode())

    async def chat_completions(self, request: Request) -> Response:
        if not self.authorised(request):
            return _refuse(_UNAUTHORISED)
        try:
            return await self._chat(request)
        except RequestError as exc:
            return _refuse(exc)
        except ContextLengthError as exc:
            return _refuse(RequestError(str(exc), code="context_length_exceeded", param="messages"))
        except GrammarError as exc:
            return _refuse(RequestError(f"tool schema not supported: {exc}", param="tools"))
        except BackendError as exc:
            logger.warning("backend error: %s", exc)
            error = RequestError(f"the model failed: {exc}", status=502, type="server_error")
            return _refuse(error)

    async def _chat(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            raise RequestError(f"the body is not valid JSON: {exc}") from None
        chat = decode_chat_request(body)
        model = self.find(chat.model)
        plan = _plan(chat)
        await asyncio.to_thread(_preflight, model.backend, plan)
        if chat.stream:
            return await _stream_response(model, plan, request)
        with _request_span(chat.model) as span:
            async with model.slot():
                result, problems = await _generate(model.backend, plan, request)
            if span is not None:
                sys.modules["tooluse.loop.telemetry"].record_usage(span, result)
        content = None
        if plan.structured is not None:
            calls = result.tool_calls
            content = calls[0].arguments_json() if calls else result.text
        body_out = encode_chat_completion(result, model=chat.model, content=content)
        headers = {"x-tooluse-warning": _header_text("; ".join(problems))} if problems else None
        return JSONResponse(body_out, headers=headers)

    async def list_models(self, request: Request) -> Response:
        if not self.authorised(request):
            return _refuse(_UNAUTHORISED)
        created = int(time.time())
        data = [
            {"id": name, "object": "model", "created": created, "owned_by": "tooluse"}
            for m in self.served
            for name in (m.id, *m.aliases)
        ]
        return JSONResponse({"object": "list", "data": data})

    async def health(self, request: Request) -> Response:
        body: dict[str, Any] = {"status": "ok", "models": [m.id for m in self.served]}
        if self.authorised(request):  # liveness for anyone, the load for the key's holders
            body["load"] = {m.id: m.load() for m in self.served}
        return JSONResponse(body)


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse(
        error_body(f"no route {request.method} {request.url.path}", code="not_found"),
        status_code=404,
    )


async def _wrong_method(request: Request, exc: Exception) -> Response:
    return JSONResponse(
        error_body(f"method {request.method} not allowed on {request.url.path}"),
        status_code=405,
    )


def _request_span(model: str) -> contextlib.AbstractContextManager[Any]:
    """A trace span around a request when ``tooluse.instrument()`` was called (looked up
    without importing, so a server that is not traced never loads OpenTelemetry)."""
    telemetry = sys.modules.get("tooluse.loop.telemetry")
    if telemetry is None:
        return contextlib.nullcontext()
    span: contextlib.AbstractContextManager[Any] = telemetry.served_request(model, stream=False)
    return span


def _header_text(text: str) -> str:
    """``text`` as a valid HTTP header value: one line of printable ASCII, bounded."""
    flat = " ".join(text.split())
    return flat.encode("ascii", "replace").decode("ascii")[:500]


def _preflight(backend: Backend, plan: _Plan) -> None:
    """Refuse early what the model cannot do: a prompt over its context, a schema its grammar
    cannot express (local models only; others are checked by their provider)."""
    request = plan.request
    # Only the grammar's text is built here (pure Python, raises GrammarError): compiling it
    # would touch the model's grammar cache while another request is generating.
    grammar_text = getattr(backend, "call_grammar_text", None)
    if callable(grammar_text) and plan.tools and plan.tool_choice != "none":
        grammar_text(plan.tools, bool(request.params.parallel_tool_calls))
    count, render = getattr(backend, "count_tokens", None), getattr(backend, "render", None)
    n_ctx = getattr(backend, "n_ctx", None)
    if callable(count) and callable(render) and isinstance(n_ctx, int):
        used = count(render(request.messages, plan.tools))
        if used >= n_ctx:
            raise ContextLengthError(
                f"the prompt has {used} tokens; this model's context holds {n_ctx}"
            )


async def _stream_response(model: ServedModel, plan: _Plan, request: Request) -> Response:
    """An SSE response; the model's slot is held while the stream runs."""
    model.check_capacity()  # a full queue is a 503 before the response starts
    chat = plan.request
    completion_id, created = new_completion_id(), int(time.time())
    tools = {t.name: t for t in plan.tools}

    def sse(payload: dict[str, Any]) -> str:
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    async def body() -> AsyncIterator[str]:
        async with model.slot():
            async for piece in pieces():
                yield piece

    async def pieces() -> AsyncIterator[str]:
        cancel = threading.Event()
        try:
            yield sse(
                chunk(completion_id, chat.model, created, {"role": "assistant", "content": ""})
            )
            ids: dict[int, str] = {}
            result: GenerationResult | None = None
            async for event in _events(model.backend, plan, cancel):
                if isinstance(event, GenerationDone):
                    result = event.result
                    continue
                delta = _event_delta(event, ids, tools, plan.structured)
                if delta is not None:
                    yield sse(chunk(completion_id, chat.model, created, delta))
            if result is None:
                return
            finish = "stop" if plan.structured else finish_reason(result)
            yield sse(chunk(completion_id, chat.model, created, {}, finish=finish))
            if chat.include_usage:
                yield sse(chunk(completion_id, chat.model, created, None, usage=result.usage))
            yield "data: [DONE]\n\n"
        except (BackendError, GrammarError) as exc:
            yield sse(error_body(f"the model failed: {exc}", type="server_error"))
            yield "data: [DONE]\n\n"
        finally:
            cancel.set()

    return StreamingResponse(
        body(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
    )


def _event_delta(
    event: StreamEvent,
    ids: dict[int, str],
    tools: dict[str, ToolDefinition],
    structured: str | None,
) -> dict[str, Any] | None:
    """The delta for one event. A call's arguments are sent whole once the call is complete and
    validated (so a streamed call is never invalid); structured output streams as content."""
    if isinstance(event, ReasoningDelta):
        return {"reasoning_content": event.text} if event.text else None
    if isinstance(event, ToolCallFinished):
        call, problem = _checked_call(event.call, tools)
        if problem:
            logger.warning("streamed tool call is invalid: %s", problem)
        if structured is not None:
            return {"content": call.arguments_json()}
        return {
            "tool_calls": [{"index": event.index, "function": {"arguments": call.arguments_json()}}]
        }
    if isinstance(event, ToolCallStarted) and structured is not None:
        return None
    if isinstance(event, ToolCallStarted):
        return stream_delta(event, ids)
    if isinstance(event, ArgumentsDelta):
        return None  # sent whole at ToolCallFinished
    return stream_delta(event, ids)
