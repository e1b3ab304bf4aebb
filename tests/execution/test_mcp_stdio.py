"""MCPToolExecutor against real stdio MCP servers started as subprocesses.

``mcp_servers/demo_server.py`` is built with the SDK's ``MCPServer``;
``mcp_servers/broken_server.py`` is hand-written JSON-RPC that misbehaves on purpose.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tooluse.errors import MCPError, ToolDefinitionError
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor, MCPToolset
from tooluse.messages import ToolCall

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parent / "mcp_servers"
DEMO = str(SERVERS / "demo_server.py")
BROKEN = str(SERVERS / "broken_server.py")


def demo_config(**overrides) -> MCPServerConfig:
    return MCPServerConfig(command=sys.executable, args=(DEMO,), **overrides)


async def test_list_tools_keeps_schemas_and_annotations():
    async with MCPToolExecutor(demo_config()) as executor:
        tools = {tool.name: tool for tool in await executor.list_tools()}
        assert executor.protocol_version is not None
    assert {"add", "echo", "weather", "fail", "slow", "crash", "pid"} <= set(tools)
    add = tools["add"]
    assert add.description == "Add two integers."
    assert add.input_schema["required"] == ["a", "b"]
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert add.output_schema is not None
    assert add.output_schema["properties"]["result"]["type"] == "integer"
    assert add.annotations == {"readOnlyHint": True}
    assert add.function is not None
    weather = tools["weather"]
    assert set(weather.output_schema["required"]) == {"city", "celsius"}


async def test_calls_text_structured_and_tool_errors():
    async with MCPToolExecutor(demo_config()) as executor:
        added = await executor.execute_async(
            ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})
        )
        weather = await executor.call_tool("weather", {"city": "Oslo"})
        failed = await executor.execute_async(
            ToolCall(id="c3", name="fail", arguments={"reason": "no"})
        )
    assert (added.call_id, added.output, added.is_error) == ("c1", "5", False)
    assert added.structured == {"result": 5}
    assert weather.structured == {"city": "Oslo", "celsius": 21.5}
    assert '"celsius": 21.5' in weather.output
    assert failed.call_id == "c3"
    assert failed.is_error
    assert "refused: no" in failed.output


async def test_unknown_tool_is_a_failure_naming_the_tools():
    async with MCPToolExecutor(demo_config()) as executor:
        result = await executor.execute_async(ToolCall(id="x", name="nope"))
    assert result.is_error and result.call_id == "x"
    assert "unknown tool 'nope'" in result.output
    assert "add" in result.output


async def test_invalid_arguments_are_rejected_before_sending():
    async with MCPToolExecutor(demo_config()) as executor:
        rejected = await executor.execute_async(ToolCall(name="add", arguments={"a": "x"}))
        await executor.call_tool("echo", {"text": "sync point"})  # the server has logged by now
        stderr_before = executor.server_stderr
        # Control: the same arguments sent without our check reach the server, which logs them.
        sent = await executor.execute_async(
            ToolCall(name="add", arguments={"a": "x"}), validate=False
        )
        await executor.call_tool("echo", {"text": "sync point"})
        stderr_after = executor.server_stderr
    assert rejected.is_error
    assert "b" in rejected.output and "missing" in rejected.output
    assert "rejected arguments" not in stderr_before
    assert sent.is_error
    assert "rejected arguments" in stderr_after


async def test_non_object_raw_arguments_are_rejected():
    async with MCPToolExecutor(demo_config()) as executor:
        result = await executor.execute_async(
            ToolCall(name="echo", arguments={}, raw_arguments="[1, 2")
        )
        empty = await executor.execute_async(ToolCall(name="pid", arguments={}, raw_arguments="{}"))
    assert result.is_error
    assert "JSON object" in result.output
    assert not empty.is_error  # "{}" is an empty object, not broken JSON


async def test_hanging_tool_times_out_and_executor_stays_usable():
    async with MCPToolExecutor(demo_config(timeout=1.0)) as executor:
        slow = await executor.execute_async(ToolCall(name="slow", arguments={"seconds": 30}))
        after = await executor.call_tool("echo", {"text": "still here"})
        quick = await executor.call_tool("slow", {"seconds": 0.01}, timeout=10)
    assert slow.is_error
    assert "timed out after 1s" in slow.output
    assert after.output == "still here"
    assert quick.output == "done"


async def test_crash_mid_call_fails_then_reconnects():
    async with MCPToolExecutor(demo_config()) as executor:
        first_pid = (await executor.call_tool("pid")).structured["result"]
        crashed = await executor.execute_async(ToolCall(id="boom", name="crash"))
        second_pid = (await executor.call_tool("pid")).structured["result"]
        assert executor.restarts == 1
    assert crashed.call_id == "boom"
    assert crashed.is_error
    assert "closed the connection" in crashed.output
    assert first_pid != second_pid


async def test_server_killed_while_idle_is_restarted_without_losing_the_call():
    async with MCPToolExecutor(demo_config()) as executor:
        pid = (await executor.call_tool("pid")).structured["result"]
        os.kill(pid, signal.SIGKILL)
        for _ in range(200):  # wait until the connection has noticed (no timing assertion)
            if executor._connection is not None and not executor._connection.alive:
                break
            await asyncio.sleep(0.01)
        echoed = await executor.call_tool("echo", {"text": "after restart"})
        assert executor.restarts == 1
    assert echoed.output == "after restart"


async def test_server_that_dies_on_start_reports_its_stderr():
    config = MCPServerConfig(command=sys.executable, args=(BROKEN, "--die-on-start"))
    with pytest.raises(MCPError) as info:
        async with MCPToolExecutor(config):
            pass
    message = str(info.value)
    assert "failed to start" in message
    assert "fatal: configuration file missing" in message


async def test_missing_command_is_a_clear_error():
    with pytest.raises(MCPError, match="command not found: '/no/such/server'"):
        async with MCPToolExecutor(MCPServerConfig(command="/no/such/server")):
            pass


async def test_server_that_never_answers_hits_the_startup_timeout():
    config = MCPServerConfig(
        command=sys.executable,
        args=("-c", "import sys, time; sys.stderr.write('warming up\\n'); time.sleep(60)"),
        startup_timeout=1.0,
    )
    with pytest.raises(MCPError) as info:
        async with MCPToolExecutor(config):
            pass
    assert "no handshake within 1s" in str(info.value)
    assert "warming up" in str(info.value)


async def test_broken_server_invalid_schema_and_malformed_content():
    config = MCPServerConfig(command=sys.executable, args=(BROKEN,))
    async with MCPToolExecutor(config) as executor:
        names = [tool.name for tool in await executor.list_tools()]
        bad_schema = await executor.call_tool("bad_schema", {"x": 1})
        garbled = await executor.call_tool("garbled")
        mixed = await executor.call_tool("mixed")
        ok = await executor.call_tool("ok")
        rejected = dict(executor.rejected_tools)
    assert names == ["ok", "garbled", "mixed", "huge"]
    assert "properties/x/type" in rejected["bad_schema"]
    assert bad_schema.is_error and "invalid input schema" in bad_schema.output
    assert garbled.is_error and "malformed result" in garbled.output
    assert not mixed.is_error
    assert mixed.output.splitlines() == [
        "see attachments",
        "[image: image/png, 5 bytes]",
        "[resource link: report <file:///tmp/report.txt>]",
    ]
    assert ok.output == "fine"


async def test_tool_list_is_cached_until_refreshed():
    async with MCPToolExecutor(demo_config()) as executor:
        first = await executor.list_tools()
        assert await executor.list_tools() is first
        refreshed = await executor.list_tools(refresh=True)
    assert refreshed is not first
    assert [tool.name for tool in refreshed] == [tool.name for tool in first]


async def test_prefix_and_function_of_listed_tools():
    async with MCPToolExecutor(demo_config(tool_prefix="demo_")) as executor:
        tools = {tool.name: tool for tool in await executor.list_tools()}
        by_call = await executor.call_tool("demo_add", {"a": 1, "b": 1})
        by_function = await tools["demo_echo"].function(text="via function")
        unprefixed = await executor.call_tool("add", {"a": 1, "b": 1})
    assert "demo_add" in tools and "add" not in tools
    assert tools["demo_add"].metadata["mcp_name"] == "add"
    assert by_call.output == "2"
    assert by_function.output == "via function" and not by_function.is_error
    assert unprefixed.is_error and "unknown tool 'add'" in unprefixed.output


async def test_concurrent_batch_keeps_order_and_ids():
    async with MCPToolExecutor(demo_config()) as executor:
        calls = [ToolCall(id=f"c{i}", name="echo", arguments={"text": str(i)}) for i in range(5)]
        calls.insert(2, ToolCall(id="bad", name="add", arguments={}))
        results = await executor.execute_batch_async(calls)
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert [r.output for r in results if not r.is_error] == ["0", "1", "2", "3", "4"]
    assert results[2].is_error


async def test_closed_executor_answers_with_failures():
    executor = MCPToolExecutor(demo_config())
    async with executor:
        await executor.list_tools()
    result = await executor.execute_async(ToolCall(id="late", name="echo", arguments={"text": "x"}))
    assert result.is_error and result.call_id == "late"
    assert "closed" in result.output


async def test_toolset_routes_calls_across_servers():
    configs = [
        demo_config(tool_prefix="a_", name="first"),
        demo_config(tool_prefix="b_", name="second"),
    ]
    async with MCPToolset(configs) as toolset:
        names = [tool.name for tool in await toolset.list_tools()]
        pid_a = await toolset.execute_async(ToolCall(name="a_pid"))
        pid_b = await toolset.execute_async(ToolCall(name="b_pid"))
        missing = await toolset.execute_async(ToolCall(id="m", name="pid"))
    assert "a_add" in names and "b_add" in names
    assert pid_a.structured["result"] != pid_b.structured["result"]
    assert missing.is_error and missing.call_id == "m"


async def test_toolset_name_clash_is_an_error_naming_both_servers():
    configs = [demo_config(name="first"), demo_config(name="second")]
    async with MCPToolset(configs) as toolset:
        with pytest.raises(ToolDefinitionError, match="'first' and 'second'"):
            await toolset.list_tools()


async def test_toolset_start_failure_stops_the_others():
    configs = [demo_config(name="good"), MCPServerConfig(command="/no/such/server")]
    toolset = MCPToolset(configs)
    with pytest.raises(MCPError, match="command not found"):
        await toolset.connect()
    assert toolset.executors[0]._connection is None


async def test_include_and_exclude_filters_hide_tools():
    config = demo_config(include_tools=("add", "echo", "crash"), exclude_tools=("crash",))
    async with MCPToolExecutor(config) as executor:
        names = [tool.name for tool in await executor.list_tools()]
        hidden = await executor.call_tool("crash")
        shown = await executor.call_tool("echo", {"text": "visible"})
    assert names == ["add", "echo"]
    assert hidden.is_error and "unknown tool 'crash'" in hidden.output
    assert shown.output == "visible"


async def test_toolset_from_mcp_servers_json(tmp_path):
    path = tmp_path / "servers.json"
    entry = {"command": sys.executable, "args": [DEMO]}
    path.write_text(json.dumps({"mcpServers": {"left": entry, "right": entry}}))
    async with MCPToolset.from_config(path) as toolset:
        names = {tool.name for tool in await toolset.list_tools()}
        result = await toolset.execute_async(ToolCall(name="right_add", arguments={"a": 1, "b": 2}))
    assert {"left_add", "right_add", "left_echo"} <= names
    assert result.output == "3"


async def test_a_cancelled_call_leaves_the_executor_usable():
    async with MCPToolExecutor(demo_config()) as executor:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(executor.call_tool("slow", {"seconds": 30}), timeout=0.5)
        after = await executor.call_tool("echo", {"text": "after cancel"})
        assert executor.restarts == 0
    assert after.output == "after cancel"
