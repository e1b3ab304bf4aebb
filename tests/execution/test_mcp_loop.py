"""MCP tools inside the tool loop (``tooluse.run`` / ``tooluse.arun``), mixed with local tools.

The model is a ScriptedBackend (loop logic only); the MCP servers are real subprocesses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tooluse
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.execution.mcp.sync import SyncMCPToolExecutor
from tooluse.messages import ToolCall
from tooluse.providers.scripted import ScriptedBackend
from tooluse.sync_bridge import run_coroutine_blocking

pytestmark = pytest.mark.slow

DEMO = str(Path(__file__).parent / "mcp_servers" / "demo_server.py")
CONFIG = MCPServerConfig(command=sys.executable, args=(DEMO,), tool_prefix="demo_")


def shout(text: str) -> str:
    """Upper-case the text.

    Args:
        text: What to shout.
    """
    return text.upper()


def tool_outputs(result) -> dict[str, tuple[str, bool]]:
    return {
        message.result.call_id: (message.result.output, message.result.is_error)
        for message in result.messages
        if message.role == "tool"
    }


def script() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [
                ToolCall(id="a", name="demo_add", arguments={"a": 40, "b": 2}),
                ToolCall(id="b", name="shout", arguments={"text": "hi"}),
                ToolCall(id="c", name="demo_fail", arguments={"reason": "not today"}),
                ToolCall(id="d", name="demo_add", arguments={"a": "forty"}),
            ],
            "The sum is 42.",
        ]
    )


async def test_arun_mixes_mcp_and_local_tools():
    backend = script()
    async with MCPToolExecutor(CONFIG) as mcp:
        tools = [*await mcp.list_tools(), shout]
        result = await tooluse.arun(backend, "add 40 and 2", tools=tools)
    outputs = tool_outputs(result)
    assert outputs["a"] == ("42", False)
    assert outputs["b"] == ("HI", False)
    assert outputs["c"][1] is True and "refused: not today" in outputs["c"][0]
    assert outputs["d"][1] is True and "b" in outputs["d"][0]  # rejected by validation
    assert result.final_text == "The sum is 42."
    offered = {tool.name for tool in backend.requests[0].tools}
    assert {"demo_add", "demo_echo", "shout"} <= offered
    sent_add = next(tool for tool in backend.requests[0].tools if tool.name == "demo_add")
    assert sent_add.input_schema["required"] == ["a", "b"]
    structured = [
        m.result.structured for m in result.messages if m.role == "tool" and m.result.call_id == "a"
    ]
    assert structured == [{"result": 42}]


def test_run_with_the_sync_facade():
    backend = script()
    with SyncMCPToolExecutor(CONFIG) as mcp:
        result = tooluse.run(backend, "add 40 and 2", tools=[*mcp.list_tools(), shout])
    outputs = tool_outputs(result)
    assert outputs["a"] == ("42", False)
    assert outputs["b"] == ("HI", False)
    assert outputs["c"][1] is True and "refused: not today" in outputs["c"][0]
    assert outputs["d"][1] is True
    assert result.final_text == "The sum is 42."


def test_sync_facade_calls_and_lists():
    with SyncMCPToolExecutor(CONFIG) as mcp:
        tools = {tool.name: tool for tool in mcp.list_tools()}
        direct = tools["demo_echo"].function(text="plain call")
        executed = mcp.execute(ToolCall(id="s", name="demo_add", arguments={"a": 1, "b": 2}))
        batch = mcp.execute_batch(
            [ToolCall(id=str(i), name="demo_echo", arguments={"text": str(i)}) for i in range(3)]
        )
    assert direct.output == "plain call"
    assert (executed.call_id, executed.output) == ("s", "3")
    assert [r.output for r in batch] == ["0", "1", "2"]


def test_sync_facade_start_failure_raises_and_cleans_up():
    facade = SyncMCPToolExecutor(MCPServerConfig(command="/no/such/server"))
    with pytest.raises(tooluse.MCPError, match="command not found"):
        facade.connect()
    assert facade._thread is None  # the background loop was stopped


async def test_async_tools_from_another_loop_fail_clearly():
    async with MCPToolExecutor(CONFIG) as mcp:
        tools = {tool.name: tool for tool in await mcp.list_tools()}
        # The sync loop runs async tools on a private event loop, not the connection's.
        result = run_coroutine_blocking(tools["demo_echo"].function(text="x"))
    assert result.is_error
    assert "another event loop" in result.output


def _calls_only_mcp() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [
                ToolCall(id="a", name="demo_add", arguments={"a": 40, "b": 2}),
                ToolCall(id="b", name="demo_add", arguments={"a": "forty"}),
            ],
            "done",
        ]
    )


async def test_an_mcp_client_is_an_executor_of_the_loop():
    from tooluse.errors import MCPError
    from tooluse.loop import build_setup, drive_async, initial_history

    async with MCPToolExecutor(CONFIG) as mcp:
        with pytest.raises(MCPError, match="list_tools"):
            mcp.definitions  # noqa: B018 - nothing listed yet: a clear error, not an empty list
        await mcp.list_tools()
        backend = _calls_only_mcp()
        setup = build_setup(backend, executor=mcp)
        events = [e async for e in drive_async(backend, setup, initial_history("q", None))]
    result = events[-1].result
    outputs = {t.call_id: (t.output, t.is_error) for t in result.trail}
    assert outputs["a"] == ("42", False)
    assert outputs["b"][1] and "a" in outputs["b"][0]  # invalid arguments answered, not raised
    with pytest.raises(TypeError, match="SyncMCPToolExecutor"):
        mcp.execute_batch([ToolCall(id="x", name="demo_add", arguments={"a": 1, "b": 2})])


def test_the_blocking_mcp_facade_is_an_executor_of_the_sync_loop():
    from tooluse.loop import build_setup, drive_sync, initial_history

    with SyncMCPToolExecutor(CONFIG) as mcp:
        assert "demo_add" in {d.name for d in mcp.definitions}
        backend = _calls_only_mcp()
        setup = build_setup(backend, executor=mcp)
        result = list(drive_sync(backend, setup, initial_history("q", None)))[-1].result
    assert [t.output for t in result.trail][0] == "42"
    assert result.final_text == "done"


async def test_a_fired_token_answers_running_mcp_calls_cancelled():
    import asyncio

    from tooluse.execution import CancellationToken

    token = CancellationToken()
    async with MCPToolExecutor(CONFIG) as mcp:
        await mcp.list_tools()
        calls = [
            ToolCall(id="s", name="demo_slow", arguments={"seconds": 60}),
            ToolCall(id="a", name="demo_add", arguments={"a": 1, "b": 2}),
        ]
        batch = asyncio.ensure_future(mcp.aexecute_batch(calls, cancel=token))
        await asyncio.sleep(0.5)  # the add is done; the slow call is still running
        token.cancel()
        slow, added = await asyncio.wait_for(batch, 30)  # far less than the 60 s it would take
    assert slow.is_error and "cancelled" in slow.output
    assert added.output == "3"


async def test_resources_and_prompts_of_a_real_server():
    from tooluse.media import Image

    async with MCPToolExecutor(CONFIG) as mcp:
        resources = {r.uri: r for r in await mcp.list_resources()}
        assert resources["notes://today"].description == "Today's notes."
        assert await mcp.read_resource("notes://today") == ("buy milk",)
        (image,) = await mcp.read_resource("images://dot")
        assert isinstance(image, Image) and image.data == b"\x89PNG dot"
        (prompt,) = await mcp.list_prompts()
        assert prompt.name == "ask_weather" and prompt.required == ("city",)
        messages = await mcp.get_prompt("ask_weather", {"city": "Oslo"})
        assert [(m.role, m.content) for m in messages] == [("user", "What is the weather in Oslo?")]
        # a prompt starts a run like any messages
        result = await tooluse.arun(ScriptedBackend(["Sunny."]), messages)
        assert result.final_text == "Sunny."
        from tooluse.errors import MCPError

        with pytest.raises(MCPError, match="could not read"):
            await mcp.read_resource("notes://missing")


def test_the_blocking_facade_reads_resources_and_prompts():
    with SyncMCPToolExecutor(CONFIG) as mcp:
        assert "notes://today" in {r.uri for r in mcp.list_resources()}
        assert mcp.read_resource("notes://today") == ("buy milk",)
        assert mcp.get_prompt("ask_weather", {"city": "Rome"})[0].content.endswith("Rome?")
