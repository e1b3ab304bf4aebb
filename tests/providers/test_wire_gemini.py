"""Gemini generateContent: golden request/response JSON, rules, round trip and stream chunks."""

from __future__ import annotations

import pytest

from tooluse import (
    ChatMessage,
    ParseError,
    ProviderState,
    SamplingParams,
    ToolCallFinished,
    ToolResult,
)
from tooluse.events import ReasoningDelta, TextDelta
from tooluse.providers import anthropic, gemini

from .conversation import TIME, WEATHER, conversation

SIG = ProviderState(provider="gemini", model="gemini-3-pro", data={"thoughtSignature": "c2lnLTE="})


def test_golden_request_one_user_content_for_results_in_call_order():
    body = gemini.encode_request(
        conversation(call_state=SIG),
        [WEATHER, TIME],
        SamplingParams(temperature=0.5, max_tokens=64, stop=("X",), seed=3),
        "auto",
        model="gemini-3-pro",
    )
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and the time?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Paris"},
                        "id": "call_1",
                    },
                    "thoughtSignature": "c2lnLTE=",
                },
                {"functionCall": {"name": "get_time", "args": {}, "id": "call_2"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"output": "sunny"},
                        "id": "call_1",
                    }
                },
                {
                    "functionResponse": {
                        "name": "get_time",
                        "response": {"error": "error: clock offline"},
                        "id": "call_2",
                    }
                },
                {"text": "Thanks. Anything else?"},
            ],
        },
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    declarations = body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["get_weather", "get_time"]
    assert body["generationConfig"] == {
        "temperature": 0.5,
        "maxOutputTokens": 64,
        "seed": 3,
        "stopSequences": ["X"],
    }


def test_signature_dropped_for_other_model_or_provider():
    body = gemini.encode_request(
        conversation(call_state=SIG), [WEATHER, TIME], model="gemini-2.5-flash"
    )
    assert all("thoughtSignature" not in p for p in body["contents"][1]["parts"])
    anth = anthropic.encode_request(
        conversation(call_state=SIG), [WEATHER, TIME], model="gemini-3-pro"
    )
    assert "c2lnLTE=" not in str(anth)


@pytest.mark.parametrize(
    "choice, config",
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ("get_time", {"mode": "ANY", "allowedFunctionNames": ["get_time"]}),
    ],
)
def test_tool_choice_mapping(choice, config):
    body = gemini.encode_request([ChatMessage.user("x")], [WEATHER, TIME], tool_choice=choice)
    assert body["toolConfig"] == {"functionCallingConfig": config}


GOLDEN_RESPONSE = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Planning the lookups.", "thought": True},
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                        "thoughtSignature": "U0lHMQ==",
                    },
                    {"functionCall": {"name": "get_time", "args": {}}},
                ],
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {"promptTokenCount": 80, "candidatesTokenCount": 12, "thoughtsTokenCount": 30},
}


def test_golden_response_decode_mints_ids_and_round_trip_never_sends_them():
    result = gemini.decode_response(GOLDEN_RESPONSE, model="gemini-3-pro")
    assert result.finish_reason == "tool_calls"  # STOP with calls is a tool turn
    assert result.reasoning == "Planning the lookups."
    first, second = result.tool_calls
    assert first.synthetic_id and second.synthetic_id and first.id != second.id
    assert result.usage.input_tokens == 80 and result.usage.output_tokens == 42
    history = [
        ChatMessage.user("q"),
        result.to_message(),
        ChatMessage.tool_result(ToolResult.success(second.id, "get_time", "noon")),
        ChatMessage.tool_result(ToolResult.failure(first.id, "get_weather", "no data")),
    ]
    body = gemini.encode_request(history, [WEATHER, TIME], model="gemini-3-pro")
    model_parts = body["contents"][1]["parts"]
    # Unsigned thought text is not sent back; the signature stays on the call it came with.
    assert model_parts == [
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": "U0lHMQ==",
        },
        {"functionCall": {"name": "get_time", "args": {}}},
    ]
    responses = [p["functionResponse"] for p in body["contents"][2]["parts"]]
    assert responses == [
        {"name": "get_weather", "response": {"error": "error: no data"}},
        {"name": "get_time", "response": {"output": "noon"}},
    ]
    # Minted ids still pair calls and results for a provider that needs ids.
    sent = anthropic.encode_request(history, [WEATHER, TIME])
    assert (
        sent["messages"][1]["content"][0]["id"] == sent["messages"][2]["content"][0]["tool_use_id"]
    )


def test_ids_sent_by_gemini_are_echoed():
    body = {
        "candidates": [
            {
                "content": {
                    "parts": [{"functionCall": {"id": "fc-7", "name": "get_time", "args": {}}}]
                },
                "finishReason": "STOP",
            }
        ]
    }
    call = gemini.decode_response(body).tool_calls[0]
    assert call.id == "fc-7" and not call.synthetic_id
    sent = gemini.encode_request(
        [
            ChatMessage.user("q"),
            gemini.decode_response(body).to_message(),
            ChatMessage.tool_result(ToolResult.success("fc-7", "get_time", "1")),
        ],
        [TIME],
    )
    assert sent["contents"][2]["parts"][0]["functionResponse"]["id"] == "fc-7"


def test_blocked_prompt_is_content_filter():
    result = gemini.decode_response({"promptFeedback": {"blockReason": "SAFETY"}})
    assert result.finish_reason == "content_filter" and result.text == ""


def test_stream_chunks_append_whole_calls_and_flag_malformed_calls():
    assembler = gemini.GeminiStreamAssembler(model="g")
    chunks = [
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "hm", "thought": True}]}}
            ]
        },
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Sure, "}]}}]},
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "calling."},
                            {"functionCall": {"name": "get_weather", "args": {"city": "Kyiv"}}},
                        ],
                    }
                }
            ]
        },
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "get_time", "args": {}}}],
                    },
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 9},
        },
    ]
    events = [e for c in chunks for e in assembler.feed(c)]
    _, result = assembler.finish()
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["hm"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sure, calling."
    assert [e.call.name for e in events if isinstance(e, ToolCallFinished)] == [
        "get_weather",
        "get_time",
    ]
    assert [e.index for e in events if isinstance(e, ToolCallFinished)] == [0, 1]
    assert result.text == "Sure, calling." and result.finish_reason == "tool_calls"
    assert result.usage.output_tokens == 9
    bad = gemini.GeminiStreamAssembler()
    flagged = bad.feed(
        {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "bad json"}]}
    )
    assert isinstance(flagged[0], ParseError) and flagged[0].raw == "bad json"
    assert bad.finish()[1].finish_reason == "malformed_tool_call"
