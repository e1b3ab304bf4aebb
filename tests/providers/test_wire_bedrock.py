"""Bedrock Converse: golden request/response JSON, rules, round trip and stream assembler."""

from __future__ import annotations

import logging

import pytest

from tooluse import (
    ChatMessage,
    ParseError,
    ProviderState,
    SamplingParams,
    ToolCallFinished,
    ToolResult,
)
from tooluse.events import ArgumentsDelta, ReasoningDelta, TextDelta, ToolCallStarted
from tooluse.providers import bedrock

from .conversation import TIME, WEATHER, conversation

CLAUDE = "anthropic.claude-3-5-sonnet-20241022-v2:0"
REASONING = ProviderState(
    provider="bedrock",
    model=CLAUDE,
    data={"reasoningText": {"text": "Need both tools.", "signature": "sig"}},
)


def test_golden_request_results_alone_in_their_user_turn_with_error_status():
    body = bedrock.encode_request(
        conversation(REASONING),
        [WEATHER, TIME],
        SamplingParams(max_tokens=200, temperature=0.1),
        "required",
        model=CLAUDE,
    )
    assert body["system"] == [{"text": "Be brief."}]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "Weather in Paris and the time?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Need both tools.", "signature": "sig"}
                    }
                },
                {"text": "Checking."},
                {
                    "toolUse": {
                        "toolUseId": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                },
                {"toolUse": {"toolUseId": "call_2", "name": "get_time", "input": {}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "call_1", "content": [{"text": "sunny"}]}},
                {
                    "toolResult": {
                        "toolUseId": "call_2",
                        "content": [{"text": "error: clock offline"}],
                        "status": "error",
                    }
                },
            ],
        },
        {"role": "assistant", "content": [{"text": bedrock.RESULTS_ACK_TEXT}]},
        {"role": "user", "content": [{"text": "Thanks. Anything else?"}]},
    ]
    assert body["toolConfig"]["toolChoice"] == {"any": {}}
    spec = body["toolConfig"]["tools"][0]["toolSpec"]
    assert (
        spec["name"] == "get_weather"
        and spec["inputSchema"]["json"]["properties"]["city"]["type"] == "string"
    )
    assert body["inferenceConfig"] == {"maxTokens": 200, "temperature": 0.1}


def test_error_status_only_for_claude_and_nova():
    body = bedrock.encode_request(
        conversation(), [WEATHER, TIME], model="meta.llama3-1-70b-instruct-v1:0"
    )
    failed = body["messages"][2]["content"][1]["toolResult"]
    assert "status" not in failed and failed["content"][0]["text"].startswith("error:")


def test_none_choice_omits_tool_choice_keeps_tools_and_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        body = bedrock.encode_request(
            [ChatMessage.user("x")], [WEATHER], tool_choice="none", model=CLAUDE
        )
    assert "toolChoice" not in body["toolConfig"] and body["toolConfig"]["tools"]
    assert "no tool_choice 'none'" in caplog.text


def test_named_choice_on_claude_and_refused_elsewhere():
    body = bedrock.encode_request(
        [ChatMessage.user("x")], [WEATHER], tool_choice="get_weather", model=CLAUDE
    )
    assert body["toolConfig"]["toolChoice"] == {"tool": {"name": "get_weather"}}
    with pytest.raises(ValueError, match="named tool_choice"):
        bedrock.encode_request(
            [ChatMessage.user("x")],
            [WEATHER],
            tool_choice="get_weather",
            model="mistral.mistral-large-2407-v1:0",
        )


def test_tool_config_sent_when_history_has_tool_blocks():
    body = bedrock.encode_request(conversation(), [], model=CLAUDE)
    assert {t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]} == {
        "get_weather",
        "get_time",
    }


def test_long_ids_are_cut_to_64_with_a_hash():
    long_id = "tooluse_" + "a" * 80
    messages = [
        ChatMessage.user("x"),
        ChatMessage.assistant(
            tool_calls=[__import__("tooluse").ToolCall(id=long_id, name="get_time")]
        ),
        ChatMessage.tool_result(ToolResult.success(long_id, "get_time", "1")),
    ]
    body = bedrock.encode_request(messages, [TIME], model=CLAUDE)
    wire = body["messages"][1]["content"][0]["toolUse"]["toolUseId"]
    assert len(wire) <= 64 and wire == body["messages"][2]["content"][0]["toolResult"]["toolUseId"]


