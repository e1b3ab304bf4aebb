"""OpenAI Responses: golden request/response JSON, reasoning item replay, stream events."""

from __future__ import annotations

import pytest

from tooluse import ChatMessage, ProviderState, SamplingParams, ToolCallFinished, ToolResult
from tooluse.events import ArgumentsDelta, TextDelta, ToolCallStarted
from tooluse.providers import openai_chat, openai_responses

from .conversation import TIME, WEATHER, conversation

REASONING_ITEM = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
MESSAGE_ITEM = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
}


def test_golden_request_items_in_order_with_reasoning_item_and_fc_ids():
    state = ProviderState(provider="openai", model="o4-mini", data=REASONING_ITEM)
    call_state = ProviderState(provider="openai", model="o4-mini", data={"item_id": "fc_9"})
    text_state = ProviderState(provider="openai", model="o4-mini", data=MESSAGE_ITEM)
    body = openai_responses.encode_request(
        conversation(state, call_state, text_state),
        [WEATHER, TIME],
        SamplingParams(max_tokens=99),
        "get_time",
        model="o4-mini",
    )
    assert body["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and the time?"},
        REASONING_ITEM,
        {**MESSAGE_ITEM, "status": "completed"},  # the item that followed the reasoning item
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "id": "fc_9",
        },
        {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "call_2", "output": "error: clock offline"},
        {"role": "user", "content": "Thanks. Anything else?"},
    ]
    assert body["tool_choice"] == {"type": "function", "name": "get_time"}
    assert body["tools"][0]["type"] == "function" and body["tools"][0]["name"] == "get_weather"
    assert body["max_output_tokens"] == 99


def test_reasoning_item_not_replayed_to_another_model():
    state = ProviderState(provider="openai", model="o4-mini", data=REASONING_ITEM)
    body = openai_responses.encode_request(conversation(state), [WEATHER, TIME], model="gpt-4.1")
    assert all(item.get("type") != "reasoning" for item in body["input"])


GOLDEN_RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "output": [
        {
            "type": "reasoning",
            "id": "rs_7",
            "summary": [{"type": "summary_text", "text": "Plan."}],
            "encrypted_content": "enc",
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_X",
            "name": "get_weather",
            "arguments": '{"city":"Accra"}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_Y",
            "name": "get_time",
            "arguments": "",
            "status": "completed",
        },
    ],
    "usage": {"input_tokens": 40, "output_tokens": 22, "total_tokens": 62},
}


def test_golden_response_decode_and_round_trip():
    result = openai_responses.decode_response(GOLDEN_RESPONSE, model="o4-mini")
    assert result.finish_reason == "tool_calls" and result.reasoning == "Plan."
    assert [(c.id, c.arguments) for c in result.tool_calls] == [
        ("call_X", {"city": "Accra"}),
        ("call_Y", {}),
    ]
    history = [
        ChatMessage.user("q"),
        result.to_message(),
        ChatMessage.tool_result(ToolResult.success("call_X", "get_weather", "hot")),
        ChatMessage.tool_result(ToolResult.failure("call_Y", "get_time", "n/a")),
    ]
    items = openai_responses.encode_request(history, [WEATHER, TIME], model="o4-mini")["input"]
    assert items[1] == {
        "type": "reasoning",
        "id": "rs_7",
        "summary": [{"type": "summary_text", "text": "Plan."}],
        "encrypted_content": "enc",
    }
    assert [i.get("id") for i in items[2:4]] == ["fc_1", "fc_2"]
    assert items[5]["output"].startswith("error:")
    # Chat Completions gets the same calls without the Responses-only state.
    chat = openai_chat.encode_request(history, [WEATHER, TIME])["messages"]
    assert [c["id"] for c in chat[1]["tool_calls"]] == ["call_X", "call_Y"]


def test_incomplete_response_is_length():
    body = dict(
        GOLDEN_RESPONSE,
        status="incomplete",
        incomplete_details={"reason": "max_output_tokens"},
        output=[],
    )
    assert openai_responses.decode_response(body).finish_reason == "length"


