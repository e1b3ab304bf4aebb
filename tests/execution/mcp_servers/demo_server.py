"""A small MCP server for the tests, built with the SDK's ``MCPServer``.

Run over stdio (``python demo_server.py``) or streamable HTTP
(``python demo_server.py --http PORT``). Tools cover success, structured output, tool errors,
a slow tool for timeouts, a tool that kills the process mid-call and one that echoes the trace
context it was sent.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("demo", log_level="WARNING" if "--http" in sys.argv else "INFO")


class Weather(TypedDict):
    city: str
    celsius: float


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def weather(city: str) -> Weather:
    """The weather in a city (fixed values)."""
    return {"city": city, "celsius": 21.5}


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def crash() -> str:
    """Kill the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header ("" over stdio or when absent)."""
    headers = ctx.headers or {}
    return str(headers.get(name.lower(), ""))


@server.tool()
def traceparent(ctx: Context) -> str:
    """The W3C trace context the client sent in the request's ``_meta`` ("" when none)."""
    meta = ctx.request_context.meta or {}
    return str(meta.get("traceparent", ""))


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.resource(
    "notes://today", name="today", description="Today's notes.", mime_type="text/plain"
)
def today() -> str:
    return "buy milk"


@server.resource("images://dot", name="dot", mime_type="image/png")
def dot() -> bytes:
    return b"\x89PNG dot"


@server.prompt(description="Ask for a city's weather.")
def ask_weather(city: str) -> str:
    return f"What is the weather in {city}?"


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
