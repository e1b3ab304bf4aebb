"""Structured tool output from a real MCP server: the advertised ``outputSchema`` is kept, a
result's ``structuredContent`` is carried on the ToolResult, and content that breaks the schema
(or is missing) is an error result the model reads, never a crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tooluse
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.messages import ToolCall
from tooluse.providers.scripted import ScriptedBackend

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).parent / "mcp_servers" / "structured_server.py")
CONFIG = MCPServerConfig(command=sys.executable, args=(SERVER,), name="structured")


async def test_valid_structured_content_is_carried_with_the_schema():
    async with MCPToolExecutor(CONFIG) as mcp:
        tools = {tool.name: tool for tool in await mcp.list_tools()}
        result = await mcp.execute_async(
            ToolCall(id="w", name="weather", arguments={"city": "Oslo"})
        )
    assert tools["weather"].output_schema["required"] == ["city", "celsius"]
    assert (result.call_id, result.is_error) == ("w", False)
    assert result.structured == {"city": "Oslo", "celsius": 21.5}
    assert result.output == '{"city": "Oslo", "celsius": 21.5}'


async def test_content_that_breaks_the_schema_is_an_error_naming_the_problem():
    async with MCPToolExecutor(CONFIG) as mcp:
        wrong = await mcp.execute_async(
            ToolCall(id="x", name="weather_wrong_type", arguments={"city": "Oslo"})
        )
        missing = await mcp.call_tool("weather_unstructured", {"city": "Oslo"})
        after = await mcp.call_tool("weather", {"city": "Rome"})
    assert (wrong.call_id, wrong.is_error, wrong.structured) == ("x", True, None)
    assert wrong.output == (
        "error: tool 'weather_wrong_type' returned structured content that does not match its "
        "output schema (celsius: 'warm' is not of type 'number')"
    )
    assert wrong.metadata["output_schema_error"] == "celsius: 'warm' is not of type 'number'"
    assert missing.is_error and "returned no structured content" in missing.output
    assert missing.metadata["output_schema_error"] == "no structured content"
    assert after.structured == {"city": "Rome", "celsius": 21.5}  # the server is still fine


async def test_the_model_reads_the_schema_error_and_the_run_goes_on():
    model = ScriptedBackend(
        [
            [
                ToolCall(id="a", name="weather_wrong_type", arguments={"city": "Oslo"}),
                ToolCall(id="b", name="weather", arguments={"city": "Oslo"}),
            ],
            "It is 21.5 degrees in Oslo.",
        ]
    )
    async with MCPToolExecutor(CONFIG) as mcp:
        result = await tooluse.arun(model, "Weather in Oslo?", tools=await mcp.list_tools())
    results = {m.result.call_id: m.result for m in result.messages if m.role == "tool"}
    assert set(results) == {"a", "b"}
    assert results["a"].is_error and "does not match its output schema" in results["a"].output
    assert results["b"].structured == {"city": "Oslo", "celsius": 21.5}
    second_request = model.requests[1].messages
    assert any("does not match its output schema" in m.content for m in second_request)
    assert result.final_text == "It is 21.5 degrees in Oslo."
