"""The rules of MCP tasks as logic: when a call runs as a task, how the task is polled, when it
is cancelled, and which tools a server lets run as tasks. The protocol itself is tested against
real servers in test_mcp_tasks.py; here a scripted session answers, so every wait can be seen."""

from __future__ import annotations

import asyncio

import pytest

from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.execution.mcp.served import task_support_of
from tooluse.execution.mcp.tasks import ToolCallTask, wants_task


def task(status: str, poll: int | None = None, message: str | None = None) -> dict:
    wire = {
        "taskId": "t-1",
        "status": status,
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:01Z",
        "ttl": 60000,
    }
    if poll is not None:
        wire["pollInterval"] = poll
    if message is not None:
        wire["statusMessage"] = message
    return wire


RESULT = {"content": [{"type": "text", "text": "done"}], "isError": False}


class ScriptedSession:
    """Answers each request with the next scripted reply (an exception is raised)."""

    def __init__(self, replies: list) -> None:
        self.replies = list(replies)
        self.sent: list[tuple[str, dict | None]] = []
        self.hanging = asyncio.Event()
        self._dispatcher = self

    def _stamp(self, data: dict, options: dict) -> None:
        options.setdefault("headers", {})

    async def send_raw_request(self, method: str, params: dict | None, options: dict):
        self.sent.append((method, params))
        if method == "tasks/cancel":
            return task("cancelled")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if reply == "hang":
            self.hanging.set()
            await asyncio.sleep(3600)
        return reply

    async def validate_tool_result(self, name: str, result) -> None:
        return None


class ScriptedClient:
    def __init__(self, replies: list) -> None:
        self.session = ScriptedSession(replies)


def runner(replies: list, **options):
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    client = ScriptedClient(replies)
    call = ToolCallTask(client, "research", {"q": 1}, seconds=60, sleep=sleep, **options)
    return call, client.session, sleeps


async def test_the_task_is_polled_at_the_servers_interval_until_it_ends():
    call, session, sleeps = runner(
        [{"task": task("working", poll=250)}, task("working", 1500), task("completed"), RESULT]
    )
    result = await call.run()
    assert result.content[0].text == "done"
    assert sleeps == [0.25, 1.5]  # each wait is the interval of the reply before it
    methods = [method for method, _ in session.sent]
    assert methods == ["tools/call", "tasks/get", "tasks/get", "tasks/result"]
    created = session.sent[0][1]
    assert created["name"] == "research" and created["task"]["ttl"] == (60 + 60) * 1000
    assert call.task is not None and call.task.status == "completed"


@pytest.mark.parametrize(("poll", "expected"), [(None, 1.0), (0, 0.05), (1, 0.05)])
async def test_missing_or_tiny_poll_intervals_are_bounded(poll, expected):
    call, _, sleeps = runner([{"task": task("working", poll=poll)}, task("completed"), RESULT])
    await call.run()
    assert sleeps == [expected]


async def test_input_required_fetches_the_result_at_once():
    """The server's questions come while tasks/result waits: no more polling then."""
    call, session, sleeps = runner([{"task": task("input_required", poll=500)}, RESULT])
    await call.run()
    assert [method for method, _ in session.sent] == ["tools/call", "tasks/result"]
    assert sleeps == []
    assert call.task.status == "completed"  # the result came, so the task ended


async def test_status_changes_are_reported_as_progress():
    reports = []

    async def on_progress(progress, total, message):
        reports.append((progress, message))

    replies = [
        {"task": task("working", 10, "step one")},
        task("working", 10, "step one"),  # unchanged: not reported again
        task("working", 10, "step two"),
        task("completed", 10, "step two"),
        RESULT,
    ]
    call, _, _ = runner(replies, on_progress=on_progress)
    await call.run()
    assert reports == [
        (1.0, "working: step one"),
        (2.0, "working: step two"),
        (3.0, "completed: step two"),
    ]


async def test_a_failing_poll_cancels_the_task_on_the_server():
    error = mcp_sdk.SDKError(-32603, "poll broke")
    call, session, _ = runner([{"task": task("working", 10)}, error])
    with pytest.raises(mcp_sdk.SDKError, match="poll broke"):
        await call.run()
    assert session.sent[-1] == ("tasks/cancel", {"taskId": "t-1"})


async def test_a_cancelled_call_cancels_its_task():
    call, session, _ = runner([{"task": task("input_required", 10)}, "hang"])
    running = asyncio.ensure_future(call.run())
    await session.hanging.wait()
    assert [method for method, _ in session.sent] == ["tools/call", "tasks/result"]
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert session.sent[-1] == ("tasks/cancel", {"taskId": "t-1"})


async def test_no_cancel_is_sent_when_the_server_offers_none():
    error = mcp_sdk.SDKError(-32603, "poll broke")
    call, session, _ = runner([{"task": task("working", 10)}, error], can_cancel=False)
    with pytest.raises(mcp_sdk.SDKError):
        await call.run()
    assert "tasks/cancel" not in [method for method, _ in session.sent]


async def test_a_task_the_server_cancelled_is_an_error_with_its_reason():
    call, _, _ = runner([{"task": task("working", 10)}, task("cancelled", 10, "shutting down")])
    with pytest.raises(mcp_sdk.SDKError, match="cancelled: shutting down"):
        await call.run()


async def test_a_server_that_ignores_the_task_answers_plainly():
    call, session, _ = runner([RESULT])
    result = await call.run()
    assert result.content[0].text == "done" and call.task is None
    assert [method for method, _ in session.sent] == ["tools/call"]


@pytest.mark.parametrize(
    ("support", "offered", "seconds", "threshold", "expected"),
    [
        ("required", True, 1.0, 60.0, True),
        ("required", False, 1.0, 60.0, False),  # no tasks capability: never
        ("optional", True, 61.0, 60.0, True),  # a long call
        ("optional", True, 60.0, 60.0, False),
        ("optional", True, 600.0, None, False),  # threshold None: optional never
        ("optional", False, 600.0, 60.0, False),
        (None, True, 600.0, 60.0, False),  # no taskSupport means forbidden
        ("forbidden", True, 600.0, 0.0, False),
    ],
)
def test_when_a_call_runs_as_a_task(support, offered, seconds, threshold, expected):
    assert wants_task(support, offered=offered, seconds=seconds, threshold=threshold) is expected


def test_which_served_tools_may_run_as_tasks():
    assert task_support_of("optional", ["a", "b"]) == {"a": "optional", "b": "optional"}
    assert task_support_of({"b": "required"}, ["a", "b"]) == {"a": "forbidden", "b": "required"}
    with pytest.raises(ValueError, match="not served: c"):
        task_support_of({"c": "optional"}, ["a"])
    with pytest.raises(ValueError, match="not 'sometimes'"):
        task_support_of("sometimes", ["a"])
