"""Regression tests for wire defects a provider answers with a 400 or a silently wrong turn.

One group per defect class: Responses reasoning items replayed with their following item,
whitespace-only text blocks on Anthropic and Bedrock, sampling parameters newer Claude models
refuse, Chat Completions refusals, Gemini parts with explicit nulls, Bedrock cache token usage,
and Anthropic usage deltas with null counts.
"""

from __future__ import annotations

import logging

import pytest

from tooluse import ChatMessage, ProviderState, SamplingParams, TextPart, ToolCall, ToolResult
from tooluse.providers import anthropic, bedrock, gemini, openai_chat, openai_responses
from tooluse.providers.claude_models import claude_capabilities, claude_version

from .conversation import TIME, WEATHER

# -- OpenAI Responses: a reasoning item goes back followed by the item that followed it ------

REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Plan."}],
    "encrypted_content": "enc",
}
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "phase": "commentary",
    "content": [{"type": "output_text", "text": "Checking the weather.", "annotations": []}],
}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Oslo"}',
}


def responses_turn(*output):
    body = {"status": "completed", "output": [dict(i, status="completed") for i in output]}
    return openai_responses.decode_response(body, model="o4-mini")


def replay(result, model="o4-mini"):
    history = [ChatMessage.user("Weather in Oslo?"), result.to_message()]
    for call in result.tool_calls:
        history.append(ChatMessage.tool_result(ToolResult.success(call.id, call.name, "cold")))
    return openai_responses.encode_request(history, [WEATHER, TIME], model=model)["input"]


def test_reasoning_then_message_replays_the_output_message_with_its_id():
    items = replay(responses_turn(REASONING, MESSAGE, CALL))
    # same order and ids; an output message keeps its status (the SDK's input type requires it)
    assert items[1:4] == [REASONING, {**MESSAGE, "status": "completed"}, CALL]
    assert items[2]["phase"] == "commentary"  # the SDK asks for phase to be sent back


def test_reasoning_then_message_only_turn_keeps_both():
    result = responses_turn(REASONING, MESSAGE)
    assert result.text == "Checking the weather." and result.finish_reason == "stop"
    assert replay(result)[1:] == [REASONING, {**MESSAGE, "status": "completed"}]


def test_message_without_id_stays_a_plain_assistant_message():
    item = {"type": "message", "role": "assistant", "content": MESSAGE["content"]}
    assert replay(responses_turn(item))[1:] == [
        {"role": "assistant", "content": "Checking the weather."}
    ]


def test_reasoning_is_left_out_when_its_following_item_has_no_original_id(caplog):
    state = ProviderState(provider="openai", model="o4-mini", data=REASONING)
    call_state = ProviderState(provider="openai", model="o4-mini", data={"item_id": "fc_1"})
    from tooluse import ReasoningPart

    edited = ChatMessage(
        role="assistant",
        parts=(
            ReasoningPart(text="Plan.", state=state),
            TextPart(text="Edited text."),  # no original message id any more
            ToolCall(id="call_1", name="get_weather", arguments={}, state=call_state),
        ),
    )
    history = [
        ChatMessage.user("q"),
        edited,
        ChatMessage.tool_result(ToolResult.success("call_1", "get_weather", "cold")),
    ]
    with caplog.at_level(logging.INFO, logger="tooluse.providers"):
        items = openai_responses.encode_request(history, [WEATHER], model="o4-mini")["input"]
    assert [i.get("type") for i in items] == [
        None,
        None,
        "function_call",
        "function_call_output",
    ]
    # Without its reasoning item, the call may not carry the id that demands it.
    assert "id" not in items[2] and items[2]["call_id"] == "call_1"
    assert "rs_1" in caplog.text


def test_edited_message_text_is_not_replayed_under_the_old_id():
    result = responses_turn(REASONING, MESSAGE)
    message = result.to_message()
    part = message.parts[1]
    changed = ChatMessage(
        role="assistant",
        parts=(message.parts[0], TextPart(text="Something else.", state=part.state)),
    )
    items = openai_responses.encode_request([ChatMessage.user("q"), changed], model="o4-mini")[
        "input"
    ]
    assert items[1:] == [{"role": "assistant", "content": "Something else."}]


