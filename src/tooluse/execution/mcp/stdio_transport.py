"""The bounded stdio transport: a stdio server's replies read in one linear pass, each capped.

The SDK's own ``stdio_client`` is used when no reply limit is set (and on Windows). The SDK's
types are reached through :mod:`~tooluse.execution.mcp.sdk`; this module is imported only when
a stdio server starts.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import AsyncIterator
from typing import Any, TextIO

from tooluse.execution.mcp import sdk as mcp_sdk

__all__ = ["bounded_stdio_transport"]

# The SDK's stdio reader joins the pending text to each new 64 KB chunk before splitting it, so
# one long reply line costs time quadratic in its length (30 MB: tens of seconds) and is kept
# whole. This transport reads stdout in one linear pass and drops any line longer than
# ``max_reply_bytes`` as it arrives, answering its request with an error instead.
_REPLY_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_TOO_LARGE = -32603  # JSON-RPC "internal error": the reply could not be taken


def _parse_reply(line: bytes) -> Any:
    try:
        return mcp_sdk.SessionMessage(
            mcp_sdk.mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        )
    except ValueError as exc:  # the session surfaces it (and logs it)
        if "recursion limit" in str(exc):
            return _parse_deep_reply(line, exc)
        return exc


def _parse_deep_reply(line: bytes, exc: ValueError) -> Any:
    """A reply nested deeper than pydantic's JSON parser goes (about 200 levels).

    Dropping it would leave its request waiting until the timeout: a tool listing with one
    deeply nested schema would fail as a whole. Python's parser reads it (the message's own
    fields are shallow; the depth sits in values such as one tool's schema, checked and
    rejected on its own later); a reply too deep even for that answers its request with an
    error at once.
    """
    import json

    try:
        data = json.loads(line)
    except RecursionError:
        return _error_for(line[:512], "the server's reply is nested too deeply to be read")
    except ValueError:
        return exc
    try:
        return mcp_sdk.SessionMessage(
            mcp_sdk.mcp_types.jsonrpc_message_adapter.validate_python(data)
        )
    except (ValueError, RecursionError):
        return exc


def _error_for(head: bytes, message: str) -> Any:
    """A JSON-RPC error answering the request whose reply begins with ``head`` (by its id)."""
    found = _REPLY_ID.search(head)
    if found is None:
        return ValueError(message)
    import json

    error = mcp_sdk.mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=json.loads(found.group(1)),
        error=mcp_sdk.mcp_types.ErrorData(code=_TOO_LARGE, message=message),
    )
    return mcp_sdk.SessionMessage(error)


def _oversized_reply(head: bytes, size: int, limit: int) -> Any:
    """An error answering the request whose reply was too large (found by the id it begins with)."""
    message = (
        f"the server's reply was {size:,} bytes, over the {limit:,}-byte limit; it was dropped"
    )
    return _error_for(head, message)


class _ReplyLines:
    """Splits a server's stdout into lines, keeping at most ``max_reply_bytes`` of each (the
    first 512 bytes of a longer one, for its error) so a huge reply never fills memory."""

    def __init__(self, max_reply_bytes: int) -> None:
        self.max_reply_bytes = max_reply_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""

    def feed(self, chunk: bytes) -> list[Any]:
        """The messages of the lines ``chunk`` completes (blank lines give none)."""
        items: list[Any] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self._size <= self.max_reply_bytes:
                self._parts.append(piece)
                if self._size + len(piece) > self.max_reply_bytes:  # stop keeping this line
                    self._head, self._parts = b"".join(self._parts)[:512], []
            self._size += len(piece)
            if end < 0:
                return items
            start = end + 1
            item = self._line_item()
            if item is not None:
                items.append(item)

    def _line_item(self) -> Any:
        line = b"".join(self._parts)
        if self._size > self.max_reply_bytes:
            item = _oversized_reply(self._head, self._size, self.max_reply_bytes)
        else:
            item = _parse_reply(line) if line.strip() else None
        self._parts, self._size, self._head = [], 0, b""
        return item


def _closed_errors() -> tuple[type[BaseException], ...]:
    import anyio

    return (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


async def _read_replies(process: Any, read_send: Any, max_reply_bytes: int) -> None:
    """Pass the server's replies to the session; once it stops listening, keep draining so
    that the server never blocks on a full pipe."""
    assert process.stdout is not None
    closed = _closed_errors()
    lines = _ReplyLines(max_reply_bytes)
    listening = True
    async with read_send:
        try:
            async for chunk in process.stdout:
                for item in lines.feed(chunk):
                    if not listening:
                        continue
                    try:
                        await read_send.send(item)
                    except closed:
                        listening = False
        except closed:
            pass


async def _write_requests(process: Any, write_recv: Any, read_send: Any, done: Any) -> None:
    """Send the session's messages to the server's stdin, one JSON line each."""
    assert process.stdin is not None
    try:
        async with write_recv:
            async for message in write_recv:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((text + "\n").encode())
    except _closed_errors():
        await read_send.aclose()  # the server is gone: let the session see it
    finally:
        done.set()


async def _exited(process: Any, seconds: float) -> bool:
    import anyio

    # Polled: waiting on the process would also wait for its pipes, which a child it left
    # behind may hold open.
    with anyio.move_on_after(seconds):
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    return process.returncode is not None


def _signal_group(process: Any, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)


async def _shut_down(process: Any, write_send: Any, writer_done: Any) -> None:
    """The MCP order: close stdin, wait 2 s, SIGTERM the group, wait 2 s, SIGKILL."""
    import anyio

    closed = _closed_errors()
    write_send.close()
    with anyio.move_on_after(0.5):
        await writer_done.wait()
    with contextlib.suppress(*closed):
        await process.stdin.aclose()
    if not await _exited(process, 2.0):
        _signal_group(process, signal.SIGTERM)
        if not await _exited(process, 2.0):
            _signal_group(process, signal.SIGKILL)
            await _exited(process, 2.0)
    with contextlib.suppress(*closed):
        await process.stdout.aclose()


@contextlib.asynccontextmanager
async def bounded_stdio_transport(
    argv: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    errlog: TextIO,
    max_reply_bytes: int,
) -> AsyncIterator[Any]:
    """A stdio server as SDK transport streams, its replies read linearly and bounded.

    The server runs in a new session (its process group is killed as a whole); shutdown
    follows the MCP order: close stdin, wait 2 s, SIGTERM the group, wait 2 s, SIGKILL.
    """
    import anyio

    process = await anyio.open_process(
        argv,
        env={**mcp_sdk.get_default_environment(), **(env or {})},
        stderr=errlog,
        cwd=cwd,
        start_new_session=True,
    )
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)
    writer_done = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(_read_replies, process, read_send, max_reply_bytes)
        group.start_soon(_write_requests, process, write_recv, read_send, writer_done)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await _shut_down(process, write_send, writer_done)
                read_recv.close()
            group.cancel_scope.cancel()
