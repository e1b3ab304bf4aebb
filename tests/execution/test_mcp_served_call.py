"""What ``tooluse mcp serve`` offers besides plain calls, through real clients: a served tool's
line to its client (``served_call``: log messages at the level the client set, progress,
questions to the user, completions from the client's model), images in results and prompts,
resource subscriptions, completions of arguments. The server runs as a stdio subprocess; the
clients are tooluse's own and the SDK's ``Client``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tooluse.execution.mcp import (
    ElicitationResponse,
    MCPHandlers,
    MCPSampling,
    MCPServerConfig,
    MCPToolExecutor,
)
from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.media import Image
from tooluse.providers.scripted import ScriptedBackend

pytestmark = [
    pytest.mark.slow,
    # The SDK marks logging and resources/subscribe as going away with protocol 2026-07-28;
    # these tests use them on purpose, with a client of an earlier revision.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TOOLUSE = [sys.executable, "-c", "from tooluse.cli.app import main; main()"]
TALKING = str(Path(__file__).parent / "mcp_servers" / "talking_tools.py")
# A stdio server gets a small default environment: the server runs the same tooluse as the test.
SAME_TOOLUSE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
types = mcp_sdk.mcp_types


def served(protocol: str = "2025-11-25") -> MCPServerConfig:
    args = (*TOOLUSE[1:], "mcp", "serve", TALKING)
    return MCPServerConfig(command=TOOLUSE[0], args=args, env=SAME_TOOLUSE, protocol=protocol)


def sdk_client(**callbacks) -> Client:
    params = StdioServerParameters(
        command=TOOLUSE[0], args=[*TOOLUSE[1:], "mcp", "serve", TALKING], env=SAME_TOOLUSE
    )
    return Client(stdio_client(params), mode="legacy", **callbacks)


async def test_a_served_tool_asks_the_user_and_the_model_and_reports_progress():
    questions, reports = [], []

    def answer(request):
        questions.append(request)
        return ElicitationResponse.accept({})  # the schema's default fills the form

    handlers = MCPHandlers(
        elicitation=answer,
        sampling=MCPSampling(backend=ScriptedBackend(["the old harbour"]), allow=lambda r: True),
        on_progress=reports.append,
    )
    async with MCPToolExecutor(served(), handlers=handlers) as executor:
        planned = await executor.call_tool("plan_trip", {"city": "Porto"})
        confirmed = await executor.call_tool("confirm", {"question": "Book it?"})
        plain = await executor.call_tool("outside_mcp", {})
    assert planned.output == "accept {'days': 3} / the old harbour", planned.output
    assert [q.message for q in questions] == ["How many days in Porto?", "Book it?"]
    assert [(r.progress, r.total, r.message) for r in reports] == [
        (1, 2, "asking the user"),
        (2, 2, "asking the model"),
    ]
    assert confirmed.output == "accept: {}"
    assert plain.output == "served"


async def test_log_messages_follow_the_level_the_client_set():
    received = []

    async def on_log(params) -> None:
        received.append((params.level, params.data))

    async def decline(_context, _params):
        return types.ElicitResult(action="decline")

    async def sample(_context, _params):
        content = types.TextContent(type="text", text="a walk")
        return types.CreateMessageResult(role="assistant", content=content, model="m")

    callbacks = {"logging_callback": on_log, "elicitation_callback": decline}
    async with sdk_client(**callbacks, sampling_callback=sample) as client:
        first = await client.call_tool("plan_trip", {"city": "Oslo"})
        await client.set_logging_level("warning")
        await client.call_tool("plan_trip", {"city": "Bergen"})
        second = await client.call_tool("confirm", {"question": "Sure?"})
    assert "decline {} / a walk" in first.content[0].text
    assert second.content[0].text == "decline: {}"
    assert received == [
        ("info", "planning Oslo"),
        ("debug", "a detail nobody asked for"),
        ("warning", "asking for a confirmation"),  # after setLevel("warning"): nothing lower
    ]


async def test_a_client_that_cannot_answer_gets_a_clear_failure():
    async with MCPToolExecutor(served()) as executor:  # no elicitation handler
        result = await executor.call_tool("confirm", {"question": "Book it?"})
    assert result.is_error
    assert "cannot be asked for an answer from the user" in result.output


async def test_subscribers_hear_about_a_changed_resource():
    updates = []

    async def on_message(message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(message.params.uri)

    async with sdk_client(message_handler=on_message) as client:
        await client.subscribe_resource("notes://today")
        told = await client.call_tool("write_notes", {"text": "buy milk"})
        read = await client.read_resource("notes://today")
        await client.unsubscribe_resource("notes://today")
        after = await client.call_tool("write_notes", {"text": "buy bread"})
        with pytest.raises(mcp_sdk.SDKError, match="Unknown resource"):
            await client.subscribe_resource("notes://nowhere")
    assert told.content[0].text == "1 told" and after.content[0].text == "0 told"
    assert read.contents[0].text == "buy milk"
    assert updates == ["notes://today"]


async def test_images_in_results_and_prompts_reach_the_client_as_images():
    async with MCPToolExecutor(served()) as executor:
        result = await executor.call_tool("snapshot", {})
        prompt = await executor.get_prompt("review", {"code": "x = 1"})
    assert [type(part).__name__ for part in result.parts] == ["str", "Image"]
    assert isinstance(result.parts[1], Image) and result.parts[1].media_type == "image/png"
    assert prompt[0].content == "Review this python: x = 1"
    async with sdk_client() as client:
        raw = await client.get_prompt("review", {"code": "x = 1"})
    assert [m.content.type for m in raw.messages] == ["text", "image"]


async def test_arguments_complete_from_their_literal_choices():
    async with sdk_client() as client:
        languages = await client.complete(
            types.PromptReference(name="review"), {"name": "language", "value": "p"}
        )
        perl = await client.complete(
            types.PromptReference(name="review"), {"name": "language", "value": "pe"}
        )
        free = await client.complete(
            types.PromptReference(name="review"), {"name": "code", "value": "x"}
        )
        days = await client.complete(
            types.ResourceTemplateReference(uri="notes://day/{weekday}"),
            {"name": "weekday", "value": "t"},
        )
    assert languages.completion.values == ["python", "perl", "prolog"]
    assert perl.completion.values == ["perl"] and perl.completion.total == 1
    assert free.completion.values == []
    assert days.completion.values == ["tuesday"]