def test_message_state_is_not_sent_to_another_model():
    items = replay(responses_turn(REASONING, MESSAGE, CALL), model="gpt-4.1")
    assert all(i.get("type") != "reasoning" and "id" not in i for i in items)


def test_stream_keeps_the_message_id_from_response_completed():
    assembler = openai_responses.ResponsesStreamAssembler(model="o4-mini")
    assembler.feed(
        {"type": "response.completed", "response": {"status": "completed", "output": [MESSAGE]}}
    )
    _, result = assembler.finish()
    assert result.message.parts[0].state.data["id"] == "msg_1"


# -- Whitespace-only text blocks are not replayed to Anthropic or Bedrock -------------------


def blank_text_history():
    return [
        ChatMessage.user("Weather?"),
        ChatMessage(
            role="assistant",
            parts=(
                TextPart(text="\n\n"),
                ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Oslo"}),
            ),
        ),
        ChatMessage.tool_result(ToolResult.success("toolu_1", "get_weather", "cold")),
        ChatMessage(role="assistant", parts=(TextPart(text=" \t "),)),
        ChatMessage.user("  \n"),
        ChatMessage.user("And tomorrow?"),
    ]


def test_anthropic_drops_whitespace_only_text_blocks():
    body = anthropic.encode_request(blank_text_history(), [WEATHER], model="claude-haiku-4-5")
    texts = [b["text"] for m in body["messages"] for b in m["content"] if b.get("type") == "text"]
    assert texts == ["Weather?", "And tomorrow?"]
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
    ]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


def test_bedrock_drops_whitespace_only_text_blocks():
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    body = bedrock.encode_request(blank_text_history(), [WEATHER], model=model)
    texts = [b["text"] for m in body["messages"] for b in m["content"] if "text" in b]
    assert texts == ["Weather?", bedrock.RESULTS_ACK_TEXT, "And tomorrow?"]
    assert body["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}}
    ]


def test_text_with_visible_characters_around_whitespace_is_kept():
    history = [
        ChatMessage.user("q"),
        ChatMessage(role="assistant", parts=(TextPart(text="\n\nDone.\n"),)),
        ChatMessage.user("ok"),
    ]
    body = anthropic.encode_request(history, model="claude-haiku-4-5")
    assert body["messages"][1]["content"] == [{"type": "text", "text": "\n\nDone.\n"}]
    # OpenAI Chat has no such rule: whitespace is kept there.
    blank = [ChatMessage.user("q"), ChatMessage.assistant("\n\n"), ChatMessage.user("ok")]
    assert openai_chat.encode_request(blank)["messages"][1]["content"] == "\n\n"


# -- Sampling parameters newer Claude models refuse ------------------------------------------


@pytest.mark.parametrize(
    ("model", "version", "rule"),
    [
        ("claude-opus-4-7", ("opus", 4, 7), "none"),
        ("claude-opus-4-8-20260701", ("opus", 4, 8), "none"),
        ("claude-sonnet-5", ("sonnet", 5, 0), "none"),
        ("anthropic/claude-opus-4.7", ("opus", 4, 7), "none"),
        ("claude-opus-4-7@20260416", ("opus", 4, 7), "none"),
        ("us.anthropic.claude-sonnet-5-v1:0", ("sonnet", 5, 0), "none"),
        ("claude-fable-5-1", ("fable", 5, 1), "none"),
        ("claude-sonnet-4-5-20250929", ("sonnet", 4, 5), "one_of"),
        ("claude-haiku-4-5", ("haiku", 4, 5), "one_of"),
        ("claude-opus-4-1-20250805", ("opus", 4, 1), "one_of"),
        ("claude-sonnet-4-6", ("sonnet", 4, 6), "one_of"),
        ("claude-opus-4-20250514", ("opus", 4, 0), "any"),
        ("claude-3-5-sonnet-20241022", ("sonnet", 3, 5), "any"),
        ("claude-3-opus-20240229", ("opus", 3, 0), "any"),
        ("amazon.nova-pro-v1:0", None, "any"),
        ("", None, "any"),
    ],
)
def test_claude_capability_table(model, version, rule):
    assert claude_version(model) == version
    assert claude_capabilities(model).sampling == rule


