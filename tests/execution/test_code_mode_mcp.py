"""A program calls the tools of a real MCP server: the connection stays in the host, each call
the program makes goes from the sandbox to the host and from the host to the server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

import tooluse
from tooluse import ScriptedBackend, ToolCall
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.execution.mcp.sync import SyncMCPToolExecutor

pytestmark = pytest.mark.slow

DEMO = str(Path(__file__).parent / "mcp_servers" / "demo_server.py")
CONFIG = MCPServerConfig(command=sys.executable, args=(DEMO,), tool_prefix="demo_")

PROGRAM = """
sums = await asyncio.gather(*[demo_add(a=i, b=i) for i in range(5)])
weather = await demo_weather(city="Paris")
try:
    await demo_fail(reason="not today")
except ToolError as e:
    print("failed:", e.message)
print([s["result"] for s in sums], type(weather).__name__, sorted(weather))
"""


def backend() -> ScriptedBackend:
    call = ToolCall(id="prog", name="run_python", arguments={"code": PROGRAM})
    return ScriptedBackend([[call], "done"])


def check(result: tooluse.RunResult) -> None:
    answer = next(m.result for m in result.messages if m.role == "tool")
    assert not answer.is_error, answer.output
    assert "failed: " in answer.output and "refused: not today" in answer.output
    assert "[0, 2, 4, 6, 8] dict" in answer.output
    inner = [t for t in result.trail if t.caller == "prog"]
    assert sorted(t.name for t in inner) == ["demo_add"] * 5 + ["demo_fail", "demo_weather"]


def test_a_program_calls_an_mcp_server_through_the_sync_client():
    with SyncMCPToolExecutor(CONFIG) as mcp:
        tools = mcp.list_tools()
        scripted = backend()
        result = tooluse.run(scripted, "q", tools=tools, code_mode=True)
    stubs = scripted.requests[0].tools[0].description
    assert "async def demo_add(a: int, b: int)" in stubs
    check(result)


def test_a_program_calls_an_mcp_server_on_the_runs_event_loop():
    async def main() -> tooluse.RunResult:
        async with MCPToolExecutor(CONFIG) as mcp:
            tools = await mcp.list_tools()
            return await tooluse.arun(backend(), "q", tools=tools, code_mode=True)

    check(asyncio.run(main()))
