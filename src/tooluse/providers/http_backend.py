"""``HTTPBackend``: the shared sync/async/streaming core of the HTTP backends.

A subclass names its wire adapter module (``wire``: ``encode_request``/``decode_response``) and
supplies the small provider-specific pieces (request path, stream assembler, extra encoding
options, wire-event reader); this class does the rest, so every HTTP backend offers the same
native calls: ``generate``/``agenerate`` over the blocking and the async HTTP client, and
``stream``/``astream`` (events, then :class:`GenerationDone`) from the provider's stream.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any, Protocol

import httpx

from tooluse.errors import BackendError, IncompleteStreamError, StreamTimeoutError
from tooluse.events import StreamEvent, ToolCallFinished, ToolCallStarted
from tooluse.messages import ChatMessage
from tooluse.providers.base import (
    BaseBackend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ToolChoice,
    without_media,
)
from tooluse.providers.http_transport import (
    HTTPTransport,
    RequestSigner,
    RetryPolicy,
    aiter_sse_data,
    iter_sse_data,
)
from tooluse.providers.prices import cost_of
from tooluse.providers.wire_common import SSE_DONE, log, restore_tool_names
from tooluse.tools.definition import ToolDefinition
from tooluse.tools.tool_names import original_tool_name

__all__ = ["HTTPBackend", "StreamAssembler", "api_key_from_env"]


class StreamAssembler(Protocol):
    def feed(self, event: dict[str, Any]) -> list[StreamEvent]: ...

    def finish(self) -> tuple[list[StreamEvent], GenerationResult]: ...


class _UnreadableEvent(BackendError):
    """A stream event that is not a JSON object (often the last one, cut off mid-way)."""


def _json_event(data: str) -> dict[str, Any]:
    if data == SSE_DONE:
        return {"type": SSE_DONE}
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise _UnreadableEvent(f"stream event is not JSON: {data[:300]!r}") from exc
    if not isinstance(value, dict):
        raise _UnreadableEvent(f"stream event is not a JSON object: {data[:300]!r}")
    return value


def _finish_stream(
    assembler: StreamAssembler, broken: Exception | None
) -> tuple[list[StreamEvent], GenerationResult]:
    """The assembler's closing events and turn; a stream that broke off before its terminal
    event raises :class:`IncompleteStreamError` (with the partial turn and the cause)."""
    try:
        closing, result = assembler.finish()
    except IncompleteStreamError as exc:
        if isinstance(broken, httpx.TimeoutException):
            message = f"the stream stalled past the read timeout ({type(broken).__name__}): {exc}"
            raise StreamTimeoutError(message, partial=exc.partial) from broken
        if broken is not None:
            raise IncompleteStreamError(f"{exc} ({broken})", partial=exc.partial) from broken
        raise
    if broken is not None:  # the turn was whole; only what came after it was lost
        log.info("ignoring a stream error after the terminal event: %s", broken)
    return closing, result


def _named_as_offered(
    event: StreamEvent, tools: Sequence[ToolDefinition], dialect: str
) -> StreamEvent:
    """A stream event naming its call as the offered tool (``Calendar.create_event``), not as
    the provider's form of that name (``Calendar__create_event``)."""
    names = [t.name for t in tools]
    if isinstance(event, ToolCallStarted) and event.name not in names:
        return replace(event, name=original_tool_name(event.name, dialect, names))
    if isinstance(event, ToolCallFinished) and event.call.name not in names:
        call = replace(event.call, name=original_tool_name(event.call.name, dialect, names))
        return replace(event, call=call)
    return event


def api_key_from_env(
    api_key: str | None, env_names: Sequence[str], *, backend: str, base_url: str, home_url: str
) -> str | None:
    """``api_key``, else the first set environment variable of ``env_names``. Missing is an
    error only for the provider's own endpoint (``home_url``); other servers may need none."""
    key = api_key
    if key is None:
        key = next((os.environ[name] for name in env_names if os.environ.get(name)), None)
    if not key and base_url.rstrip("/") == home_url:
        names = " (or ".join(env_names) + ")" * (len(env_names) - 1)
        raise BackendError(f"{backend} needs an API key: set {names} or pass api_key=")
    return key