def test_anthropic_drops_sampling_for_models_that_refuse_it_and_logs(caplog):
    params = SamplingParams(temperature=0.2, top_p=0.9, extra={"top_k": 5})
    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        body = anthropic.encode_request(
            [ChatMessage.user("x")], params=params, model="claude-opus-4-7"
        )
    assert not {"temperature", "top_p", "top_k"} & set(body)
    assert "temperature" in caplog.text and "claude-opus-4-7" in caplog.text


def test_anthropic_sends_one_sampler_where_only_one_is_allowed(caplog):
    params = SamplingParams(temperature=0.2, top_p=0.9)
    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        body = anthropic.encode_request(
            [ChatMessage.user("x")], params=params, model="claude-sonnet-4-5"
        )
    assert body["temperature"] == 0.2 and "top_p" not in body
    assert "top_p not sent" in caplog.text
    only_top_p = anthropic.encode_request(
        [ChatMessage.user("x")], params=SamplingParams(top_p=0.9), model="claude-sonnet-4-5"
    )
    assert only_top_p["top_p"] == 0.9


def test_older_claude_models_keep_both_samplers(caplog):
    params = SamplingParams(temperature=0.2, top_p=0.9)
    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        body = anthropic.encode_request(
            [ChatMessage.user("x")], params=params, model="claude-3-5-haiku-20241022"
        )
    assert body["temperature"] == 0.2 and body["top_p"] == 0.9
    assert caplog.text == ""


def test_bedrock_applies_the_same_table_to_claude_models():
    params = SamplingParams(temperature=0.2, top_p=0.9, max_tokens=64)
    none = bedrock.encode_request(
        [ChatMessage.user("x")], params=params, model="us.anthropic.claude-opus-4-7-v1:0"
    )
    assert none["inferenceConfig"] == {"maxTokens": 64}
    one = bedrock.encode_request(
        [ChatMessage.user("x")], params=params, model="anthropic.claude-sonnet-4-5-20250929-v1:0"
    )
    assert one["inferenceConfig"] == {"maxTokens": 64, "temperature": 0.2}
    nova = bedrock.encode_request(
        [ChatMessage.user("x")], params=params, model="amazon.nova-lite-v1:0"
    )
    assert nova["inferenceConfig"] == {"maxTokens": 64, "temperature": 0.2, "topP": 0.9}


# -- Chat Completions refusal -------------------------------------------------------------


def test_chat_refusal_becomes_text_and_stop_reason_refusal():
    body = {
        "choices": [
            {
                "message": {"role": "assistant", "content": None, "refusal": "I can't help."},
                "finish_reason": "stop",
            }
        ]
    }
    result = openai_chat.decode_response(body)
    assert result.text == "I can't help." and result.finish_reason == "refusal"
    normal = openai_chat.decode_response(
        {"choices": [{"message": {"content": "Hi", "refusal": None}, "finish_reason": "stop"}]}
    )
    assert normal.text == "Hi" and normal.finish_reason == "stop"


def test_chat_streamed_refusal_becomes_text_and_stop_reason_refusal():
    assembler = openai_chat.ChatStreamAssembler()
    events = []
    for delta, finish in [
        ({"role": "assistant", "content": None, "refusal": ""}, None),
        ({"refusal": "I can't "}, None),
        ({"refusal": "help."}, None),
        ({}, "stop"),
    ]:
        events += assembler.feed({"choices": [{"delta": delta, "finish_reason": finish}]})
    assembler.feed({"type": "[DONE]"})
    _, result = assembler.finish()
    assert "".join(e.text for e in events) == "I can't help."
    assert result.text == "I can't help." and result.finish_reason == "refusal"


# -- Gemini parts with explicit null fields ----------------------------------------------

NULL_PART = {
    "text": None,
    "thought": None,
    "thoughtSignature": None,
    "functionCall": None,
    "functionResponse": None,
    "inlineData": None,
    "executableCode": None,
}


