"""MCPToolServer: tooluse tools behind MCP, checked with the SDK's own client (in process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client, MCPError

from tooluse.errors import ToolDefinitionError
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.execution.mcp.server import MCPToolServer, load_module_tools
from tooluse.messages import ToolCall
from tooluse.tools import ToolDefinition

SERVED = str(Path(__file__).parent / "mcp_servers" / "served_tools.py")


def word_count(text: str, *, unique: bool = False) -> dict:
    """Count the words of a text.

    Args:
        text: The text.
        unique: Count each distinct word once.
    """
    words = text.split()
    return {"words": len(set(words)) if unique else len(words)}


async def test_in_process_server_lists_and_calls():
    server = MCPToolServer([word_count], name="words", timeout=5)
    async with Client(server.lowlevel_server()) as client:
        [tool] = (await client.list_tools()).tools
        counted = await client.call_tool("word_count", {"text": "a b a", "unique": True})
        wrong = await client.call_tool("word_count", {"text": 3})
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("nope", {})
    assert tool.name == "word_count"
    assert tool.input_schema["properties"]["unique"]["type"] == "boolean"
    assert tool.description.startswith("Count the words")
    assert counted.is_error is False
    assert counted.structured_content == {"words": 2}
    assert wrong.is_error is True and "text" in wrong.content[0].text


async def test_raw_schema_tool_definitions_are_served():
    echo = ToolDefinition(
        name="shout",
        description="Upper-case a text.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 5}},
            "required": ["text"],
        },
        function=lambda text: text.upper(),
        annotations={"readOnlyHint": True},
    )
    server = MCPToolServer([echo])
    async with Client(server.lowlevel_server()) as client:
        [tool] = (await client.list_tools()).tools
        ok = await client.call_tool("shout", {"text": "hey"})
        too_long = await client.call_tool("shout", {"text": "far too long"})
    assert tool.annotations.read_only_hint is True
    assert tool.input_schema["properties"]["text"]["maxLength"] == 5
    assert ok.content[0].text == "HEY"
    assert too_long.is_error is True


def test_load_module_tools_prefers_decorated_tools():
    names = sorted(getattr(t, "__name__", "") for t in load_module_tools(SERVED))
    assert names == ["explode", "forecast", "multiply"]


def test_load_module_tools_uses_tools_list_then_plain_functions(tmp_path):
    listed = tmp_path / "listed.py"
    listed.write_text(
        "def a(x: int) -> int:\n    return x\n\n"
        "def b(x: int) -> int:\n    return x\n\n"
        "TOOLS = [a]\n"
    )
    assert [f.__name__ for f in load_module_tools(str(listed))] == ["a"]
    plain = tmp_path / "plain.py"
    plain.write_text(
        "from os.path import join\n\n"
        "def visible(x: int) -> int:\n    return x\n\n"
        "def _hidden() -> None:\n    pass\n"
    )
    assert [f.__name__ for f in load_module_tools(str(plain))] == ["visible"]


def test_load_module_tools_errors(tmp_path):
    with pytest.raises(ToolDefinitionError, match="no such Python file"):
        load_module_tools(str(tmp_path / "missing.py"))
    empty = tmp_path / "empty.py"
    empty.write_text("VALUE = 1\n")
    with pytest.raises(ToolDefinitionError, match="defines no tools"):
        load_module_tools(str(empty))
    with pytest.raises(ToolDefinitionError, match="at least one tool"):
        MCPToolServer([])


async def test_tooluse_tools_round_trip_through_mcp_in_process():
    """tooluse tool -> MCPToolServer -> MCP (in process) -> MCPToolExecutor -> ToolResult."""
    server = MCPToolServer([word_count], name="words")
    config = MCPServerConfig(server=server.lowlevel_server(), tool_prefix="w_")
    async with MCPToolExecutor(config) as executor:
        [definition] = await executor.list_tools()
        counted = await executor.execute_async(
            ToolCall(id="r1", name="w_word_count", arguments={"text": "to be or not to be"})
        )
        rejected = await executor.call_tool("w_word_count", {"unique": True})
    assert config.transport == "in-process" and config.label == "words"
    assert definition.input_schema["required"] == ["text"]
    assert (counted.call_id, counted.structured) == ("r1", {"words": 6})
    assert rejected.is_error and "text" in rejected.output


async def test_sdk_mcpserver_object_in_process():
    from mcp.server.mcpserver import MCPServer

    sdk_server = MCPServer("inline")

    @sdk_server.tool()
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    async with MCPToolExecutor(MCPServerConfig(server=sdk_server)) as executor:
        result = await executor.call_tool("double", {"x": 21})
    assert result.output == "42" and result.structured == {"result": 42}
