"""Streamable HTTP replies nested deeper than the SDK's JSON parser reads, made readable.

The SDK reads each JSON-RPC message with pydantic's JSON parser, which stops at about 200 levels
of nesting: one tool whose input schema nests 400 levels deep would make the whole tool listing
fail. Over stdio tooluse's own transport reads such a reply with Python's parser instead
(:mod:`~tooluse.execution.mcp.stdio_transport`); over HTTP the SDK's transport reads the bytes
itself, so :func:`readable_replies`, an HTTP response hook, rewrites such a message as it
arrives (a JSON body, or an event of an event stream) before the SDK sees it:

- a tool listing is read with Python's parser and every value nested deeper than
  :data:`CUT_DEPTH` levels is replaced by a marker string: every tool is kept, and the deep one
  is still deeper than :data:`~tooluse.execution.mcp.schema.MAX_SCHEMA_DEPTH`, so it is
  rejected on its own with the usual reason, as over stdio;
- any other reply (a result, an error) becomes an error for its request, saying why;
- a reply nested too deeply even for Python's parser becomes such an error too.

Messages pydantic reads are passed through untouched (a cheap count of brackets spares the
check for almost all of them). No ``mcp`` import here; imported only when an HTTP server connects.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2  # the SDK's HTTP client (a dependency of mcp 2.x); this module is imported with it

__all__ = ["CUT_DEPTH", "SDK_DEPTH", "readable_message", "readable_replies"]

#: About how many levels pydantic's JSON parser reads (more fail with "recursion limit").
SDK_DEPTH = 200
#: Values below this many levels of a tool listing are cut.
CUT_DEPTH = 128
MARKER = f"[cut by tooluse: nested deeper than {CUT_DEPTH} levels]"
_REPLY_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_INTERNAL_ERROR = -32603


def _sdk_reads(payload: bytes) -> bool:
    if payload.count(b"{") + payload.count(b"[") < SDK_DEPTH:
        return True  # cannot nest that deep
    from pydantic_core import from_json

    try:
        from_json(payload)
    except ValueError as exc:
        return "recursion limit" not in str(exc)
    return True


def _cut(value: Any, depth: int) -> Any:
    if not isinstance(value, (dict, list)):
        return value
    if depth >= CUT_DEPTH:
        return MARKER
    if isinstance(value, dict):
        return {key: _cut(item, depth + 1) for key, item in value.items()}
    return [_cut(item, depth + 1) for item in value]


def _error(request_id: Any, message: str) -> bytes:
    error = {"code": _INTERNAL_ERROR, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


def _reply_id(payload: bytes) -> Any:
    """The id of a reply that cannot be parsed: near its start, or at its end (servers that
    write ``result`` first and ``id`` last)."""
    found = _REPLY_ID.search(payload[:512])
    if found is None:
        found = next(reversed(list(_REPLY_ID.finditer(payload[-512:]))), None)
    return None if found is None else json.loads(found.group(1))


def readable_message(payload: bytes) -> bytes | None:
    """The message rewritten so that the SDK reads it (see the module docs), or ``None`` when
    it needs nothing (read as it is, or not a reply tooluse can say anything about)."""
    if _sdk_reads(payload):
        return None
    try:
        message = json.loads(payload)
    except RecursionError:
        request_id = _reply_id(payload)
        if request_id is None:
            return None
        return _error(request_id, "the server's reply is nested too deeply to be read")
    except ValueError:
        return None  # not JSON at all: the SDK reports it
    if not isinstance(message, dict) or "id" not in message:
        return None  # a request or notification from the server: nothing to answer
    result = message.get("result")
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        return json.dumps(_cut(message, 0)).encode()
    reason = f"the server's reply nests deeper than the {SDK_DEPTH} levels the MCP SDK reads"
    return _error(message["id"], reason)


async def readable_replies(response: Any) -> None:
    """An ``httpx2`` response hook: a JSON or event-stream body gets its too-deep messages
    rewritten (see :func:`readable_message`) as it is read."""
    content_type = response.headers.get("content-type", "").lower()
    if content_type.startswith("application/json"):
        response.stream = _JSONBody(response.stream)
    elif content_type.startswith("text/event-stream"):
        response.stream = _EventStream(response.stream)


class _JSONBody(httpx2.AsyncByteStream):
    """A JSON body read whole (the SDK reads it whole too), then rewritten if it must be."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        body = b"".join([chunk async for chunk in self.inner])
        rewritten = readable_message(body)
        yield body if rewritten is None else rewritten

    async def aclose(self) -> None:
        await self.inner.aclose()


class _EventStream(httpx2.AsyncByteStream):
    """An event stream passed on line by line; a ``data:`` line holding a too-deep message is
    rewritten."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending: list[bytes] = []  # the start of a line still arriving (kept in pieces: linear)
        async for chunk in self.inner:
            end = chunk.rfind(b"\n") + 1
            if not end:
                pending.append(chunk)
                continue
            lines = b"".join([*pending, chunk[:end]])
            pending = [chunk[end:]] if end < len(chunk) else []
            yield b"".join(_line(line) for line in lines.splitlines(keepends=True))
        if pending:
            yield _line(b"".join(pending))

    async def aclose(self) -> None:
        await self.inner.aclose()


def _line(line: bytes) -> bytes:
    if not line.startswith(b"data:"):
        return line
    body = line[5:].rstrip(b"\r\n")
    rewritten = readable_message(body.lstrip(b" "))
    if rewritten is None:
        return line
    return b"data: " + rewritten + line[5 + len(body) :]
