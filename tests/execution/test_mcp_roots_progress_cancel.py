"""Roots the client offers, progress a server reports, and cancellation reaching the server: a
cancelled (or timed-out) tooluse call cancels its MCP request, on every path a call takes
(the async clients, the blocking facade, and MCP tools run by the loop's own executor)."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

import pytest

import tooluse
from tooluse.execution.base import CancellationToken
from tooluse.execution.mcp import (
    MCPHandlers,
    MCPProgress,
    MCPRoot,
    MCPServerConfig,
    MCPToolExecutor,
    MCPToolset,
    SyncMCPToolExecutor,
)
from tooluse.messages import ToolCall
from tooluse.providers.scripted import ScriptedBackend

pytestmark = pytest.mark.slow

RICH = str(Path(__file__).parent / "mcp_servers" / "rich_server.py")


def rich(protocol: str = "auto", **overrides) -> MCPServerConfig:
    return MCPServerConfig(
        command=sys.executable, args=(RICH,), name="rich", protocol=protocol, **overrides
    )


# -- roots -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "tool"), [("2025-11-25", "client_roots"), ("auto", "client_roots_resolved")]
)
async def test_the_server_lists_the_roots_the_client_offers(tmp_path, protocol, tool):
    roots = [tmp_path, MCPRoot(uri="file:///srv/docs", name="docs")]
    async with MCPToolExecutor(rich(protocol), handlers=MCPHandlers(roots=roots)) as mcp:
        result = await mcp.call_tool(tool)
    assert result.output.splitlines() == [
        f"{tmp_path.resolve().as_uri()} {tmp_path.name}",
        "file:///srv/docs docs",
    ]


async def test_roots_from_a_callable_are_read_at_each_request(tmp_path):
    current = [tmp_path / "a"]
    handlers = MCPHandlers(roots=lambda: current)
    async with MCPToolExecutor(rich("2025-11-25"), handlers=handlers) as mcp:
        first = (await mcp.call_tool("client_roots")).output
        current[:] = [tmp_path / "b"]
        second = (await mcp.call_tool("client_roots")).output
    assert first.endswith(" a") and second.endswith(" b")


async def test_without_roots_the_server_gets_an_error():
    async with MCPToolExecutor(rich("2025-11-25")) as mcp:
        result = await mcp.call_tool("client_roots")
    assert result.is_error and "List roots not supported" in result.output


def test_roots_are_checked():
    with pytest.raises(ValueError, match="file:// URI"):
        MCPRoot(uri="https://example.com/")
    with pytest.raises(TypeError, match="not one path"):
        MCPHandlers(roots="/tmp")
    assert MCPHandlers(roots=["file:///x"]).current_roots() == (MCPRoot(uri="file:///x"),)


# -- progress ----------------------------------------------------------------------------------


async def test_progress_reports_reach_the_callback_with_their_call():
    reports: list[MCPProgress] = []
    handlers = MCPHandlers(on_progress=reports.append)
    async with MCPToolExecutor(rich(), handlers=handlers) as mcp:
        result = await mcp.execute_async(ToolCall(id="p1", name="steps", arguments={"count": 3}))
    assert result.output == "3 steps done"
    assert [(r.progress, r.total, r.message) for r in reports] == [
        (1, 3, "step 1 of 3"),
        (2, 3, "step 2 of 3"),
        (3, 3, "step 3 of 3"),
    ]
    assert {(r.server, r.tool_name, r.call_id) for r in reports} == {("rich", "steps", "p1")}
    assert reports[-1].fraction == 1.0


def test_a_failing_progress_callback_does_not_break_the_call():
    calls: list[float] = []

    def broken(report: MCPProgress) -> None:
        calls.append(report.progress)
        raise RuntimeError("display gone")

    with SyncMCPToolExecutor(rich(), handlers=MCPHandlers(on_progress=broken)) as mcp:
        result = mcp.call_tool("steps", {"count": 2})
    assert (result.is_error, result.output) == (False, "2 steps done")
    assert calls == [1, 2]


# -- cancellation ------------------------------------------------------------------------------


async def cancelled_on_server(mcp, label: str) -> bool:
    """Whether the server saw the ``sleepy`` call ``label`` cancelled (it may take a moment)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        result = await mcp.call_tool("cancelled")
        if label in (result.structured or {}).get("result", []):
            return True
        await asyncio.sleep(0.1)
    return False


def cancelled_on_server_sync(mcp, label: str) -> bool:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if label in (mcp.call_tool("cancelled").structured or {}).get("result", []):
            return True
        time.sleep(0.1)
    return False


# The calls' own MCP timeout (120 s) is far beyond the wait above, so only a real
# cancellation can make the server record the call.


def fire_when_running(token: CancellationToken, delay: float = 0.5) -> None:
    threading.Timer(delay, token.cancel).start()


async def test_a_cancelled_toolset_batch_cancels_the_request_on_the_server():
    token = CancellationToken()
    async with MCPToolset([rich(timeout=120)]) as toolset:
        await toolset.list_tools()
        fire_when_running(token)
        [result] = await toolset.aexecute_batch(
            [ToolCall(id="c1", name="sleepy", arguments={"label": "batch"})], cancel=token
        )
        assert (result.call_id, result.is_error) == ("c1", True)
        assert "cancelled" in result.output
        assert await cancelled_on_server(toolset.executors[0], "batch")


async def test_cancelling_an_async_run_cancels_the_request_on_the_server():
    token = CancellationToken()
    model = ScriptedBackend([[ToolCall(name="sleepy", arguments={"label": "arun"})], "ok"])
    async with MCPToolExecutor(rich(timeout=120)) as mcp:
        fire_when_running(token)
        result = await tooluse.arun(model, "Sleep.", tools=await mcp.list_tools(), cancel=token)
        assert result.stop_reason.value == "cancelled"
        assert await cancelled_on_server(mcp, "arun")


def test_cancelling_a_blocking_run_cancels_the_request_on_the_server():
    """The facade's tools are blocking functions run in the loop's worker threads; a cancelled
    call's thread is told (its call token), and the MCP request is cancelled with it."""
    token = CancellationToken()
    model = ScriptedBackend([[ToolCall(name="sleepy", arguments={"label": "run"})], "ok"])
    with SyncMCPToolExecutor(rich(timeout=120)) as mcp:
        fire_when_running(token)
        result = tooluse.run(model, "Sleep.", tools=mcp.list_tools(), cancel=token)
        assert result.stop_reason.value == "cancelled"
        assert cancelled_on_server_sync(mcp, "run")


def test_a_timed_out_blocking_call_cancels_the_request_on_the_server():
    model = ScriptedBackend([[ToolCall(name="sleepy", arguments={"label": "late"})], "ok"])
    with SyncMCPToolExecutor(rich(timeout=120)) as mcp:
        result = tooluse.run(model, "Sleep.", tools=mcp.list_tools(), tool_timeout=0.5)
        [tool_message] = [m for m in result.messages if m.role == "tool"]
        assert "timed out" in tool_message.result.output
        assert cancelled_on_server_sync(mcp, "late")


def test_the_blocking_facade_as_executor_cancels_on_the_server():
    token = CancellationToken()
    with SyncMCPToolExecutor(rich(timeout=120)) as mcp:
        mcp.list_tools()
        fire_when_running(token)
        [result] = mcp.execute_batch(
            [ToolCall(name="sleepy", arguments={"label": "facade"})], cancel=token
        )
        assert result.is_error and "cancelled" in result.output
        assert cancelled_on_server_sync(mcp, "facade")
