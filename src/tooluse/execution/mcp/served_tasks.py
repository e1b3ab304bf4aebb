"""Tool calls run as tasks by :class:`~tooluse.execution.mcp.MCPToolServer` (protocol 2025-11-25).

A client of that revision may send ``tools/call`` with ``task: {ttl}``: the call then runs in
the background (the same way a plain call runs, under the same timeout) and the client gets the
task at once, polls ``tasks/get``, fetches the result with ``tasks/result`` (which waits for
the end of the task), may ``tasks/cancel`` it and ``tasks/list`` the tasks. Which tools may run
as tasks is the server's ``tasks`` setting (each tool's ``execution.taskSupport``: ``optional``,
``required`` or ``forbidden``, see :func:`~tooluse.execution.mcp.served.task_support_of`); a ``required`` tool called without a task, or a ``forbidden``
one called with one, is refused with the JSON-RPC "method not found" error, as the protocol
says. Later revisions (2026-07-28) have no tasks in the core protocol: there every tool runs as
a plain call.

Task ids are random (128 bits) and not bound to a connection, so that a client on stateless
HTTP finds its task again; a task and its result are kept for the ttl the client asked for
(10 minutes when it asks none, an hour at most), then dropped. A tool that fails
(``isError``) ends its task ``failed``, its result still delivered by ``tasks/result``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.execution.mcp.served import TaskSupport
from tooluse.messages import ToolResult

__all__ = ["TASK_PROTOCOL", "ServedTasks"]

types = mcp_sdk.mcp_types

#: The protocol revision that has tasks in its core.
TASK_PROTOCOL = "2025-11-25"
_RELATED = "io.modelcontextprotocol/related-task"
_PAGE = 100


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(kw_only=True)
class _Entry:
    """One task's state (mutable: the server's own record, never handed out)."""

    task_id: str
    ttl_ms: int
    created_at: str = field(default_factory=_now)
    last_updated_at: str = ""
    status: str = "working"
    status_message: str | None = None
    expires: float = 0.0
    result: dict[str, Any] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None

    def wire(self, poll_ms: int) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at or self.created_at,
            "ttl": self.ttl_ms,
            "pollInterval": poll_ms,
        }
        if self.status_message:
            task["statusMessage"] = self.status_message
        return task

    def end(self, status: str, message: str | None) -> None:
        if self.status in ("completed", "failed", "cancelled"):
            return  # terminal: a cancelled task stays cancelled whatever its run does
        self.status, self.status_message = status, message
        self.last_updated_at = _now()
        self.done.set()


def _error(code: int, message: str) -> Exception:
    return mcp_sdk.SDKError(code, message)


class ServedTasks:
    """The task store of one server and the SDK handlers that serve it.

    ``run_tool(name, arguments)`` runs one call (a :class:`ToolResult`, never an exception);
    ``wire_result(name, result)`` turns it into a ``CallToolResult`` dict; ``support`` is each
    tool's task support (see :func:`task_support_of`).
    """

    def __init__(
        self,
        run_tool: Callable[[str, dict[str, Any]], Awaitable[ToolResult]],
        wire_result: Callable[[str, ToolResult], dict[str, Any]],
        support: Mapping[str, TaskSupport],
        *,
        poll_interval_ms: int = 500,
        default_ttl_ms: int = 600_000,
        max_ttl_ms: int = 3_600_000,
    ) -> None:
        self.run_tool = run_tool
        self.wire_result = wire_result
        self.support = dict(support)
        self.poll_interval_ms = poll_interval_ms
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self._tasks: dict[str, _Entry] = {}

    @property
    def offered(self) -> bool:
        """Whether any tool may run as a task (else no ``tasks`` capability is declared)."""
        return any(value != "forbidden" for value in self.support.values())

    def install(self, server: Any) -> None:
        """Add the task methods and the ``tools/call`` and ``initialize`` hooks to a low-level
        SDK ``Server``."""
        if not self.offered:
            return
        server.middleware.append(self._middleware)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._on_get)
        server.add_request_handler(
            "tasks/result", types.GetTaskPayloadRequestParams, self._on_result
        )
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self._on_cancel)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._on_list)

    # -- the hooks ---------------------------------------------------------------------------

    async def _middleware(self, ctx: Any, call_next: Any) -> Any:
        """``initialize``: declare the capability; ``tools/call``: run it as a task when asked
        (2025-11-25 only), refuse it when its task support forbids the way it was called."""
        if ctx.method == "initialize":
            return self._declare(await call_next(ctx))
        if ctx.method != "tools/call" or ctx.protocol_version != TASK_PROTOCOL:
            return await call_next(ctx)
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        name = params.get("name")
        support = self.support.get(name) if isinstance(name, str) else None
        if support is None:  # not a served tool: the plain handler answers it
            return await call_next(ctx)
        asked = params.get("task")
        if asked is None and support == "required":
            raise _error(
                types.METHOD_NOT_FOUND,
                f"Tool {name} requires task augmentation (taskSupport: 'required')",
            )
        if asked is None:
            return await call_next(ctx)
        if support == "forbidden":
            raise _error(
                types.METHOD_NOT_FOUND,
                f"Tool {name} does not run as a task (taskSupport: 'forbidden')",
            )
        metadata = types.TaskMetadata.model_validate(asked if isinstance(asked, Mapping) else {})
        arguments = params.get("arguments")
        arguments = dict(arguments) if isinstance(arguments, Mapping) else {}
        entry = self._create(name, arguments, metadata.ttl)  # type: ignore[arg-type]
        return {"task": entry.wire(self.poll_interval_ms)}

    def _declare(self, result: Any) -> Any:
        if not isinstance(result, dict) or result.get("protocolVersion") != TASK_PROTOCOL:
            return result
        capabilities = dict(result.get("capabilities") or {})
        capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return {**result, "capabilities": capabilities}

    # -- the store ---------------------------------------------------------------------------

    def _create(self, name: str, arguments: dict[str, Any], ttl: int | None) -> _Entry:
        self._forget_expired()
        ttl_ms = self.default_ttl_ms if ttl is None else max(0, min(ttl, self.max_ttl_ms))
        entry = _Entry(task_id=secrets.token_hex(16), ttl_ms=ttl_ms)
        entry.expires = time.monotonic() + ttl_ms / 1000
        self._tasks[entry.task_id] = entry
        entry.runner = asyncio.get_running_loop().create_task(self._run(entry, name, arguments))
        return entry

    async def _run(self, entry: _Entry, name: str, arguments: dict[str, Any]) -> None:
        try:
            result = await self.run_tool(name, arguments)
            entry.result = self.wire_result(name, result)
        except asyncio.CancelledError:
            entry.end("cancelled", "The task was cancelled.")
            raise
        except Exception as exc:  # run_tool answers every call; this is a bug, said as one
            entry.end("failed", f"{type(exc).__name__}: {exc}"[:300])
            return
        failed = result.is_error
        message = result.output.strip().splitlines()[0][:300] if failed and result.output else None
        entry.end("failed" if failed else "completed", message)

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for task_id, entry in list(self._tasks.items()):
            if entry.expires <= now:
                del self._tasks[task_id]
                if entry.runner is not None and not entry.runner.done():
                    entry.runner.cancel()

    def _find(self, task_id: str) -> _Entry:
        self._forget_expired()
        entry = self._tasks.get(task_id)
        if entry is None:
            raise _error(types.INVALID_PARAMS, f"Failed to retrieve task: no task {task_id!r}")
        return entry

    # -- the task methods --------------------------------------------------------------------

    async def _on_get(self, _ctx: Any, params: Any) -> dict[str, Any]:
        return self._find(params.task_id).wire(self.poll_interval_ms)

    async def _on_result(self, _ctx: Any, params: Any) -> dict[str, Any]:
        entry = self._find(params.task_id)
        await entry.done.wait()
        if entry.result is None:  # cancelled (or broken): the call has no result to give
            reason = entry.status_message or entry.status
            raise _error(types.INVALID_PARAMS, f"task {entry.task_id} has no result: {reason}")
        meta = {**entry.result.get("_meta", {}), _RELATED: {"taskId": entry.task_id}}
        return {**entry.result, "_meta": meta}

    async def _on_cancel(self, _ctx: Any, params: Any) -> dict[str, Any]:
        entry = self._find(params.task_id)
        if entry.done.is_set():
            raise _error(types.INVALID_PARAMS, f"task {entry.task_id} is already {entry.status}")
        entry.end("cancelled", "The task was cancelled by the client.")
        if entry.runner is not None:
            entry.runner.cancel()
        return entry.wire(self.poll_interval_ms)

    async def _on_list(self, _ctx: Any, params: Any) -> dict[str, Any]:
        self._forget_expired()
        cursor = params.cursor
        if cursor is not None and not (cursor.isdigit() and int(cursor) <= len(self._tasks)):
            raise _error(types.INVALID_PARAMS, f"invalid cursor {cursor!r}")
        start = int(cursor) if cursor is not None else 0
        entries = list(self._tasks.values())[start : start + _PAGE]
        listed: dict[str, Any] = {"tasks": [e.wire(self.poll_interval_ms) for e in entries]}
        if start + _PAGE < len(self._tasks):
            listed["nextCursor"] = str(start + _PAGE)
        return listed
