"""One live connection to an MCP server: :class:`Connection`, owned by a background task.

It starts the server (or reaches the URL) with the handlers' callbacks, finishes the handshake
under ``startup_timeout``, quotes the server's stderr when that fails, and shuts down without
raising.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from typing import Any, TextIO

from tooluse.errors import MCPError, MissingDependencyError
from tooluse.execution.mcp.config import MCPServerConfig
from tooluse.execution.mcp.process import ServerProcess
from tooluse.execution.mcp.server_requests import MCPHandlers

__all__ = ["Connection"]

_STDERR_TAIL = 2000


class Connection:
    """One live SDK client, owned by a background task.

    The SDK's client must be entered and exited in the same task; owning it in a task of its own
    lets calls come from any task and lets a broken connection be replaced at any time.
    """

    def __init__(self, config: MCPServerConfig, handlers: MCPHandlers | None = None) -> None:
        self.config = config
        self.handlers = handlers
        self.client: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.process = ServerProcess()
        # A real file: the server writes its stderr there directly, and startup errors quote it.
        self.errlog: TextIO = tempfile.TemporaryFile(  # noqa: SIM115 - closed in close()
            "w+", encoding="utf-8", errors="replace"
        )
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        try:
            # Bytes from the end only: a chatty server may have written megabytes of logs.
            with open(self.errlog.fileno(), "rb", closefd=False) as raw:
                size = raw.seek(0, 2)
                raw.seek(max(0, size - 4 * _STDERR_TAIL))
                text = raw.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        return text[-_STDERR_TAIL:].strip()

    @property
    def alive(self) -> bool:
        if self._task is None or self._task.done() or self.client is None:
            return False
        from tooluse.execution.mcp import sdk as mcp_sdk

        return not mcp_sdk.session_closed(self.client)

    async def open(self) -> None:
        """Start the server (or reach the URL) and finish the handshake; raises MCPError."""
        self.loop = asyncio.get_running_loop()
        try:
            client = self._client()
        except MissingDependencyError:
            self._release_stderr()
            raise  # the SDK is not installed: the user's to install, not a server failure
        except Exception as exc:
            error = self._start_error(exc)
            self._release_stderr()
            raise error from exc
        self._task = asyncio.get_running_loop().create_task(self._own(client))
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            done, _ = await asyncio.wait(
                {ready, self._task},
                timeout=self.startup_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            # The caller gave up (a loop timeout, Ctrl-C): stop the half-started server too.
            self.process.kill()
            ready.cancel()
            self._task.cancel()
            self._task.add_done_callback(lambda _task: self._release_stderr())
            raise
        if ready in done and not self._task.done():
            return
        ready.cancel()
        if self._task in done:
            failure = self._task.exception() or RuntimeError("the connection ended during startup")
            error = self._start_error(failure)
            await self.close()
            raise error from failure
        timeout = TimeoutError(f"no handshake within {self.startup_seconds:g}s")
        # A server stuck in its handshake gets no grace period: kill it now, then wind down.
        self.process.kill()
        await self.close(keep_stderr=True)  # stop the process first: its stderr is then complete
        error = self._start_error(timeout)
        self._release_stderr()
        raise error

    @property
    def startup_seconds(self) -> float:
        """The time the handshake may take: with OAuth, also the time to approve the sign-in."""
        oauth = self.config.oauth
        return self.config.startup_timeout + (oauth.callback_timeout if oauth else 0.0)

    def _client(self) -> Any:
        """The un-entered SDK client: transport, protocol and the handlers' callbacks."""
        from tooluse.execution.mcp import sdk as mcp_sdk
        from tooluse.execution.mcp.server_answers import sdk_callbacks

        config = self.config
        env = self.process.environment(dict(config.env or {})) if config.command else None
        transport = None
        bounded = config.max_reply_bytes is not None and sys.platform != "win32"
        if config.command is not None and bounded:
            from tooluse.execution.mcp.stdio_transport import bounded_stdio_transport

            assert config.max_reply_bytes is not None
            transport = bounded_stdio_transport(
                [config.command, *config.args],
                env=env,
                cwd=config.cwd,
                errlog=self.errlog,
                max_reply_bytes=config.max_reply_bytes,
            )
        http_auth = None
        if config.oauth is not None and config.url is not None:
            from tooluse.execution.mcp.oauth import oauth_http_auth

            http_auth = oauth_http_auth(config.oauth, config.url, config.label)
        return mcp_sdk.open_client(
            server=config.server,
            transport=transport,
            command=config.command,
            args=config.args,
            env=env,
            cwd=config.cwd,
            url=config.url,
            headers=dict(config.headers) if config.headers else None,
            timeout=config.timeout,
            errlog=self.errlog,
            protocol=config.protocol,
            callbacks=sdk_callbacks(self.handlers, config.label),
            http_auth=http_auth,
        )

    async def _own(self, client: Any) -> None:
        async with client:
            self.client = client
            self._ready.set()
            await self._stop.wait()

    def _start_error(self, exc: BaseException) -> MCPError:
        leaf = _leaf_exception(exc)
        if isinstance(leaf, FileNotFoundError):
            reason = f"command not found: {self.config.command!r}"
        else:
            reason = f"{type(leaf).__name__}: {leaf}"
        message = f"MCP server {self.config.label!r} failed to start: {reason}"
        stderr = self.stderr_tail()
        if stderr:
            message += f"\n--- server stderr ---\n{stderr}"
        return MCPError(message)

    def _release_stderr(self) -> None:
        with contextlib.suppress(OSError):
            self.errlog.close()

    async def close(self, *, keep_stderr: bool = False) -> None:
        """Stop the server; never raises (a broken connection is closed as best it can be)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            if not task.done() and not self._ready.is_set():
                task.cancel()  # still in the handshake: there is no session to end politely
            # The SDK bounds its own shutdown (stdin close, SIGTERM, SIGKILL: ~6 s at most);
            # asyncio.wait neither raises the task's error nor cancels it on our cancellation.
            await asyncio.wait({task}, timeout=15)
            if not task.done():
                task.cancel()
            elif not task.cancelled():
                task.exception()  # retrieved: a failed connection is reported elsewhere
        self.client = None
        if not keep_stderr:
            self._release_stderr()


def _leaf_exception(exc: BaseException) -> BaseException:
    """The first non-group exception inside (nested) exception groups."""
    # Duck-typed: BaseExceptionGroup is a builtin only from Python 3.11.
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc
