"""What SmolLM2 reads when it answers after tool results, and that its answer uses them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tooluse import ChatMessage, SamplingParams, ToolCall, ToolResult
from tooluse.local.profiles import (
    ANSWER_FROM_RESULTS,
    SMOLLM2,
    fold_tool_results,
    readable_result,
)


def answered(question: str, tool: str, arguments: dict, output: str) -> list[ChatMessage]:
    call = ToolCall(name=tool, arguments=arguments)
    return [
        ChatMessage.user(question),
        ChatMessage.assistant(tool_calls=[call]),
        ChatMessage.tool_result(ToolResult(call_id=call.id, tool_name=tool, output=output)),
    ]


def test_readable_result_flattens_a_json_object_only():
    assert readable_result('{"city": "Paris", "temperature": 17, "tags": ["a"]}') == (
        'city: Paris; temperature: 17; tags: ["a"]'
    )
    assert readable_result("84") == "84"
    assert readable_result("[1, 2]") == "[1, 2]"
    assert readable_result("{}") == "{}"
    assert readable_result("not json {") == "not json {"


def test_instructed_fold_names_the_call_and_adds_the_answer_instruction():
    messages = answered("What is 6 * 7?", "calculate", {"expression": "6 * 7"}, "42")
    dicts = SMOLLM2.to_template_messages(messages, ())
    assert dicts == [
        {"role": "system", "content": ANSWER_FROM_RESULTS},
        {
            "role": "user",
            "content": "What is 6 * 7?\n\nTool result (calculate(expression='6 * 7')): 42",
        },
    ]


def test_user_system_prompt_follows_the_answer_instruction():
    messages = [ChatMessage.system("Be kind.")] + answered(
        "Weather?", "get_weather", {"city": "Oslo"}, '{"temperature": 3}'
    )
    system, user = SMOLLM2.to_template_messages(messages, ())
    assert system["content"] == f"{ANSWER_FROM_RESULTS}\n\nBe kind."
    assert user["content"].endswith("Tool result (get_weather(city='Oslo')): temperature: 3")


def test_plain_fold_keeps_the_first_version():
    plain = replace(SMOLLM2, results_prompt="plain")
    messages = answered("What is 6 * 7?", "calculate", {"expression": "6 * 7"}, "42")
    assert plain.to_template_messages(messages, ()) == [
        {"role": "user", "content": "What is 6 * 7?\n\nResult of calculate: 42"}
    ]


def test_no_instruction_without_tool_results():
    dicts = SMOLLM2.to_template_messages([ChatMessage.user("Hi")], ())
    assert dicts == [{"role": "user", "content": "Hi"}]


def test_every_result_of_a_turn_is_folded_into_its_question():
    first = ToolCall(name="get_time", arguments={"timezone": "UTC"})
    second = ToolCall(name="calculate", arguments={"expression": "1+1"})
    messages = [
        ChatMessage.user("Time and 1+1?"),
        ChatMessage.assistant(tool_calls=[first, second]),
        ChatMessage.tool_result(ToolResult(call_id=second.id, tool_name="calculate", output="2")),
        ChatMessage.tool_result(ToolResult(call_id=first.id, tool_name="get_time", output="12:00")),
    ]
    (user,) = fold_tool_results(messages, "instructed")
    assert user.content == (
        "Time and 1+1?\n\nTool result (calculate(expression='1+1')): 2"
        "\n\nTool result (get_time(timezone='UTC')): 12:00"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "tool", "arguments", "output", "key"),
    [
        ("What is 1234 * 5678?", "calculate", {"expression": "1234 * 5678"}, "7006652", "7006652"),
        ("What is 12 * (3 + 4)?", "calculate", {"expression": "12 * (3 + 4)"}, "84", "84"),
        (
            "Is it cold in Moscow now?",
            "get_weather",
            {"city": "Moscow"},
            '{"city": "Moscow", "temperature": -8, "unit": "celsius", "conditions": "snowy"}',
            "snow",
        ),
    ],
)
def test_the_answer_after_a_tool_result_uses_it(
    backend, tools, question, tool, arguments, output, key
):
    result = backend.generate_with_tools(
        answered(question, tool, arguments, output), tools, SamplingParams(max_tokens=96), "auto"
    )
    assert result.raw["plan"].startswith("tool results are in: answer")
    assert key in result.text.replace(",", "").lower()
