"""Encode a conversation for each provider, read the wire back, and check nothing it can carry is lost.

The assistant turn of a request has the same shape as that provider's response, so decoding it as a
response must give back the calls (ids, names, arguments), the text and the replayable reasoning
state; the results turn must give back each result's id, text and error flag in call order.
"""

from __future__ import annotations

from typing import Any

import pytest

from tooluse import ProviderState
from tooluse.providers import anthropic, bedrock, gemini, openai_chat, openai_responses

from .conversation import TIME, WEATHER, conversation

MODEL = "anthropic.claude-model-x"  # a Claude id, so Bedrock carries the error status


def chat_back(body: dict[str, Any]):
    assistant = next(m for m in body["messages"] if m["role"] == "assistant")
    result = openai_chat.decode_response(
        {"choices": [{"message": assistant, "finish_reason": "tool_calls"}]}
    )
    results = [
        (m["tool_call_id"], m["content"], m["content"].lower().startswith("error"))
        for m in body["messages"]
        if m["role"] == "tool"
    ]
    return result, results


def responses_back(body: dict[str, Any]):
    items = body["input"]
    output = []
    for item in items:
        if item.get("type") in ("reasoning", "function_call", "message"):
            output.append(item)
        elif item.get("role") == "assistant":
            output.append(
                {"type": "message", "content": [{"type": "output_text", "text": item["content"]}]}
            )
    result = openai_responses.decode_response({"output": output}, model=MODEL)
    results = [
        (i["call_id"], i["output"], i["output"].lower().startswith("error"))
        for i in items
        if i.get("type") == "function_call_output"
    ]
    return result, results


def anthropic_back(body: dict[str, Any]):
    assistant = next(m for m in body["messages"] if m["role"] == "assistant")
    result = anthropic.decode_response(
        {"content": assistant["content"], "stop_reason": "tool_use"}, model=MODEL
    )
    results = [
        (b["tool_use_id"], b["content"], b.get("is_error", False))
        for m in body["messages"]
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    return result, results


def gemini_back(body: dict[str, Any]):
    model_turn = next(c for c in body["contents"] if c["role"] == "model")
    result = gemini.decode_response(
        {"candidates": [{"content": model_turn, "finishReason": "STOP"}]}, model=MODEL
    )
    results = [
        (
            p["functionResponse"].get("id"),
            p["functionResponse"]["response"].get(
                "output", p["functionResponse"]["response"].get("error")
            ),
            "error" in p["functionResponse"]["response"],
        )
        for c in body["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]
    return result, results


def bedrock_back(body: dict[str, Any]):
    assistant = next(m for m in body["messages"] if m["role"] == "assistant")
    result = bedrock.decode_response(
        {"output": {"message": assistant}, "stopReason": "tool_use"}, model=MODEL
    )
    results = [
        (
            b["toolResult"]["toolUseId"],
            b["toolResult"]["content"][0]["text"],
            b["toolResult"].get("status") == "error",
        )
        for m in body["messages"]
        for b in m["content"]
        if "toolResult" in b
    ]
    return result, results


STATES = {
    "openai_chat": None,
    "openai_responses": ProviderState(
        provider="openai",
        model=MODEL,
        data={
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Need both tools."}],
        },
    ),
    "anthropic": ProviderState(
        provider="anthropic",
        model=MODEL,
        data={"type": "thinking", "thinking": "Need both tools.", "signature": "s1"},
    ),
    "gemini": ProviderState(provider="gemini", model=MODEL, data={"thoughtSignature": "s2"}),
    "bedrock": ProviderState(
        provider="bedrock",
        model=MODEL,
        data={"reasoningText": {"text": "Need both tools.", "signature": "s3"}},
    ),
}
RESPONSES_MESSAGE = ProviderState(
    provider="openai",
    model=MODEL,
    data={
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
    },
)
CASES = {
    "openai_chat": (openai_chat.encode_request, chat_back),
    "openai_responses": (openai_responses.encode_request, responses_back),
    "anthropic": (anthropic.encode_request, anthropic_back),
    "gemini": (gemini.encode_request, gemini_back),
    "bedrock": (bedrock.encode_request, bedrock_back),
}


@pytest.mark.parametrize("name", list(CASES))
def test_round_trip_keeps_calls_results_errors_and_reasoning_state(name):
    encode, back = CASES[name]
    state = STATES[name]
    # Gemini signs the call part; the others carry a reasoning block.
    history = conversation(
        state=None if name == "gemini" else state,
        call_state=state if name == "gemini" else None,
        # A Responses reasoning item goes back only with the output message that followed it.
        text_state=RESPONSES_MESSAGE if name == "openai_responses" else None,
    )
    result, results = back(encode(history, [WEATHER, TIME], model=MODEL))

    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("call_2", "get_time", {}),
    ]
    assert result.text == "Checking."
    assert [(r[0], r[2]) for r in results] == [("call_1", False), ("call_2", True)]
    assert results[0][1] == "sunny" and "clock offline" in results[1][1]
    if name == "gemini":
        assert result.tool_calls[0].state.data == state.data
    elif state is not None:
        reasoning = result.message.parts[0]
        assert reasoning.state.data == state.data and result.reasoning == "Need both tools."


@pytest.mark.parametrize("name", list(CASES))
def test_state_from_another_provider_never_reaches_the_wire(name):
    encode, _ = CASES[name]
    for other, state in STATES.items():
        if other == name or state is None or {name, other} == {"openai_chat", "openai_responses"}:
            continue
        history = conversation(state=state, call_state=state)
        wire = str(encode(history, [WEATHER, TIME], model=MODEL))
        for secret in ("s1", "s2", "s3", "rs_1"):
            if secret in str(state.data):
                assert f"'{secret}'" not in wire, (name, other)