def test_stream_events():
    events_in = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "lo"},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_X",
                "name": "get_weather",
                "arguments": "",
            },
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "fc_1",
            "delta": '{"city":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "fc_1",
            "delta": '"Lagos"}',
        },
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_X",
                "name": "get_weather",
                "arguments": '{"city":"Lagos"}',
            },
        },
        {
            "type": "response.completed",
            "response": {
                "status": "completed",
                "output": [
                    {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]},
                    {
                        "type": "function_call",
                        "id": "fc_1",
                        "call_id": "call_X",
                        "name": "get_weather",
                        "arguments": '{"city":"Lagos"}',
                    },
                ],
                "usage": {"input_tokens": 3, "output_tokens": 8},
            },
        },
    ]
    assembler = openai_responses.ResponsesStreamAssembler(model="m")
    events = [e for ev in events_in for e in assembler.feed(ev)]
    _, result = assembler.finish()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    assert [e.id for e in events if isinstance(e, ToolCallStarted)] == ["call_X"]
    assert "".join(e.text for e in events if isinstance(e, ArgumentsDelta)) == '{"city":"Lagos"}'
    assert [e.call.arguments for e in events if isinstance(e, ToolCallFinished)] == [
        {"city": "Lagos"}
    ]
    assert (
        result.text == "Hello"
        and result.tool_calls[0].id == "call_X"
        and result.usage.output_tokens == 8
    )


def test_sampling_fields_are_sent_only_when_set():
    user = [ChatMessage.user("x")]
    bare = openai_responses.encode_request(user, [WEATHER], SamplingParams())
    assert not {"temperature", "top_p", "max_output_tokens", "parallel_tool_calls"} & set(bare)
    full = openai_responses.encode_request(
        user,
        [WEATHER],
        SamplingParams(temperature=0.0, top_p=0.5, max_tokens=7, parallel_tool_calls=False),
    )
    assert (full["temperature"], full["top_p"], full["max_output_tokens"]) == (0.0, 0.5, 7)
    assert full["parallel_tool_calls"] is False
    # Without tools there is nothing to run in parallel.
    no_tools = openai_responses.encode_request(user, (), SamplingParams(parallel_tool_calls=False))
    assert "parallel_tool_calls" not in no_tools


def test_usage_counts_one_request_and_incomplete_reasons():
    result = openai_responses.decode_response(GOLDEN_RESPONSE)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 22)
    assert result.usage.requests == 1
    for details, expected in [
        (None, "length"),
        ({"reason": "max_output_tokens"}, "length"),
        ({"reason": "content_filter"}, "content_filter"),
    ]:
        body = dict(GOLDEN_RESPONSE, status="incomplete", incomplete_details=details, output=[])
        assert openai_responses.decode_response(body).finish_reason == expected


def test_unsupported_sampling_fields_are_logged_not_sent(caplog):
    import logging

    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        body = openai_responses.encode_request(
            [ChatMessage.user("x")], params=SamplingParams(stop=("END",), seed=3)
        )
    assert "stop" not in body and "seed" not in body
    assert "no stop sequences or seed" in caplog.text


def test_stream_message_items_are_not_calls():
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
    }
    assembler = openai_responses.ResponsesStreamAssembler(model="m")
    events = []
    for event in [
        {"type": "response.output_item.added", "output_index": 0, "item": dict(message)},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response.completed", "response": {"status": "completed", "output": [message]}},
    ]:
        events += assembler.feed(event)
    _, result = assembler.finish()
    assert [type(e).__name__ for e in events] == ["TextDelta"]
    assert result.text == "Hi" and not result.tool_calls


def _replayed_input(output_items):
    from tooluse import ChatMessage, ToolResult

    turn = openai_responses.decode_response({"output": output_items, "usage": {}}, model="gpt-x")
    history = [
        ChatMessage.user("hi"),
        turn.to_message(),
        ChatMessage.tool_result(ToolResult.success("call_1", "get_weather", "sunny")),
    ]
    return openai_responses.encode_request(history, (), None, "auto", model="gpt-x")["input"]


CALL_ITEM = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
    "status": "completed",
}


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "output_text", "text": "Let me check.", "annotations": []}],
        [{"type": "output_text", "text": "Let me check."}],  # a server that leaves annotations out
        "Let me check.",  # a server that sends the text as a string
    ],
)
def test_a_replayed_output_message_is_a_valid_sdk_output_message(content):
    from openai.types.responses import ResponseOutputMessageParam
    from pydantic import TypeAdapter

    message = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant"}
    items = _replayed_input([{**message, "content": content}, CALL_ITEM])
    replayed = next(item for item in items if item.get("id") == "msg_1")
    TypeAdapter(ResponseOutputMessageParam).validate_python(replayed)  # raises when invalid
    assert replayed["status"] == "completed"
    assert replayed["content"][0]["text"] == "Let me check."
    assert [item.get("type") for item in items[-2:]] == ["function_call", "function_call_output"]
