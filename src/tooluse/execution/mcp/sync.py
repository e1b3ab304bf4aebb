"""The blocking facade over MCP servers: :class:`SyncMCPToolExecutor`.

The server connections live on one private event loop in a background thread (started on
``connect``/``with``, stopped on ``close``), so each call is one hand-off to that loop, never
an ``asyncio.run`` per call. Tool definitions listed here carry plain (sync) functions, so they
work with the synchronous tool loop and executors.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from tooluse.errors import MCPError
from tooluse.execution.base import AbstractToolExecutor, CancellationToken, current_call_token
from tooluse.execution.mcp.client import MCPToolExecutor, MCPToolset
from tooluse.execution.mcp.config import MCPServerConfig
from tooluse.execution.mcp.resources import MCPPrompt, MCPResource, MCPResourceTemplate
from tooluse.execution.mcp.server_requests import MCPHandlers
from tooluse.media import MediaPart
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["SyncMCPToolExecutor"]

T = TypeVar("T")


class SyncMCPToolExecutor(AbstractToolExecutor):
    """Blocking access to one MCP server (a config) or several (a sequence of configs).

    ::

        config = MCPServerConfig(command="python", args=("-m", "mcp_server_time"))
        with SyncMCPToolExecutor(config) as mcp:
            tools = mcp.list_tools()
            result = mcp.execute(ToolCall(name="get_current_time", arguments={"timezone": "UTC"}))

    ``handlers`` (:class:`MCPHandlers`) answer the servers' sampling, elicitation and roots
    requests and get their progress reports; they run on the facade's background loop (a
    blocking handler in a worker thread).
    """

    def __init__(
        self,
        config: MCPServerConfig | Iterable[MCPServerConfig],
        *,
        handlers: MCPHandlers | None = None,
    ) -> None:
        self._inner: MCPToolExecutor | MCPToolset
        if isinstance(config, MCPServerConfig):
            self._inner = MCPToolExecutor(config, handlers=handlers)
        else:
            self._inner = MCPToolset(config, handlers=handlers)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._definitions: tuple[ToolDefinition, ...] | None = None

    @property
    def inner(self) -> MCPToolExecutor | MCPToolset:
        """The async executor (or toolset) doing the work on the background loop."""
        return self._inner

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> SyncMCPToolExecutor:
        self.connect()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def connect(self) -> None:
        """Start the background loop and the server(s); raises MCPError when one fails."""
        try:
            self._run(self._inner.connect())
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the server(s) and the background loop; safe to call twice."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._inner.aclose(), loop).result()
        except BaseException:
            self._inner.kill_servers()  # interrupted while closing: no server is left behind
            raise
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="tooluse-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def _run(self, coroutine: Coroutine[Any, Any, T], stop: CancellationToken | None = None) -> T:
        """Run ``coroutine`` on the background loop; ``stop`` firing cancels it there."""
        loop = self._ensure_loop()
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise MCPError("SyncMCPToolExecutor cannot be used from its own background loop")
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coroutine, loop)

        def cancel_request() -> None:  # the SDK tells the server the request is cancelled
            future.cancel()

        if stop is not None:
            stop.add_callback(cancel_request)
        try:
            return future.result()
        except BaseException:
            if not future.done():  # interrupted (Ctrl-C): stop the work and the servers now
                future.cancel()
                self._inner.kill_servers()
            raise
        finally:
            if stop is not None:
                stop.remove_callback(cancel_request)

    # -- tools and calls -----------------------------------------------------------------------

    @property
    def rejected_tools(self) -> dict[str, str]:
        """Tools left out because their advertised input schema is invalid (name -> reason)."""
        if isinstance(self._inner, MCPToolExecutor):
            return dict(self._inner.rejected_tools)
        merged: dict[str, str] = {}
        for executor in self._inner.executors:
            merged.update(executor.rejected_tools)
        return merged

    def list_tools(self, *, refresh: bool = False) -> tuple[ToolDefinition, ...]:
        """The tools as ToolDefinitions whose ``function`` is a plain blocking callable."""
        definitions = self._run(self._inner.list_tools(refresh=refresh))
        self._definitions = tuple(self._with_sync_function(d) for d in definitions)
        return self._definitions

    def refresh_tools(self) -> tuple[ToolDefinition, ...]:
        """Fetch the tool list(s) again."""
        return self.list_tools(refresh=True)

    def execute(self, call: ToolCall, *, timeout: float | None = None) -> ToolResult:
        """Run one call; always returns exactly one ToolResult for ``call.id``."""
        return self._run(self._inner.execute_async(call, timeout=timeout))

    def execute_batch(
        self, calls: Iterable[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run several calls concurrently; results in the order of ``calls``."""
        return self._run(self._inner.aexecute_batch(list(calls), cancel=cancel))

    async def aexecute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """:meth:`execute_batch` from async code (on the facade's own loop, in a thread)."""
        return await asyncio.to_thread(self.execute_batch, calls, cancel=cancel)

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        """The tools (listed on first use), with blocking functions."""
        if self._definitions is None:
            self._definitions = self.list_tools()
        return self._definitions

    def _single(self) -> MCPToolExecutor:
        if not isinstance(self._inner, MCPToolExecutor):
            raise TypeError("resources and prompts belong to one server: give one MCPServerConfig")
        return self._inner

    def list_resources(self) -> tuple[MCPResource, ...]:
        """The server's resources."""
        return self._run(self._single().list_resources())

    def list_resource_templates(self) -> tuple[MCPResourceTemplate, ...]:
        """The server's resource templates."""
        return self._run(self._single().list_resource_templates())

    def read_resource(self, uri: str) -> tuple[MediaPart, ...]:
        """A resource's contents: texts, images and files."""
        return self._run(self._single().read_resource(uri))

    def list_prompts(self) -> tuple[MCPPrompt, ...]:
        """The server's prompts."""
        return self._run(self._single().list_prompts())

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> list[ChatMessage]:
        """A prompt filled with ``arguments``, as messages."""
        return self._run(self._single().get_prompt(name, arguments))

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> ToolResult:
        """Call a tool by name."""
        return self.execute(ToolCall(name=name, arguments=dict(arguments or {})), timeout=timeout)

    def _with_sync_function(self, definition: ToolDefinition) -> ToolDefinition:
        import dataclasses

        name = definition.name
        inner = self._inner

        def call_mcp_tool(**arguments: Any) -> ToolResult:
            call = ToolCall(name=name, arguments=arguments)
            # An executor that gives this call up (cancelled, timed out) fires the call token:
            # the MCP request is cancelled too instead of running on.
            return self._run(inner.execute_async(call, validate=False), current_call_token())

        call_mcp_tool.__name__ = name
        call_mcp_tool.__qualname__ = name
        call_mcp_tool.__doc__ = f"Call the MCP tool {name!r} (blocking)."
        return dataclasses.replace(definition, function=call_mcp_tool)
