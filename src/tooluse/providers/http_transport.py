"""HTTP transport of the backends: httpx clients, timeouts, retries with backoff, typed errors, SSE.

The retry decision and the error mapping are pure functions shared by the sync and async paths;
only :class:`HTTPTransport`'s ``post_json``/``apost_json``/``stream``/``astream`` do I/O.
A request is retried on 408/409/429/5xx/529, on timeouts and on connection failures, waiting
``Retry-After`` when the server says so, else exponential backoff with jitter. Streams are
retried only before their first byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from tooluse.errors import BackendError, BackendHTTPError, BackendTimeoutError, ContextLengthError

__all__ = ["HTTPTransport", "RetryPolicy", "error_for_status", "iter_sse_data"]

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "exceeds the maximum number of tokens",
)

# Adds headers to a request just before sending (SigV4 signing needs the final bytes).
RequestSigner = Callable[[str, str, dict[str, str], bytes], dict[str, str]]


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how long to retry; ``max_retries=0`` disables retries."""

    max_retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after:
            try:
                return max(0.0, min(float(retry_after), self.max_retry_after))
            except ValueError:
                pass  # an HTTP date; fall back to backoff
        base: float = min(self.backoff * (2**attempt), self.max_backoff)
        return base * (0.5 + random.random() / 2)


def error_for_status(status: int, body: str) -> BackendError:
    """The typed error for a non-success response."""
    lowered = body.lower()
    if status in (400, 413) and any(marker in lowered for marker in _CONTEXT_MARKERS):
        return ContextLengthError(
            f"prompt does not fit the model's context (HTTP {status}): {body[:500]}"
        )
    return BackendHTTPError(f"HTTP {status}: {body[:500]}", status_code=status, body=body)


def iter_sse_data(lines: Iterator[str], *, keep_done: bool = False) -> Iterator[tuple[str, str]]:
    """``(event, data)`` pairs of a server-sent event stream, up to ``[DONE]``.

    ``keep_done`` yields ``("", "[DONE]")`` for the end marker itself, so that the reader can
    tell a finished stream from one cut short. Lines after ``[DONE]`` are read (not yielded)
    so the connection can be reused.
    """
    parser = _SSEParser(keep_done)
    for line in lines:
        item = parser.line(line)
        if item is not None:
            yield item
    item = parser.end()
    if item is not None:
        yield item


async def aiter_sse_data(
    lines: AsyncIterator[str], *, keep_done: bool = False
) -> AsyncIterator[tuple[str, str]]:
    """Async :func:`iter_sse_data`."""
    parser = _SSEParser(keep_done)
    async for line in lines:
        item = parser.line(line)
        if item is not None:
            yield item
    item = parser.end()
    if item is not None:
        yield item


class _SSEParser:
    """Line-by-line server-sent events parsing shared by the sync and async readers."""

    def __init__(self, keep_done: bool = False) -> None:
        self.event = ""
        self.data: list[str] = []
        self.done = False
        self.keep_done = keep_done

    def _dispatch(self) -> tuple[str, str] | None:
        item = None
        if self.data and not self.done:
            joined = "\n".join(self.data)
            if joined.strip() == "[DONE]":
                self.done = True
                item = ("", "[DONE]") if self.keep_done else None
            else:
                item = (self.event, joined)
        self.event, self.data = "", []
        return item

    def line(self, line: str) -> tuple[str, str] | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        if line.startswith("event:"):
            self.event = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].removeprefix(" "))
        return None

    def end(self) -> tuple[str, str] | None:
        return self._dispatch()


def _decode_json(response_text: str, url: str) -> dict[str, Any]:
    try:
        value = json.loads(response_text)
    except ValueError as exc:
        raise BackendError(f"{url} answered with invalid JSON: {response_text[:300]!r}") from exc
    if not isinstance(value, dict):
        raise BackendError(
            f"{url} answered with JSON that is not an object: {response_text[:300]!r}"
        )
    return value


class HTTPTransport:
    """POSTs JSON to one base URL with retries; owns one sync and one async httpx client."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float | httpx.Timeout = 60.0,
        retry: RetryPolicy | None = None,
        signer: RequestSigner | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"content-type": "application/json", **(headers or {})}
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.retry = retry or RetryPolicy()
        self.signer = signer
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None

    # -- shared pure steps ------------------------------------------------------------------

    def _prepare(self, path: str, body: dict[str, Any]) -> tuple[str, bytes, dict[str, str]]:
        url = path if path.startswith("http") else f"{self.base_url}/{path.lstrip('/')}"
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = dict(self.headers)
        if self.signer is not None:
            headers = self.signer("POST", url, headers, payload)
        return url, payload, headers

    def _should_retry(self, attempt: int) -> bool:
        return attempt < self.retry.max_retries

    @staticmethod
    def _transport_error(exc: httpx.HTTPError, url: str) -> BackendError:
        if isinstance(exc, httpx.TimeoutException):
            return BackendTimeoutError(f"request to {url} timed out ({type(exc).__name__})")
        return BackendError(f"request to {url} failed: {type(exc).__name__}: {exc}")

    # -- sync -------------------------------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        return self._client

    def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url, payload, headers = self._prepare(path, body)
        attempt = 0
        while True:
            try:
                response = self.client.post(url, content=payload, headers=headers)
            except httpx.HTTPError as exc:
                if not self._should_retry(attempt):
                    raise self._transport_error(exc, url) from exc
                time.sleep(self.retry.delay(attempt))
                attempt += 1
                continue
            if response.status_code < 400:
                return _decode_json(response.text, url)
            if response.status_code in RETRY_STATUSES and self._should_retry(attempt):
                time.sleep(self.retry.delay(attempt, response.headers.get("retry-after")))
                attempt += 1
                continue
            raise error_for_status(response.status_code, response.text)

    @contextlib.contextmanager
    def stream(self, path: str, body: dict[str, Any]) -> Iterator[httpx.Response]:
        """An open streaming response with a success status (retried before the first byte)."""
        url, payload, headers = self._prepare(path, body)
        attempt = 0
        while True:
            request = self.client.build_request("POST", url, content=payload, headers=headers)
            try:
                response = self.client.send(request, stream=True)
            except httpx.HTTPError as exc:
                if not self._should_retry(attempt):
                    raise self._transport_error(exc, url) from exc
                time.sleep(self.retry.delay(attempt))
                attempt += 1
                continue
            if response.status_code >= 400:
                text = response.read().decode("utf-8", "replace")
                response.close()
                if response.status_code in RETRY_STATUSES and self._should_retry(attempt):
                    time.sleep(self.retry.delay(attempt, response.headers.get("retry-after")))
                    attempt += 1
                    continue
                raise error_for_status(response.status_code, text)
            try:
                yield response
            except httpx.HTTPError as exc:
                raise self._transport_error(exc, url) from exc
            finally:
                response.close()
            return

    # -- async ------------------------------------------------------------------------------

    @property
    def aclient(self) -> httpx.AsyncClient:
        # An async client is bound to its event loop; a new loop (another asyncio.run) gets a new one.
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            self._aclient = httpx.AsyncClient(timeout=self.timeout)
            self._aloop = loop
        return self._aclient

    async def apost_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url, payload, headers = self._prepare(path, body)
        attempt = 0
        while True:
            try:
                response = await self.aclient.post(url, content=payload, headers=headers)
            except httpx.HTTPError as exc:
                if not self._should_retry(attempt):
                    raise self._transport_error(exc, url) from exc
                await asyncio.sleep(self.retry.delay(attempt))
                attempt += 1
                continue
            if response.status_code < 400:
                return _decode_json(response.text, url)
            if response.status_code in RETRY_STATUSES and self._should_retry(attempt):
                await asyncio.sleep(self.retry.delay(attempt, response.headers.get("retry-after")))
                attempt += 1
                continue
            raise error_for_status(response.status_code, response.text)

    @contextlib.asynccontextmanager
    async def astream(self, path: str, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        """Async :meth:`stream`."""
        url, payload, headers = self._prepare(path, body)
        attempt = 0
        while True:
            request = self.aclient.build_request("POST", url, content=payload, headers=headers)
            try:
                response = await self.aclient.send(request, stream=True)
            except httpx.HTTPError as exc:
                if not self._should_retry(attempt):
                    raise self._transport_error(exc, url) from exc
                await asyncio.sleep(self.retry.delay(attempt))
                attempt += 1
                continue
            if response.status_code >= 400:
                text = (await response.aread()).decode("utf-8", "replace")
                await response.aclose()
                if response.status_code in RETRY_STATUSES and self._should_retry(attempt):
                    await asyncio.sleep(
                        self.retry.delay(attempt, response.headers.get("retry-after"))
                    )
                    attempt += 1
                    continue
                raise error_for_status(response.status_code, text)
            try:
                yield response
            except httpx.HTTPError as exc:
                raise self._transport_error(exc, url) from exc
            finally:
                await response.aclose()
            return

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        if self._aclient is not None:
            await self._aclient.aclose()
            self._aclient = None
        self.close()
