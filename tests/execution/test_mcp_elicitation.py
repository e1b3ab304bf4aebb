"""Elicitation: a real MCP server (subprocess) asks the user through ``ctx.elicit``; tooluse's
handler answers (accept, decline, cancel); an answer that breaks the requested schema, a failing
handler, or no handler at all gives the server a clear MCP error."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from tooluse.execution.mcp import (
    ElicitationRequest,
    ElicitationResponse,
    MCPHandlers,
    MCPServerConfig,
    MCPToolExecutor,
    SyncMCPToolExecutor,
)

pytestmark = pytest.mark.slow

RICH = str(Path(__file__).parent / "mcp_servers" / "rich_server.py")


def rich(protocol: str = "2025-11-25") -> MCPServerConfig:
    return MCPServerConfig(command=sys.executable, args=(RICH,), name="rich", protocol=protocol)


async def book(handler, tool: str = "book", protocol: str = "2025-11-25") -> str:
    handlers = MCPHandlers(elicitation=handler) if handler is not None else None
    async with MCPToolExecutor(rich(protocol), handlers=handlers) as mcp:
        result = await mcp.call_tool(tool)
    return result.output


async def test_an_accepted_form_is_sent_back_and_the_request_is_described():
    seen: list[ElicitationRequest] = []

    async def answer(request: ElicitationRequest) -> ElicitationResponse:
        seen.append(request)
        return ElicitationResponse.accept({"name": "Ann", "seats": 2, "window": True})

    assert await book(answer) == "booked 2 for Ann by the window"
    [request] = seen
    assert (request.server, request.mode) == ("rich", "form")
    assert request.message == "Who is travelling, and how many seats?"
    assert set(request.schema["properties"]) == {"name", "seats", "window"}
    assert set(request.schema["required"]) == {"name", "seats"}


@pytest.mark.parametrize("response", [ElicitationResponse.decline(), ElicitationResponse.cancel()])
async def test_decline_and_cancel_reach_the_server(response):
    assert await book(lambda request: response) == f"no booking ({response.action})"


def test_a_blocking_handler_runs_off_the_connection_loop():
    threads: list[str] = []

    def answer(request: ElicitationRequest) -> ElicitationResponse:
        threads.append(threading.current_thread().name)
        return ElicitationResponse.accept({"name": "Bo", "seats": 1})

    with SyncMCPToolExecutor(rich(), handlers=MCPHandlers(elicitation=answer)) as mcp:
        result = mcp.call_tool("book")
    assert result.output == "booked 1 for Bo"
    assert threads and threads[0] != "tooluse-mcp"


async def test_an_answer_that_breaks_the_schema_is_refused_for_the_server():
    output = await book(lambda request: ElicitationResponse.accept({"name": "Ann", "seats": "two"}))
    assert "does not match the requested schema" in output
    assert "seats" in output and "'two' is not of type 'integer'" in output


async def test_a_failing_or_wrong_handler_is_an_error_for_the_server():
    def broken(request):
        raise KeyError("no terminal")

    assert "the client's elicitation handler failed: KeyError" in await book(broken)
    assert "returned dict, not an ElicitationResponse" in await book(lambda request: {"a": 1})


async def test_without_a_handler_the_server_gets_an_error():
    output = await book(None)
    assert output.startswith("error:") and "Elicitation not supported" in output


async def test_the_negotiated_revision_asks_through_an_input_required_result():
    answered = await book(
        lambda request: ElicitationResponse.accept({"name": "Cy", "seats": 3}),
        tool="book_resolved",
        protocol="auto",
    )
    declined = await book(
        lambda request: ElicitationResponse.decline(), tool="book_resolved", protocol="auto"
    )
    unset = await book(None, tool="book_resolved", protocol="auto")
    assert answered == "booked 3 for Cy"
    assert declined == "no booking (decline)"
    assert "elicitation capability" in unset


def test_responses_are_checked():
    with pytest.raises(ValueError, match="only an accepted elicitation carries content"):
        ElicitationResponse(action="decline", content={"a": 1})
    with pytest.raises(ValueError, match="accept, decline or cancel"):
        ElicitationResponse(action="maybe")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="elicitation must be a callable"):
        MCPHandlers(elicitation="yes")  # type: ignore[arg-type]
