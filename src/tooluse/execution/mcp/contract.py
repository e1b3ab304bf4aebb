"""The executor contract for MCP clients: :class:`MCPExecutorBase` gives
:class:`~tooluse.execution.mcp.MCPToolExecutor` and :class:`~tooluse.execution.mcp.MCPToolset`
the :class:`~tooluse.execution.base.AbstractToolExecutor` methods on top of their own
``execute_async``; :class:`~tooluse.execution.mcp.SyncMCPToolExecutor` is the blocking one."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Sequence
from typing import Any

from tooluse.errors import MCPError
from tooluse.execution.base import AbstractToolExecutor, CancellationToken
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["MCPExecutorBase"]


class MCPExecutorBase(AbstractToolExecutor):
    """An async MCP client as an executor: ``definitions`` are the listed tools (list them
    first: ``await client.list_tools()``), a batch runs its calls concurrently, and a fired
    :class:`CancellationToken` answers the calls still running ``cancelled``."""

    _tools: tuple[ToolDefinition, ...] | None
    config: Any

    @abc.abstractmethod
    async def execute_async(
        self, call: ToolCall, *, timeout: float | None = None, validate: bool = True
    ) -> ToolResult:
        """One call on the server; exactly one result."""

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        if self._tools is None:
            raise MCPError(
                f"{type(self).__name__} has not listed its tools yet: "
                "await list_tools() before using it as an executor"
            )
        return self._tools

    async def aexecute(self, call: ToolCall) -> ToolResult:
        return await self.execute_async(call)

    async def aexecute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run the calls concurrently; results in the order of ``calls``."""
        if cancel is None:
            return tuple(await asyncio.gather(*(self.execute_async(c) for c in calls)))
        if cancel.cancelled:
            return tuple(_cancelled(call) for call in calls)
        tasks = [asyncio.ensure_future(self.execute_async(call)) for call in calls]
        loop = asyncio.get_running_loop()

        def stop_all() -> None:  # the token may fire in any thread
            loop.call_soon_threadsafe(lambda: [task.cancel() for task in tasks])

        cancel.add_callback(stop_all)
        try:
            await asyncio.wait(tasks)
        finally:
            cancel.remove_callback(stop_all)
        return tuple(
            _cancelled(call) if task.cancelled() else task.result()
            for call, task in zip(calls, tasks, strict=True)
        )

    async def execute_batch_async(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Same as :meth:`aexecute_batch` (the name of earlier releases)."""
        return await self.aexecute_batch(list(calls), cancel=cancel)

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        # The connection lives on the event loop that opened it; a blocking call from another
        # loop would break it. SyncMCPToolExecutor owns a loop for that.
        raise TypeError(
            f"{type(self).__name__} is async: await aexecute_batch(), or use "
            "SyncMCPToolExecutor for blocking code"
        )


def _cancelled(call: ToolCall) -> ToolResult:
    return ToolResult.failure(call.id, call.name, "cancelled before it finished", source="mcp")
