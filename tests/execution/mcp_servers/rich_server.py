"""An MCP server (the SDK's ``MCPServer``) whose tools ask things of the client.

Each request is made both ways a server can make it: in the middle of the call through
``ctx.session`` / ``ctx.elicit`` (the 2025-11-25 way: the client must connect with the
handshake) and through ``Resolve(...)`` markers, which the SDK sends as server requests on
2025-11-25 and as an ``input_required`` result on 2026-07-28. Also: progress reports, and a slow
tool that counts how often it was cancelled. ``python rich_server.py --http PORT`` serves
streamable HTTP instead of stdio.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel

# sampling and roots are deprecated in the 2026-07-28 revision; this server uses them anyway
warnings.simplefilter("ignore")

server = MCPServer("rich")
CANCELLED: list[str] = []


def _question(text: str) -> list[SamplingMessage]:
    return [SamplingMessage(role="user", content=TextContent(type="text", text=text))]


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model (a sampling request in the middle of the call)."""
    reply = await ctx.session.create_message(
        _question(question),
        max_tokens=64,
        system_prompt="Answer in one short sentence.",
        temperature=0.0,
    )
    return f"{reply.model} said: {reply.content.text}"


def _sample(question: str) -> Sample:
    return Sample(_question(question), max_tokens=32)


@server.tool()
async def ask_model_resolved(
    question: str, reply: Annotated[CreateMessageResult, Resolve(_sample)]
) -> str:
    """Ask the client's model through a resolver (works on every protocol revision)."""
    return f"{reply.model} said: {reply.content.text}"


class Booking(BaseModel):
    name: str
    seats: int
    window: bool = False


@server.tool()
async def book(ctx: Context) -> str:
    """Ask the user for a booking (an elicitation in the middle of the call)."""
    answer = await ctx.elicit("Who is travelling, and how many seats?", Booking)
    if answer.action != "accept":
        return f"no booking ({answer.action})"
    data = answer.data
    return f"booked {data.seats} for {data.name}{' by the window' if data.window else ''}"


def _ask_booking() -> Elicit[Booking]:
    return Elicit("Who is travelling, and how many seats?", Booking)


@server.tool()
async def book_resolved(
    answer: Annotated[ElicitationResult[Booking], Resolve(_ask_booking)],
) -> str:
    """Ask the user for a booking through a resolver (every protocol revision)."""
    if answer.action != "accept":
        return f"no booking ({answer.action})"
    return f"booked {answer.data.seats} for {answer.data.name}"


@server.tool()
async def client_roots(ctx: Context) -> str:
    """The client's roots (a roots request in the middle of the call)."""
    listed = await ctx.session.list_roots()
    return "\n".join(f"{root.uri} {root.name or ''}".strip() for root in listed.roots)


def _roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def client_roots_resolved(listed: Annotated[ListRootsResult, Resolve(_roots)]) -> str:
    """The client's roots through a resolver (every protocol revision)."""
    return "\n".join(f"{root.uri} {root.name or ''}".strip() for root in listed.roots)


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Report progress ``count`` times, then finish."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step} of {count}")
    return f"{count} steps done"


@server.tool()
async def sleepy(label: str, seconds: float = 60.0) -> str:
    """Sleep; a cancelled call is counted (see ``cancelled``)."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        CANCELLED.append(label)
        raise
    return "slept"


@server.tool()
def cancelled() -> list[str]:
    """The labels of the ``sleepy`` calls that were cancelled so far."""
    return list(CANCELLED)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
