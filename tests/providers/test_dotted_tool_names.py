"""Dotted tool names (``Calendar.create_event``) on every wire: the declared tool, a named tool
choice, replayed calls and results all carry the provider's form of the name, and calls coming
back under that form are named as the offered tool again."""

from __future__ import annotations

import pytest

from tooluse import (
    ChatMessage,
    GenerationDone,
    OpenAIBackend,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolDefinition,
    ToolParameter,
    ToolResult,
)
from tooluse.providers import RetryPolicy, anthropic, bedrock, gemini, openai_chat, openai_responses

from .conftest import Reply

CREATE = ToolDefinition(
    name="Calendar.create_event",
    description="Create an event",
    parameters=(ToolParameter("title", description="Event title"),),
)
DOUBLE = ToolDefinition(name="Calendar__list", description="A name that already has '__'")


def history():
    return [
        ChatMessage.user("Book lunch"),
        ChatMessage.assistant(
            tool_calls=[
                ToolCall(id="c1", name="Calendar.create_event", arguments={"title": "Lunch"}),
                ToolCall(id="c2", name="get weather", arguments={}),  # made up by the model
            ]
        ),
        ChatMessage.tool_result(ToolResult.success("c1", "Calendar.create_event", "booked")),
        ChatMessage.tool_result(ToolResult.failure("c2", "get weather", "unknown tool")),
    ]


def test_openai_chat_names_match_the_declared_tool():
    body = openai_chat.encode_request(
        history(), [CREATE, DOUBLE], tool_choice="Calendar.create_event"
    )
    declared = [t["function"]["name"] for t in body["tools"]]
    assert declared == ["Calendar__create_event", "Calendar__list"]
    assert body["tool_choice"] == {
        "type": "function",
        "function": {"name": "Calendar__create_event"},
    }
    names = [c["function"]["name"] for c in body["messages"][1]["tool_calls"]]
    assert names[0] == "Calendar__create_event"
    assert names[1].startswith("get_weather_") and names[1] != "get_weather"


def test_responses_anthropic_bedrock_use_the_same_form():
    responses = openai_responses.encode_request(
        history(), [CREATE], tool_choice="Calendar.create_event"
    )
    assert responses["tools"][0]["name"] == "Calendar__create_event"
    assert responses["tool_choice"] == {"type": "function", "name": "Calendar__create_event"}
    assert responses["input"][1]["name"] == "Calendar__create_event"

    claude = anthropic.encode_request(history(), [CREATE], tool_choice="Calendar.create_event")
    assert claude["tools"][0]["name"] == "Calendar__create_event"
    assert claude["tool_choice"] == {"type": "tool", "name": "Calendar__create_event"}
    assert claude["messages"][1]["content"][0]["name"] == "Calendar__create_event"

    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    converse = bedrock.encode_request(
        history(), [CREATE], tool_choice="Calendar.create_event", model=model
    )
    assert converse["toolConfig"]["tools"][0]["toolSpec"]["name"] == "Calendar__create_event"
    assert converse["toolConfig"]["toolChoice"] == {"tool": {"name": "Calendar__create_event"}}
    assert converse["messages"][1]["content"][0]["toolUse"]["name"] == "Calendar__create_event"


def test_gemini_keeps_the_dots_it_accepts_everywhere():
    body = gemini.encode_request(history(), [CREATE], tool_choice="Calendar.create_event")
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "Calendar.create_event"
    assert body["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"] == [
        "Calendar.create_event"
    ]
    assert body["contents"][1]["parts"][0]["functionCall"]["name"] == "Calendar.create_event"
    responses = [p["functionResponse"]["name"] for p in body["contents"][2]["parts"]]
    assert responses[0] == "Calendar.create_event" and responses[1].startswith("get_weather_")


def test_placeholder_tools_for_an_old_history_carry_the_calls_names():
    body = anthropic.encode_request(history(), [])
    declared = [t["name"] for t in body["tools"]]
    call_names = [b["name"] for b in body["messages"][1]["content"]]
    assert declared == call_names  # each replayed call names a declared tool


def completion(name: str) -> dict:
    return {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": name, "arguments": '{"title":"Lunch"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }


@pytest.fixture
def backend(server):
    b = OpenAIBackend("m", base_url=server.url, api_key="k", retry=RetryPolicy(max_retries=0))
    yield b
    b.close()


def test_calls_come_back_named_as_the_offered_tool(server, backend):
    server.replies.append(Reply(json=completion("Calendar__create_event")))
    result = backend.generate_with_tools([ChatMessage.user("Book lunch")], [CREATE, DOUBLE])
    assert [c.name for c in result.tool_calls] == ["Calendar.create_event"]
    assert [c.name for c in result.to_message().tool_calls] == ["Calendar.create_event"]
    assert server.requests[0].body["tools"][0]["function"]["name"] == "Calendar__create_event"
    # A tool really named with "__" is not taken for a dotted one.
    server.replies.append(Reply(json=completion("Calendar__list")))
    again = backend.generate_with_tools([ChatMessage.user("List")], [CREATE, DOUBLE])
    assert again.tool_calls[0].name == "Calendar__list"


async def test_streamed_calls_come_back_named_as_the_offered_tool(server, backend):
    fragment = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "Calendar__create_event", "arguments": '{"title":"Lunch"}'},
    }
    server.replies.append(
        Reply(
            sse=[
                {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            ]
        )
    )
    events = [e async for e in backend.astream_with_tools([ChatMessage.user("x")], [CREATE])]
    assert [e.name for e in events if isinstance(e, ToolCallStarted)] == ["Calendar.create_event"]
    assert [e.call.name for e in events if isinstance(e, ToolCallFinished)] == [
        "Calendar.create_event"
    ]
    done = events[-1]
    assert isinstance(done, GenerationDone)
    assert done.result.tool_calls[0].name == "Calendar.create_event"
    assert done.result.message.tool_calls[0].name == "Calendar.create_event"
    await backend.aclose()
