"""A low-level MCP server whose tools advertise an output schema and break it on purpose.

``weather`` keeps its schema; ``weather_wrong_type`` sends a string where the schema wants a
number; ``weather_unstructured`` sends text only. (The SDK's ``MCPServer`` checks its own
results, so a server that misbehaves has to be built on the low-level ``Server``.)
"""

from __future__ import annotations

import json

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
NAMES = ("weather", "weather_wrong_type", "weather_unstructured")


async def on_list_tools(_ctx, _params):
    tools = [
        types.Tool(
            name=name,
            description=f"{name} (fixed values)",
            input_schema=CITY,
            output_schema=WEATHER,
        )
        for name in NAMES
    ]
    return types.ListToolsResult(tools=tools)


async def on_call_tool(_ctx, params):
    city = (params.arguments or {}).get("city", "")
    celsius = "warm" if params.name == "weather_wrong_type" else 21.5
    value = {"city": city, "celsius": celsius}
    text = types.TextContent(type="text", text=json.dumps(value))
    if params.name == "weather_unstructured":
        return types.CallToolResult(content=[text])
    return types.CallToolResult(content=[text], structured_content=value)


server = Server("structured", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
