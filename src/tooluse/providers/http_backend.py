"""``HTTPBackend``: the shared sync/async/streaming core of the HTTP backends.

A subclass names its wire adapter module (``wire``: ``encode_request``/``decode_response``) and
supplies the small provider-specific pieces (request path, stream assembler, extra encoding
options, wire-event reader); this class does the rest, so every HTTP backend offers the same
calls: ``generate_with_tools``/``agenerate_with_tools``, ``generate``/``agenerate`` and
``stream_with_tools``/``astream_with_tools`` (events, then :class:`GenerationDone`).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Sequence
from types import ModuleType
from typing import Any, Protocol

import httpx

from tooluse.errors import BackendError
from tooluse.events import StreamEvent
from tooluse.messages import ChatMessage
from tooluse.providers.base import (
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ToolChoice,
)
from tooluse.providers.http_transport import (
    HTTPTransport,
    RequestSigner,
    RetryPolicy,
    aiter_sse_data,
    iter_sse_data,
)
from tooluse.tools.definition import ToolDefinition

__all__ = ["HTTPBackend", "StreamAssembler", "api_key_from_env"]


class StreamAssembler(Protocol):
    def feed(self, event: dict[str, Any]) -> list[StreamEvent]: ...

    def finish(self) -> tuple[list[StreamEvent], GenerationResult]: ...


def _json_event(data: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise BackendError(f"stream event is not JSON: {data[:300]!r}") from exc
    if not isinstance(value, dict):
        raise BackendError(f"stream event is not a JSON object: {data[:300]!r}")
    return value


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


class HTTPBackend:
    """Base of the HTTP backends; see the module docstring for what subclasses provide."""

    provider: str = ""
    model: str = ""
    strict_tools: bool = False
    transport: HTTPTransport
    #: The wire adapter module: ``encode_request(messages, tools, params, tool_choice, *,
    #: model, strict, **options)`` and ``decode_response(body, model=...)``.
    wire: ModuleType
    _capabilities: ModelCapabilities = ModelCapabilities()

    def _setup(
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

    def assembler(self) -> StreamAssembler:
        raise NotImplementedError

    def wire_events(self, response: httpx.Response) -> Iterator[dict[str, Any]]:
        """The decoded events of a streaming response (server-sent JSON events by default)."""
        for _event, data in iter_sse_data(response.iter_lines()):
            yield _json_event(data)

    async def awire_events(self, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        async for _event, data in aiter_sse_data(response.aiter_lines()):
            yield _json_event(data)

    # -- the public calls --------------------------------------------------------------------

    def generate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """One assistant turn (text and/or tool calls). History is validated before sending."""
        path, body = self.build_request(messages, tools, params, tool_choice, stream=False)
        return self.decode(self.transport.post_json(path, body))

    async def agenerate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """Async :meth:`generate_with_tools`."""
        path, body = self.build_request(messages, tools, params, tool_choice, stream=False)
        return self.decode(await self.transport.apost_json(path, body))

    def generate(
        self, messages: Sequence[ChatMessage], params: SamplingParams | None = None
    ) -> GenerationResult:
        """Plain text generation (no tools offered)."""
        return self.generate_with_tools(messages, (), params, "auto")

    async def agenerate(
        self, messages: Sequence[ChatMessage], params: SamplingParams | None = None
    ) -> GenerationResult:
        return await self.agenerate_with_tools(messages, (), params, "auto")

    def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamEvent | GenerationDone]:
        """The turn as stream events, ending with :class:`GenerationDone` holding the whole turn."""
        path, body = self.build_request(messages, tools, params, tool_choice, stream=True)
        assembler = self.assembler()
        with self.transport.stream(path, body) as response:
            for event in self.wire_events(response):
                yield from assembler.feed(event)
        closing, result = assembler.finish()
        yield from closing
        yield GenerationDone(result=result)

    async def astream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamEvent | GenerationDone]:
        """Async :meth:`stream_with_tools`."""
        path, body = self.build_request(messages, tools, params, tool_choice, stream=True)
        assembler = self.assembler()
        async with self.transport.astream(path, body) as response:
            async for event in self.awire_events(response):
                for item in assembler.feed(event):
                    yield item
        closing, result = assembler.finish()
        for item in closing:
            yield item
        yield GenerationDone(result=result)

    def close(self) -> None:
        """Close the HTTP clients."""
        self.transport.close()

    async def aclose(self) -> None:
        await self.transport.aclose()

    def __enter__(self) -> HTTPBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.transport.base_url!r})"
