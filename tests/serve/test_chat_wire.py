"""Decoding what real clients send to /v1/chat/completions, and the response shapes."""

from __future__ import annotations

import pytest

from tooluse.events import ArgumentsDelta, TextDelta, ToolCallStarted
from tooluse.messages import ToolCall, Usage
from tooluse.providers.base import GenerationResult
from tooluse.serve.chat_wire import (
    RequestError,
    chunk,
    decode_chat_request,
    encode_chat_completion,
    stream_delta,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def loop_body(content):
    return {
        "model": "local",
        "tools": [WEATHER],
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Weather "},
                    {"type": "text", "text": "in Paris?"},
                ],
            },
            {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "17 C"},
        ],
        "some_future_field": {"ignored": True},
    }


@pytest.mark.parametrize("content", [None, "", "Let me check."])
def test_tool_loop_history_as_clients_send_it(content):
    request = decode_chat_request(loop_body(content))
    roles = [m.role for m in request.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert request.messages[1].content == "Weather in Paris?"
    assert request.messages[2].tool_calls[0].arguments == {"city": "Paris"}
    assert request.messages[2].content == (content or "")
    result = request.messages[3].result
    assert result is not None and result.call_id == "call_1"
    # a tool message without 'name' gets the name of the call it answers
    assert result.tool_name == "get_weather"
    assert [t.name for t in request.tools] == ["get_weather"]


def test_unanswered_call_is_a_400_naming_the_id():
    body = loop_body(None)
    body["messages"] = body["messages"][:3]
    body["messages"].append({"role": "user", "content": "and?"})
    with pytest.raises(RequestError) as info:
        decode_chat_request(body)
    assert info.value.status == 400
    assert "call_1" in info.value.message
    assert info.value.body()["error"]["type"] == "invalid_request_error"


def test_options_are_decoded():
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [WEATHER],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": False,
        "max_completion_tokens": 33,
        "temperature": 0.5,
        "stop": "END",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    request = decode_chat_request(body)
    assert request.tool_choice == "get_weather"
    assert request.params.max_tokens == 33
    assert request.params.temperature == 0.5
    assert request.params.stop == ("END",)
    assert request.params.parallel_tool_calls is False
    assert request.stream and request.include_usage


def test_max_tokens_is_read_when_the_new_name_is_absent():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 7}
    assert decode_chat_request(body).params.max_tokens == 7


def test_response_format_json_schema():
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "city",
                "schema": {"type": "object", "properties": {"n": {"type": "string"}}},
            },
        },
    }
    name, schema = decode_chat_request(body).response_schema
    assert name == "city" and schema["properties"] == {"n": {"type": "string"}}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"messages": []}, "messages"),
        ({"model": None}, "model"),
        ({"n": 2}, "n=1"),
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "nope"),
        ({"tool_choice": "sometimes"}, "tool_choice"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "wizard"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "image_url"),
        ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "bad name!"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"temperature": "hot"}, "temperature"),
        ({"response_format": {"type": "xml"}}, "response_format"),
    ],
)
def test_bad_requests_are_400_with_the_reason(change, words):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER]}
    body.update(change)
    with pytest.raises(RequestError) as info:
        decode_chat_request(body)
    assert info.value.status == 400
    assert words in info.value.message


def test_completion_shape_with_calls():
    call = ToolCall(id="call_9", name="get_weather", arguments={"city": "Rome"})
    result = GenerationResult(tool_calls=(call,), usage=Usage(input_tokens=5, output_tokens=3))
    body = encode_chat_completion(result, model="local")
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"][0] == {
        "id": "call_9",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
    }
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}


def test_stream_deltas_follow_openai():
    ids: dict[int, str] = {}
    first = stream_delta(ToolCallStarted(index=0, name="f", id="call_a"), ids)
    assert first == {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_a",
                "type": "function",
                "function": {"name": "f", "arguments": ""},
            }
        ]
    }
    assert stream_delta(ArgumentsDelta(index=0, text='{"a"'), ids) == {
        "tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]
    }
    assert stream_delta(TextDelta(text="hi"), ids) == {"content": "hi"}
    usage_only = chunk("id", "m", 1, None, usage=Usage(input_tokens=1, output_tokens=2))
    assert usage_only["choices"] == [] and usage_only["usage"]["total_tokens"] == 3