def test_gemini_null_fields_create_no_empty_calls():
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        dict(NULL_PART, text="Sunny."),
                        dict(
                            NULL_PART, functionCall={"name": "get_time", "args": None, "id": None}
                        ),
                        dict(NULL_PART),
                        dict(NULL_PART, functionCall={"name": None, "args": None}),
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": None},
    }
    result = gemini.decode_response(body, model="gemini-2.5-flash")
    assert result.text == "Sunny."
    assert [(c.name, c.arguments, c.synthetic_id) for c in result.tool_calls] == [
        ("get_time", {}, True)
    ]
    assert result.usage.input_tokens == 3 and result.usage.output_tokens == 0


def test_gemini_stream_null_fields_create_no_empty_calls():
    assembler = gemini.GeminiStreamAssembler()
    events = assembler.feed(
        {
            "candidates": [
                {
                    "content": {"parts": [dict(NULL_PART), dict(NULL_PART, text="Hi")]},
                    "finishReason": "STOP",
                }
            ]
        }
    )
    _, result = assembler.finish()
    assert [type(e).__name__ for e in events] == ["TextDelta"]
    assert result.text == "Hi" and not result.tool_calls


# -- Usage: Bedrock cache tokens, Anthropic null counts -------------------------------------


def test_bedrock_usage_counts_cache_read_and_write_tokens():
    body = {
        "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
        "stopReason": "end_turn",
        "usage": {
            "inputTokens": 10,
            "outputTokens": 4,
            "totalTokens": 1214,
            "cacheReadInputTokens": 1000,
            "cacheWriteInputTokens": 200,
        },
    }
    usage = bedrock.decode_response(body).usage
    assert (usage.input_tokens, usage.output_tokens) == (1210, 4)
    assert usage.total_tokens == body["usage"]["totalTokens"]
    # The same counts in Anthropic's names give the same prompt size.
    same = anthropic.decode_response(
        {
            "content": [],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 4,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
            },
        }
    ).usage
    assert same == usage


def test_bedrock_stream_metadata_counts_cache_tokens():
    assembler = bedrock.BedrockStreamAssembler()
    assembler.feed({"messageStop": {"stopReason": "end_turn"}})
    assembler.feed(
        {"metadata": {"usage": {"inputTokens": 5, "outputTokens": 2, "cacheReadInputTokens": 50}}}
    )
    _, result = assembler.finish()
    assert result.usage.input_tokens == 55


def test_anthropic_message_delta_with_null_input_tokens_keeps_the_count():
    assembler = anthropic.AnthropicStreamAssembler()
    for event in [
        {
            "type": "message_start",
            "message": {
                "usage": {"input_tokens": 120, "cache_read_input_tokens": 30, "output_tokens": 1}
            },
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {
                "input_tokens": None,
                "cache_read_input_tokens": None,
                "cache_creation_input_tokens": None,
                "output_tokens": 42,
            },
        },
        {"type": "message_stop"},
    ]:
        assembler.feed(event)
    _, result = assembler.finish()
    assert result.usage.input_tokens == 150 and result.usage.output_tokens == 42


def test_anthropic_message_delta_with_new_counts_replaces_them():
    assembler = anthropic.AnthropicStreamAssembler()
    assembler.feed({"type": "message_start", "message": {"usage": {"input_tokens": 5}}})
    assembler.feed({"type": "message_delta", "delta": {}, "usage": {"input_tokens": 7}})
    assembler.feed({"type": "message_stop"})
    assert assembler.finish()[1].usage.input_tokens == 7  # cumulative: the last count wins


# -- Chat stream fragments that repeat the function name (llama-cpp-python's server) --------


def test_chat_stream_with_the_name_repeated_in_every_fragment():
    assembler = openai_chat.ChatStreamAssembler()
    for piece in ['{"city":', ' "Paris"}']:
        fragment = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": piece},
        }
        assembler.feed({"choices": [{"delta": {"tool_calls": [fragment]}}]})
    assembler.feed({"type": "[DONE]"})
    _, result = assembler.finish()
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]


def test_responses_refusal_becomes_text_and_stop_reason_refusal():
    refusal = {
        "type": "message",
        "id": "msg_9",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    result = responses_turn(refusal)
    assert result.text == "I can't help with that." and result.finish_reason == "refusal"
    assert responses_turn(MESSAGE).finish_reason == "stop"
