"""Anthropic Messages: golden request/response JSON, rules, round trip and stream assembler."""

from __future__ import annotations

import logging

import pytest

from tooluse import (
    ChatMessage,
    ProviderState,
    SamplingParams,
    ToolCall,
    ToolCallFinished,
    ToolResult,
)
from tooluse.events import ArgumentsDelta, ReasoningDelta, TextDelta, ToolCallStarted
from tooluse.providers import anthropic, openai_chat

from .conversation import TIME, WEATHER, conversation

THINKING = ProviderState(
    provider="anthropic",
    model="claude-sonnet-4-5",
    data={"type": "thinking", "thinking": "Need both tools.", "signature": "sig-abc"},
)


def test_golden_request_batches_results_first_with_error_flag_and_replays_thinking():
    body = anthropic.encode_request(
        conversation(THINKING),
        [WEATHER, TIME],
        SamplingParams(max_tokens=256, temperature=0.0, parallel_tool_calls=False),
        "auto",
        model="claude-sonnet-4-5",
    )
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and the time?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Need both tools.", "signature": "sig-abc"},
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "error: clock offline",
                    "is_error": True,
                },
                {"type": "text", "text": "Thanks. Anything else?"},
            ],
        },
    ]
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["tools"][0]["name"] == "get_weather"
    assert body["tools"][0]["input_schema"]["properties"]["city"]["type"] == "string"
    assert body["tools"][1]["input_schema"]["type"] == "object"
    assert (body["max_tokens"], body["temperature"], body["model"]) == (
        256,
        0.0,
        "claude-sonnet-4-5",
    )


def test_thinking_from_another_provider_or_model_is_dropped():
    other = ProviderState(provider="gemini", data={"thoughtSignature": "g"})
    body = anthropic.encode_request(conversation(other), [WEATHER, TIME], model="claude-sonnet-4-5")
    assert body["messages"][1]["content"][0] == {"type": "text", "text": "Checking."}
    body = anthropic.encode_request(
        conversation(THINKING), [WEATHER, TIME], model="claude-opus-4-1"
    )
    assert all(b["type"] != "thinking" for b in body["messages"][1]["content"])


@pytest.mark.parametrize(
    "choice, wire",
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("get_time", {"type": "tool", "name": "get_time"}),
    ],
)
def test_tool_choice_mapping(choice, wire):
    assert (
        anthropic.encode_request([ChatMessage.user("x")], [WEATHER, TIME], tool_choice=choice)[
            "tool_choice"
        ]
        == wire
    )


def test_none_choice_never_carries_disable_parallel():
    params = SamplingParams(parallel_tool_calls=False)
    body = anthropic.encode_request([ChatMessage.user("x")], [WEATHER], params, "none")
    assert body["tool_choice"] == {"type": "none"}


def test_forced_choice_downgraded_with_thinking_and_logged(caplog):
    params = SamplingParams(extra={"thinking": {"type": "enabled", "budget_tokens": 1024}})
    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        body = anthropic.encode_request([ChatMessage.user("x")], [WEATHER], params, "required")
    assert body["tool_choice"] == {"type": "auto"} and body["thinking"]["budget_tokens"] == 1024
    assert "downgraded" in caplog.text


def test_forced_choice_downgraded_for_models_that_refuse_it(caplog):
    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        body = anthropic.encode_request(
            [ChatMessage.user("x")], [WEATHER], None, "get_weather", forced_choice_supported=False
        )
    assert body["tool_choice"] == {"type": "auto"} and "rejects forced" in caplog.text


def test_tools_declared_when_history_holds_tool_blocks_but_none_passed():
    messages = conversation()
    body = anthropic.encode_request(messages, [], model="m")
    assert sorted(t["name"] for t in body["tools"]) == ["get_time", "get_weather"]
    assert body["tool_choice"] == {"type": "none"}


def test_ids_with_characters_anthropic_rejects_are_mapped():
    bad = "call_1:gemini/xyz"
    messages = [
        ChatMessage.user("x"),
        ChatMessage.assistant(tool_calls=[ToolCall(id=bad, name="get_time")]),
        ChatMessage.tool_result(ToolResult.success(bad, "get_time", "noon")),
    ]
    body = anthropic.encode_request(messages, [TIME])
    use_id = body["messages"][1]["content"][0]["id"]
    assert use_id == body["messages"][2]["content"][0]["tool_use_id"]
    assert all(ch.isalnum() or ch in "_-" for ch in use_id)


