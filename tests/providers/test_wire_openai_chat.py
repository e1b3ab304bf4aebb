"""OpenAI Chat Completions: golden request/response JSON and the stream assembler."""

from __future__ import annotations

import pytest

from tooluse import (
    ArgumentsDelta,
    ChatMessage,
    ProviderState,
    SamplingParams,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
)
from tooluse.providers import openai_chat

from .conversation import TIME, WEATHER, conversation

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}


def test_golden_request_with_parallel_calls_error_result_and_reasoning():
    state = ProviderState(provider="anthropic", model="claude", data={"type": "thinking"})
    body = openai_chat.encode_request(
        conversation(state),
        [WEATHER, TIME],
        SamplingParams(
            temperature=0.2, max_tokens=100, stop=("END",), seed=7, parallel_tool_calls=True
        ),
        "auto",
        model="gpt-4o",
    )
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and the time?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "error: clock offline"},
        {"role": "user", "content": "Thanks. Anything else?"},
    ]
    assert body["model"] == "gpt-4o"
    assert body["tools"][0]["type"] == "function"
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["tools"][0]["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert body["tools"][1]["function"]["parameters"]["type"] == "object"
    assert body["tools"][1]["function"]["parameters"].get("properties", {}) == {}
    assert (body["temperature"], body["max_tokens"], body["stop"], body["seed"]) == (
        0.2,
        100,
        ["END"],
        7,
    )
    assert body["parallel_tool_calls"] is True and body["tool_choice"] == "auto"


@pytest.mark.parametrize(
    "choice, wire",
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("get_time", {"type": "function", "function": {"name": "get_time"}}),
    ],
)
def test_tool_choice_mapping(choice, wire):
    body = openai_chat.encode_request([ChatMessage.user("x")], [WEATHER, TIME], tool_choice=choice)
    assert body["tool_choice"] == wire


def test_unknown_tool_choice_name_is_refused():
    with pytest.raises(ValueError, match="nope"):
        openai_chat.encode_request([ChatMessage.user("x")], [WEATHER], tool_choice="nope")


def test_error_result_without_prefix_gets_one():
    result = ToolResult(call_id="c", tool_name="t", output="disk full", is_error=True)
    assert openai_chat.result_text(result) == "Error: disk full"


def test_long_and_odd_ids_are_mapped_identically_for_call_and_result():
    odd = "toolu_01A09q90qw90lq917835lq9|" + "x" * 30
    messages = [
        ChatMessage.user("x"),
        ChatMessage.assistant(tool_calls=[ToolCall(id=odd, name="get_time")]),
        ChatMessage.tool_result(ToolResult.success(odd, "get_time", "noon")),
    ]
    sent = openai_chat.encode_request(messages, [TIME])["messages"]
    wire = sent[1]["tool_calls"][0]["id"]
    assert wire == sent[2]["tool_call_id"] and len(wire) <= 40 and wire != odd
    again = openai_chat.encode_request(messages, [TIME])["messages"][1]["tool_calls"][0]["id"]
    assert again == wire


def test_mistral_id_style_gives_nine_alphanumerics():
    messages = [
        ChatMessage.user("x"),
        ChatMessage.assistant(tool_calls=[ToolCall(id="call_abcdef123456", name="get_time")]),
        ChatMessage.tool_result(ToolResult.success("call_abcdef123456", "get_time", "noon")),
    ]
    sent = openai_chat.encode_request(messages, [TIME], id_style="mistral")["messages"]
    wire = sent[1]["tool_calls"][0]["id"]
    assert len(wire) == 9 and wire.isalnum() and sent[2]["tool_call_id"] == wire


def test_golden_response_decode():
    body = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_time", "arguments": "null"},
                        },
                        {
                            "id": "call_c",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Ro'},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
    }
    result = openai_chat.decode_response(body)
    assert result.finish_reason == "tool_calls" and result.text == ""
    a, b, c = result.tool_calls
    assert (a.id, a.name, a.arguments) == ("call_a", "get_weather", {"city": "Oslo"})
    assert b.arguments == {} and b.raw_arguments is None
    assert c.arguments == {} and c.raw_arguments == '{"city": "Ro'
    assert result.usage.input_tokens == 50 and result.usage.output_tokens == 20
    assert result.to_message().tool_calls == result.tool_calls


def test_reasoning_content_of_compatible_servers_is_kept():
    body = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "42", "reasoning_content": "think"},
                "finish_reason": "stop",
            }
        ]
    }
    result = openai_chat.decode_response(body)
    assert (result.text, result.reasoning) == ("42", "think")


def test_dict_arguments_and_missing_ids_from_ollama_style_servers():
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {"function": {"name": "get_weather", "arguments": {"city": "Lima"}}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    call = openai_chat.decode_response(body).tool_calls[0]
    assert call.arguments == {"city": "Lima"} and call.synthetic_id and call.id.startswith("call_")


def chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_stream_with_constant_index_starts_new_call_on_new_id():
    assembler = openai_chat.ChatStreamAssembler()
    events = []
    for c in [
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a1", "function": {"name": "get_time", "arguments": ""}}
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "b2",
                        "function": {"name": "get_weather", "arguments": '{"city":'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Nice"}'}}]}),
        chunk({}, "tool_calls"),
        {"type": "[DONE]"},  # what the HTTP layer feeds for `data: [DONE]`
    ]:
        events += assembler.feed(c)
    closing, result = assembler.finish()
    assert [(e.index, e.id) for e in events if isinstance(e, ToolCallStarted)] == [
        (0, "a1"),
        (1, "b2"),
    ]
    assert [e.call.arguments for e in closing if isinstance(e, ToolCallFinished)] == [
        {},
        {"city": "Nice"},
    ]
    assert [c.id for c in result.tool_calls] == ["a1", "b2"]


def test_stream_without_index_routes_fragments_to_the_current_call():
    assembler = openai_chat.ChatStreamAssembler()
    events = []
    for c in [
        chunk(
            {"tool_calls": [{"id": "x", "function": {"name": "get_weather", "arguments": '{"ci'}}]}
        ),
        chunk({"tool_calls": [{"function": {"arguments": 'ty":"Bern"}'}}]}),
        chunk({"tool_calls": [{"id": "y", "function": {"name": "get_time", "arguments": ""}}]}),
    ]:
        events += assembler.feed(c)
    _, result = assembler.finish(complete=True)  # chunks from an SDK that hides [DONE]
    assert [(c.id, c.arguments) for c in result.tool_calls] == [("x", {"city": "Bern"}), ("y", {})]
    assert (
        "".join(e.text for e in events if isinstance(e, ArgumentsDelta) and e.index == 0)
        == '{"city":"Bern"}'
    )


def test_stream_call_without_id_gets_one_synthetic_id_in_both_events():
    assembler = openai_chat.ChatStreamAssembler()
    started = assembler.feed(
        chunk({"tool_calls": [{"index": 0, "function": {"name": "get_time", "arguments": "{}"}}]})
    )
    assembler.feed({"type": "[DONE]"})
    closing, result = assembler.finish()
    assert started[0].id == closing[0].call.id == result.tool_calls[0].id != ""
    assert result.tool_calls[0].synthetic_id


def test_reasoning_models_get_max_completion_tokens():
    params = SamplingParams(max_tokens=50)
    assert (
        openai_chat.encode_request([ChatMessage.user("x")], params=params, model="o4-mini")[
            "max_completion_tokens"
        ]
        == 50
    )
    assert "max_completion_tokens" not in openai_chat.encode_request(
        [ChatMessage.user("x")], params=params, model="qwen"
    )
