"""The demo's help for the small model: the expression check and readable weather output,
and the demo's own verdict on answers (shown, never hidden)."""

from __future__ import annotations

from tooluse import ScriptedBackend, ToolCall, run
from tooluse.cli.local_cmd import answer_problem, expected_answer
from tooluse.local.demo_tools import demo_tools, expression_check, expression_in, get_weather


def test_expression_in_finds_the_written_expression():
    assert expression_in("What is 12 * (3 + 4)?") == "12 * (3 + 4)"
    assert expression_in("Compute 345 + 678.") == "345 + 678"
    assert expression_in("What is the capital of France?") is None
    assert expression_in("Call tool 3 with n=3") is None  # numbers, no operator between them


def test_dropped_brackets_are_corrected_and_recorded():
    check = expression_check("What is 12 * (3 + 4)?")
    call = ToolCall(id="c1", name="calculate", arguments={"expression": "12 * 3 + 4"})
    fixed = check(call)
    assert fixed is not None and fixed.arguments == {"expression": "12 * (3 + 4)"}
    assert check.corrections == {"c1": ("12 * 3 + 4", "12 * (3 + 4)")}


def test_equivalent_or_unrelated_expressions_are_left_alone():
    check = expression_check("What is 12 * (3 + 4)?")
    same = ToolCall(id="a", name="calculate", arguments={"expression": "(3+4)*12"})
    other = ToolCall(id="b", name="calculate", arguments={"expression": "5 + 5"})
    weather = ToolCall(id="c", name="get_weather", arguments={"city": "Paris"})
    assert check(ToolCall(id="d", name="calculate", arguments={"expression": "12*(3+4)"})) is None
    assert check(other) is None and check(weather) is None
    assert check(same) is None  # other number order: not the dropped-bracket mistake
    assert check.corrections == {}


def test_corrected_call_runs_in_the_loop_and_the_verdict_reads_the_answer():
    question = "What is 12 * (3 + 4)?"
    backend = ScriptedBackend(
        [[ToolCall(id="c1", name="calculate", arguments={"expression": "12 * 3 + 4"})], "It is 84."]
    )
    result = run(backend, question, tools=demo_tools(), before_tool_call=expression_check(question))
    assert result.trail[0].output == "84"
    assert expected_answer(question, result) == "84"
    weather = run(
        ScriptedBackend([[ToolCall(name="get_weather", arguments={"city": "Oslo"})], "Cold."]),
        "Weather in Oslo?",
        tools=demo_tools(),
    )
    assert expected_answer("Weather in Oslo?", weather) in get_weather("Oslo")


def test_the_built_in_weather_question_answered_without_the_tool_is_wrong():
    question = "What's the weather in Paris?"
    made_up = run(
        ScriptedBackend(["Paris is lovely this time of year."]), question, tools=demo_tools()
    )
    assert answer_problem(question, made_up) == "no tool gave a number to answer with"
    said = run(
        ScriptedBackend([[ToolCall(name="get_weather", arguments={"city": "Paris"})], "x"]),
        question,
        tools=demo_tools(),
    )
    number = expected_answer(question, said)
    assert answer_problem(question, said) == f"the answer does not contain {number!r}"
    told = run(
        ScriptedBackend(
            [[ToolCall(name="get_weather", arguments={"city": "Paris"})], f"It is {number}°C."]
        ),
        question,
        tools=demo_tools(),
    )
    assert answer_problem(question, told) is None
    # a question of the user's own with no tool number has nothing to check
    assert answer_problem("Tell me a joke.", made_up) is None


def test_weather_is_a_sentence_with_the_number():
    text = get_weather("Paris")
    assert text.startswith("In Paris the temperature is ") and "°C" in text
    assert get_weather("Paris", "fahrenheit").endswith(".")
