"""The third-party ``mcp-server-time`` server from PyPI, run as a real stdio subprocess.

Asia/Tokyo has no daylight saving time, so UTC -> Tokyo is always +9 hours.
"""

from __future__ import annotations

import sys

import pytest

from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.execution.mcp.sync import SyncMCPToolExecutor
from tooluse.messages import ToolCall

pytestmark = pytest.mark.slow

import mcp_server_time  # noqa: E402, F401  (installed by make install: absent is a failure)

TIME = MCPServerConfig(
    command=sys.executable, args=("-m", "mcp_server_time", "--local-timezone", "UTC"), name="time"
)


async def test_time_server_converts_utc_to_tokyo():
    async with MCPToolExecutor(TIME) as executor:
        tools = {tool.name: tool for tool in await executor.list_tools()}
        result = await executor.execute_async(
            ToolCall(
                id="t1",
                name="convert_time",
                arguments={
                    "source_timezone": "UTC",
                    "time": "12:00",
                    "target_timezone": "Asia/Tokyo",
                },
            )
        )
    assert set(tools) == {"get_current_time", "convert_time"}
    assert tools["convert_time"].input_schema["required"] == [
        "source_timezone",
        "time",
        "target_timezone",
    ]
    assert tools["get_current_time"].annotations.get("readOnlyHint") is True
    assert not result.is_error
    assert result.call_id == "t1"
    assert result.structured["target"]["timezone"] == "Asia/Tokyo"
    assert result.structured["target"]["datetime"].endswith("T21:00:00+09:00")
    assert result.structured["source"]["datetime"].endswith("T12:00:00+00:00")
    assert result.structured["time_difference"] == "+9.0h"


def test_time_server_errors_and_current_time_sync():
    with SyncMCPToolExecutor(TIME) as executor:
        bad = executor.call_tool("get_current_time", {"timezone": "Mars/Olympus_Mons"})
        missing = executor.call_tool("convert_time", {"time": "12:00"})
        now = executor.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
    assert bad.is_error and "Mars/Olympus_Mons" in bad.output
    assert missing.is_error and "source_timezone" in missing.output
    assert not now.is_error
    assert now.structured["timezone"] == "Asia/Tokyo"
    assert now.structured["datetime"].endswith("+09:00")