GOLDEN_RESPONSE = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Two tools.", "signature": "SIGB"}
                    }
                },
                {"text": "Looking up."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_A1",
                        "name": "get_weather",
                        "input": {"city": "Quito"},
                    }
                },
                {"toolUse": {"toolUseId": "tooluse_B2", "name": "get_time", "input": {}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 70, "outputTokens": 25, "totalTokens": 95},
    "metrics": {"latencyMs": 900},
}


def test_golden_response_decode_and_round_trip():
    result = bedrock.decode_response(GOLDEN_RESPONSE, model=CLAUDE)
    assert (
        result.finish_reason == "tool_calls"
        and result.text == "Looking up."
        and result.reasoning == "Two tools."
    )
    assert [(c.id, c.arguments) for c in result.tool_calls] == [
        ("tooluse_A1", {"city": "Quito"}),
        ("tooluse_B2", {}),
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (70, 25)
    history = [
        ChatMessage.user("q"),
        result.to_message(),
        ChatMessage.tool_result(ToolResult.success("tooluse_A1", "get_weather", "cold")),
        ChatMessage.tool_result(ToolResult.failure("tooluse_B2", "get_time", "down")),
    ]
    body = bedrock.encode_request(history, [WEATHER, TIME], model=CLAUDE)
    assert body["messages"][1]["content"] == GOLDEN_RESPONSE["output"]["message"]["content"]
    assert body["messages"][2]["content"][1]["toolResult"]["status"] == "error"
    other = bedrock.encode_request(history, [WEATHER, TIME], model="amazon.nova-pro-v1:0")
    assert "reasoningContent" not in str(other["messages"][1])


def test_stream_assembler_by_content_block_index():
    events_in = [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockDelta": {
                "contentBlockIndex": 0,
                "delta": {"reasoningContent": {"text": "ok"}},
            }
        },
        {
            "contentBlockDelta": {
                "contentBlockIndex": 0,
                "delta": {"reasoningContent": {"signature": "S"}},
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": "Hi."}}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {
            "contentBlockStart": {
                "contentBlockIndex": 2,
                "start": {"toolUse": {"toolUseId": "tu1", "name": "get_weather"}},
            }
        },
        {
            "contentBlockDelta": {
                "contentBlockIndex": 2,
                "delta": {"toolUse": {"input": '{"city":'}},
            }
        },
        {
            "contentBlockStart": {
                "contentBlockIndex": 3,
                "start": {"toolUse": {"toolUseId": "tu2", "name": "get_time"}},
            }
        },
        {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '"Bonn"}'}}}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
        {"contentBlockStop": {"contentBlockIndex": 3}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 9, "outputTokens": 4}}},
    ]
    assembler = bedrock.BedrockStreamAssembler(model=CLAUDE)
    events = [e for ev in events_in for e in assembler.feed(ev)]
    _, result = assembler.finish()
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["ok"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi."]
    assert [e.id for e in events if isinstance(e, ToolCallStarted)] == ["tu1", "tu2"]
    assert (
        "".join(e.text for e in events if isinstance(e, ArgumentsDelta) and e.index == 0)
        == '{"city":"Bonn"}'
    )
    assert [e.call.arguments for e in events if isinstance(e, ToolCallFinished)] == [
        {"city": "Bonn"},
        {},
    ]
    assert result.usage.output_tokens == 4 and result.finish_reason == "tool_calls"
    assert result.message.parts[0].state.data == {"reasoningText": {"text": "ok", "signature": "S"}}


def test_stream_malformed_tool_use_is_a_parse_error_event():
    assembler = bedrock.BedrockStreamAssembler()
    events = assembler.feed({"messageStop": {"stopReason": "malformed_tool_use"}})
    assert isinstance(events[0], ParseError)
    assert assembler.finish()[1].finish_reason == "malformed_tool_call"


def test_stream_exception_event_raises():
    from tooluse.errors import BackendError

    with pytest.raises(BackendError, match="throttlingException"):
        bedrock.BedrockStreamAssembler().feed({"throttlingException": {"message": "slow"}})