class HTTPBackend(BaseBackend):
    """Base of the HTTP backends; see the module docstring for what subclasses provide."""

    provider: str = ""
    model: str = ""
    strict_tools: bool = False
    transport: HTTPTransport
    #: The wire adapter module: ``encode_request(messages, tools, params, tool_choice, *,
    #: model, strict, **options)`` and ``decode_response(body, model=...)``.
    wire: ModuleType
    _capabilities: ModelCapabilities = ModelCapabilities()

    def _setup(  # noqa: PLR0913 - the settings every HTTP backend shares, keyword-only
        self,
        model: str,
        base_url: str,
        headers: dict[str, str],
        *,
        timeout: float | httpx.Timeout,
        retry: RetryPolicy | None,
        max_retries: int,
        capabilities: ModelCapabilities | None,
        default_capabilities: ModelCapabilities,
        strict_tools: bool,
        signer: RequestSigner | None = None,
    ) -> None:
        """The settings every HTTP backend takes (called by each ``__init__``)."""
        self.model = model
        self.strict_tools = strict_tools
        self._capabilities = capabilities or default_capabilities
        self.transport = HTTPTransport(
            base_url,
            headers=headers,
            timeout=timeout,
            retry=retry or RetryPolicy(max_retries=max_retries),
            signer=signer,
        )

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    # -- pieces a subclass provides (pure) ---------------------------------------------------

    def request_path(self, *, stream: bool) -> str:
        """The URL path of a (streaming) request, relative to the base URL."""
        raise NotImplementedError

    def encode_options(self) -> dict[str, Any]:
        """Extra keyword arguments of ``wire.encode_request`` for this backend."""
        return {}

    def stream_fields(self) -> dict[str, Any]:
        """Body fields that ask for a streamed answer (none where the URL says it)."""
        return {"stream": True}

    def build_request(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        params: SamplingParams | None,
        tool_choice: ToolChoice,
        *,
        stream: bool,
    ) -> tuple[str, dict[str, Any]]:
        """``(path, body)`` of the request."""
        if not self.capabilities.supports_vision:
            messages = without_media(messages, self.model)
        body: dict[str, Any] = self.wire.encode_request(
            messages,
            tools,
            params,
            tool_choice,
            model=self.model,
            strict=self.strict_tools,
            **self.encode_options(),
        )
        if stream:
            body.update(self.stream_fields())
        return self.request_path(stream=stream), body

    def decode(self, body: dict[str, Any]) -> GenerationResult:
        result: GenerationResult = self.wire.decode_response(body, model=self.model)
        return result

    def _finished(
        self, result: GenerationResult, tools: Sequence[ToolDefinition]
    ) -> GenerationResult:
        """The turn as the caller gets it: calls named as offered, the cost filled in."""
        result = restore_tool_names(result, tools, self.dialect)
        priced = cost_of(result.usage, self.model_spec.split(":", 1)[0], self.model)
        return result if priced is result.usage else replace(result, usage=priced)

    @property
    def dialect(self) -> str:
        """The wire's schema dialect, which decides the tool names sent and read back."""
        return str(self.wire.DIALECT)

    def assembler(self) -> StreamAssembler:
        raise NotImplementedError

    def wire_events(self, response: httpx.Response) -> Iterator[dict[str, Any]]:
        """The decoded events of a streaming response (server-sent JSON events by default)."""
        for _event, data in iter_sse_data(response.iter_lines(), keep_done=True):
            yield _json_event(data)

    async def awire_events(self, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        async for _event, data in aiter_sse_data(response.aiter_lines(), keep_done=True):
            yield _json_event(data)

    # -- the public calls --------------------------------------------------------------------

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """One assistant turn (text and/or tool calls). History is validated before sending."""
        path, body = self.build_request(messages, tools, params, tool_choice, stream=False)
        result = self.decode(self.transport.post_json(path, body))
        return self._finished(result, tools)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """Async :meth:`generate`."""
        path, body = self.build_request(messages, tools, params, tool_choice, stream=False)
        result = self.decode(await self.transport.apost_json(path, body))
        return self._finished(result, tools)

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamEvent | GenerationDone]:
        """The turn as stream events, ending with :class:`GenerationDone` holding the whole turn.

        A stream that ends (or breaks off) before the provider's terminal event raises
        :class:`IncompleteStreamError` carrying the partial turn, never a complete-looking turn
        with half-written arguments.
        """
        path, body = self.build_request(messages, tools, params, tool_choice, stream=True)
        assembler = self.assembler()
        broken: Exception | None = None
        with self.transport.stream(path, body) as response:
            try:
                for event in self.wire_events(response):
                    for item in assembler.feed(event):
                        yield _named_as_offered(item, tools, self.dialect)
            except (httpx.HTTPError, _UnreadableEvent) as exc:
                broken = exc
        closing, result = _finish_stream(assembler, broken)
        for item in closing:
            yield _named_as_offered(item, tools, self.dialect)
        yield GenerationDone(result=self._finished(result, tools))

    async def astream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamEvent | GenerationDone]:
        """Async :meth:`stream`."""
        path, body = self.build_request(messages, tools, params, tool_choice, stream=True)
        assembler = self.assembler()
        broken: Exception | None = None
        async with self.transport.astream(path, body) as response:
            try:
                async for event in self.awire_events(response):
                    for item in assembler.feed(event):
                        yield _named_as_offered(item, tools, self.dialect)
            except (httpx.HTTPError, _UnreadableEvent) as exc:
                broken = exc
        closing, result = _finish_stream(assembler, broken)
        for item in closing:
            yield _named_as_offered(item, tools, self.dialect)
        yield GenerationDone(result=self._finished(result, tools))

    def close(self) -> None:
        """Close the HTTP clients."""
        self.transport.close()

    async def aclose(self) -> None:
        await self.transport.aclose()

    def __enter__(self) -> HTTPBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def model_spec(self) -> str:
        """The ``load_model`` string that makes this backend again (saved conversations)."""
        return f"{self.provider}:{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.transport.base_url!r})"
