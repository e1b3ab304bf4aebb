"""MCP tasks on the client (protocol 2025-11-25): a tool call run as a task, and the task
requests (``tasks/get``, ``tasks/result``, ``tasks/cancel``, ``tasks/list``).

When a tool runs as a task: the server must declare ``tasks.requests.tools.call`` and the tool
``execution.taskSupport``; ``required`` always runs as a task, ``optional`` when the call may
take longer than ``MCPServerConfig.task_threshold`` seconds (its timeout is longer: 60 s by
default), since a long call should not hang on one open request. The protocol revision must be
2025-11-25 (later revisions moved tasks to an extension).

How: ``tools/call`` with ``task: {ttl}`` answers at once with the task; ``tasks/get`` is polled
at the server's ``pollInterval`` (1 s when it gives none; never busier than every 50 ms) until
the task ends or needs input (``input_required``); then ``tasks/result`` waits for the result,
and the server's requests meanwhile (elicitation, sampling, tagged with the task) are answered
by the same :class:`~tooluse.execution.mcp.MCPHandlers` as any other. The result is checked
like a plain call's (output schema included). Each status change goes to ``on_progress`` (one
step each, the status and its message as the text). A call that times out or is cancelled
cancels its task (``tasks/cancel``, when the server offers it) before it ends.

The SDK (``mcp`` 2.x) has the task types but never sends the task requests, so they are sent
raw through :func:`~tooluse.execution.mcp.sdk.send_raw`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tooluse.errors import MCPError

__all__ = ["MCPTask", "MCPTasks", "ToolCallTask", "wants_task"]

logger = logging.getLogger("tooluse.mcp")

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL = frozenset({"completed", "failed", "cancelled"})

#: Seconds between polls when the server suggests none, and the shortest wait allowed.
DEFAULT_POLL = 1.0
MIN_POLL = 0.05
#: How long a task's result is asked to be kept beyond the call's own time budget.
TTL_MARGIN = 60.0
#: Seconds allowed for the ``tasks/cancel`` sent when a call gives up.
CANCEL_TIMEOUT = 5.0


@dataclass(frozen=True, kw_only=True)
class MCPTask:
    """A task's state as the server reports it (times are ISO 8601 strings; ``ttl_ms`` is
    ``None`` for unlimited)."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str = ""
    last_updated_at: str = ""
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None

    @property
    def terminal(self) -> bool:
        """``completed``, ``failed`` or ``cancelled``: the task will not change again."""
        return self.status in TERMINAL

    @classmethod
    def from_wire(cls, raw: Any) -> MCPTask:
        """A task from its JSON (a ``Task``, ``GetTaskResult`` or ``CancelTaskResult``);
        ``ValueError`` when it is not one."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        task = mcp_sdk.mcp_types.Task.model_validate(raw, by_name=False)
        return cls(
            task_id=task.task_id,
            status=task.status,
            status_message=task.status_message,
            created_at=task.created_at,
            last_updated_at=task.last_updated_at,
            ttl_ms=task.ttl,
            poll_interval_ms=task.poll_interval,
        )


def wants_task(support: Any, *, offered: bool, seconds: float, threshold: float | None) -> bool:
    """Whether a call runs as a task (see the module docs): ``support`` is the tool's
    ``execution.taskSupport``, ``offered`` whether the server runs tool calls as tasks."""
    if not offered:
        return False
    if support == "required":
        return True
    return support == "optional" and threshold is not None and seconds > threshold


ProgressReport = Callable[[float, "float | None", "str | None"], Awaitable[None]]


class ToolCallTask:
    """One tool call run as a task on ``client`` (an SDK ``Client``), within ``seconds``.

    :meth:`run` returns the SDK's ``CallToolResult``; :attr:`task` is the task's last known
    state (``None`` until the server created it). Raises the SDK's ``MCPError`` (a
    ``REQUEST_TIMEOUT`` one when the time is up), ``ValueError`` for replies that are not what
    the protocol says, ``RuntimeError`` for a result that breaks the tool's output schema.
    """

    def __init__(  # noqa: PLR0913 - the call and its settings, all keyword-only
        self,
        client: Any,
        name: str,
        arguments: Mapping[str, Any],
        *,
        seconds: float,
        can_cancel: bool = True,
        on_progress: ProgressReport | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.name = name
        self.arguments = dict(arguments)
        self.seconds = seconds
        self.can_cancel = can_cancel
        self.on_progress = on_progress
        self.task: MCPTask | None = None
        self._sleep = sleep
        self._steps = 0
        self._deadline = 0.0

    def _remaining(self) -> float:
        return self._deadline - asyncio.get_running_loop().time()

    async def _send(self, method: str, params: dict[str, Any]) -> Any:
        from tooluse.execution.mcp import sdk as mcp_sdk

        remaining = self._remaining()
        if remaining <= 0:
            raise mcp_sdk.SDKError(mcp_sdk.REQUEST_TIMEOUT, f"no result within {self.seconds:g}s")
        return await mcp_sdk.send_raw(self.client, method, params, remaining)

    async def run(self) -> Any:
        """Create the task, follow it and return its result (see the class docs)."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        self._deadline = asyncio.get_running_loop().time() + self.seconds
        ttl = int((self.seconds + TTL_MARGIN) * 1000)
        params = {"name": self.name, "arguments": self.arguments, "task": {"ttl": ttl}}
        created = await self._send("tools/call", params)
        if isinstance(created, dict) and "task" not in created and "content" in created:
            # A server without the task capability runs the call as a plain one (as it must).
            result = mcp_sdk.mcp_types.CallToolResult.model_validate(created, by_name=False)
        else:
            try:
                await self._track(MCPTask.from_wire(_task_of(created)))
                result = await self._follow()
            except BaseException:
                await self._cancel_quietly()
                raise
        await mcp_sdk.check_tool_result(self.client, self.name, result)
        return result

    async def _follow(self) -> Any:
        """Poll until the task ends or needs input, then fetch its result."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        assert self.task is not None
        while not self.task.terminal and self.task.status != "input_required":
            await self._sleep(self._poll_seconds())
            raw = await self._send("tasks/get", {"taskId": self.task.task_id})
            await self._track(MCPTask.from_wire(raw))
        if self.task.status == "cancelled":
            reason = self.task.status_message or "no reason given"
            raise mcp_sdk.SDKError(
                mcp_sdk.mcp_types.INTERNAL_ERROR, f"the task was cancelled: {reason}"
            )
        # For input_required this waits while the server asks its questions (answered by the
        # client's handlers), and then for the end of the task.
        raw = await self._send("tasks/result", {"taskId": self.task.task_id})
        result = mcp_sdk.mcp_types.CallToolResult.model_validate(raw, by_name=False)
        if not self.task.terminal:  # the result exists, so the task has ended
            status: TaskStatus = "failed" if result.is_error else "completed"
            self.task = dataclasses.replace(self.task, status=status)
        return result

    def _poll_seconds(self) -> float:
        assert self.task is not None
        interval = self.task.poll_interval_ms
        seconds = interval / 1000 if interval is not None else DEFAULT_POLL
        return max(MIN_POLL, min(seconds, max(self._remaining(), MIN_POLL)))

    async def _track(self, task: MCPTask) -> None:
        """Remember the task's state; a change of status or message is reported as progress."""
        before = self.task
        self.task = task
        changed = before is None or (before.status, before.status_message) != (
            task.status,
            task.status_message,
        )
        if changed and self.on_progress is not None:
            self._steps += 1
            text = f"{task.status}: {task.status_message}" if task.status_message else task.status
            await self.on_progress(float(self._steps), None, text)

    async def _cancel_quietly(self) -> None:
        """``tasks/cancel`` for a task still running when the call gives up (best effort: the
        call is failing or being cancelled anyway)."""
        task = self.task
        if task is None or task.terminal or not self.can_cancel:
            return
        from tooluse.execution.mcp import sdk as mcp_sdk

        request = mcp_sdk.send_raw(
            self.client, "tasks/cancel", {"taskId": task.task_id}, CANCEL_TIMEOUT
        )
        # Shielded: a call being cancelled must still tell the server to stop its task.
        pending = asyncio.ensure_future(request)
        with contextlib.suppress(BaseException):
            await asyncio.shield(pending)
        if pending.done() and not pending.cancelled() and pending.exception() is None:
            with contextlib.suppress(ValueError):
                self.task = MCPTask.from_wire(pending.result())
        elif not pending.done():
            pending.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.info("MCP tasks/cancel failed: %s", future.exception())