def test_invalid_raw_arguments_go_as_an_empty_object():
    call = ToolCall(id="c1", name="get_weather", arguments={}, raw_arguments='{"city": ')
    messages = [
        ChatMessage.user("x"),
        ChatMessage.assistant(tool_calls=[call]),
        ChatMessage.tool_result(
            ToolResult.failure("c1", "get_weather", "arguments are not valid JSON")
        ),
    ]
    body = anthropic.encode_request(messages, [WEATHER])
    assert body["messages"][1]["content"][0]["input"] == {}
    assert body["messages"][2]["content"][0]["is_error"] is True


GOLDEN_RESPONSE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "Two lookups.", "signature": "EqQBCgIYAhIM"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 100, "output_tokens": 40, "cache_read_input_tokens": 10},
}


def test_golden_response_decode_and_round_trip_keeps_everything():
    result = anthropic.decode_response(GOLDEN_RESPONSE, model="claude-sonnet-4-5")
    assert result.finish_reason == "tool_calls"
    assert (result.text, result.reasoning) == ("Let me look.", "Two lookups.")
    assert [c.id for c in result.tool_calls] == ["toolu_01", "toolu_02"]
    assert result.usage.input_tokens == 110 and result.usage.output_tokens == 40
    history = [
        ChatMessage.user("Weather and time?"),
        result.to_message(),
        ChatMessage.tool_result(ToolResult.failure("toolu_02", "get_time", "offline")),
        ChatMessage.tool_result(ToolResult.success("toolu_01", "get_weather", "sunny")),
    ]
    body = anthropic.encode_request(history, [WEATHER, TIME], model="claude-sonnet-4-5")
    assert body["messages"][1]["content"] == GOLDEN_RESPONSE["content"]
    results = body["messages"][2]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_01", "toolu_02"]  # call order
    assert results[1]["is_error"] is True and "is_error" not in results[0]
    # The same history sent to OpenAI drops the signature but keeps calls, order and errors.
    sent = openai_chat.encode_request(history, [WEATHER, TIME])["messages"]
    assert [m.get("tool_call_id") for m in sent[2:]] == ["toolu_01", "toolu_02"]
    assert sent[3]["content"].startswith("error:")


def test_redacted_thinking_is_replayed_whole():
    body = dict(
        GOLDEN_RESPONSE,
        content=[{"type": "redacted_thinking", "data": "opaque=="}, {"type": "text", "text": "hi"}],
        stop_reason="end_turn",
    )
    result = anthropic.decode_response(body, model="m")
    again = anthropic.encode_request([ChatMessage.user("q"), result.to_message()], [], model="m")
    assert again["messages"][1]["content"][0] == {"type": "redacted_thinking", "data": "opaque=="}


def test_stream_assembler_concatenates_input_json_deltas_by_block_index():
    events_in = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 30, "output_tokens": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hmm"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "SIG"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "On it."},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_9",
                "name": "get_weather",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Ly'},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": 'on"}'},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_10",
                "name": "get_time",
                "input": {},
            },
        },
        {"type": "content_block_stop", "index": 3},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 55},
        },
        {"type": "message_stop"},
    ]
    assembler = anthropic.AnthropicStreamAssembler(model="m")
    events = [e for ev in events_in for e in assembler.feed(ev)]
    closing, result = assembler.finish()
    assert closing == []
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["hmm"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["On it."]
    assert [e.id for e in events if isinstance(e, ToolCallStarted)] == ["toolu_9", "toolu_10"]
    assert "".join(e.text for e in events if isinstance(e, ArgumentsDelta)) == '{"city": "Lyon"}'
    finished = [e.call for e in events if isinstance(e, ToolCallFinished)]
    assert [c.arguments for c in finished] == [{"city": "Lyon"}, {}]
    assert result.finish_reason == "tool_calls" and result.usage.output_tokens == 55
    assert result.usage.input_tokens == 30
    thinking = result.message.parts[0]
    assert thinking.state.data == {"type": "thinking", "thinking": "hmm", "signature": "SIG"}