def _task_of(created: Any) -> Any:
    if not isinstance(created, dict) or not isinstance(created.get("task"), dict):
        raise ValueError(
            f"a task-augmented tools/call was not answered with a task: {created!r:.200}"
        )
    return created["task"]


class MCPTasks:
    """The task requests of one server, for :class:`~tooluse.execution.mcp.MCPToolExecutor`
    (a mixin): a task's state, cancelling it, listing tasks."""

    config: Any

    async def _ensure_connection(self) -> Any: ...  # provided by MCPToolExecutor

    async def _task_request(self, what: str, method: str, params: dict[str, Any] | None) -> Any:
        from tooluse.execution.mcp import sdk as mcp_sdk

        client = (await self._ensure_connection()).client
        try:
            return await mcp_sdk.send_raw(client, method, params, self.config.timeout)
        except mcp_sdk.SDKError as exc:
            raise MCPError(f"MCP server {self.config.label!r} could not {what}: {exc}") from exc

    async def get_task(self, task_id: str) -> MCPTask:
        """A task's current state (``tasks/get``)."""
        raw = await self._task_request(f"report task {task_id}", "tasks/get", {"taskId": task_id})
        return _checked(raw, self.config.label)

    async def cancel_task(self, task_id: str) -> MCPTask:
        """Cancel a task (``tasks/cancel``); its state afterwards."""
        raw = await self._task_request(
            f"cancel task {task_id}", "tasks/cancel", {"taskId": task_id}
        )
        return _checked(raw, self.config.label)

    async def list_tasks(self) -> tuple[MCPTask, ...]:
        """The server's tasks (``tasks/list``, every page)."""
        found: list[MCPTask] = []
        cursor: str | None = None
        for _ in range(1000):  # a server that pages forever must not hang us
            params = {"cursor": cursor} if cursor else None
            raw = await self._task_request("list its tasks", "tasks/list", params)
            entries = raw.get("tasks") if isinstance(raw, dict) else None
            if not isinstance(entries, list):
                raise MCPError(f"MCP server {self.config.label!r} sent a malformed task list")
            found.extend(_checked(entry, self.config.label) for entry in entries)
            cursor = raw.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return tuple(found)


def _checked(raw: Any, label: str) -> MCPTask:
    try:
        return MCPTask.from_wire(raw)
    except ValueError as exc:
        raise MCPError(f"MCP server {label!r} sent a malformed task: {exc}") from exc
