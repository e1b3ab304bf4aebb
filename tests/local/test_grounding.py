"""The grounding check: a call's argument values looked for in the conversation."""

from __future__ import annotations

import pytest

from tooluse.local.grounding import GroundingCheck, conversation_text, grounded_share
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition


def call(name: str = "f", **arguments):
    return ToolCall(id="c1", name=name, arguments=arguments)


@pytest.mark.parametrize(
    ("request_text", "arguments", "share"),
    [
        ("Find the area of a triangle with a base of 10 and height of 5.", {"b": 10, "h": 5}, 1.0),
        ("Distance between A(3,4) and B(1,2)?", {"a": [3, 4], "b": [1, 2]}, 1.0),  # not 34
        ("Revenue of 1,200,000 dollars", {"revenue": 1200000}, 1.0),
        ("Roots of 5x^2 + 20x - 25", {"a": 5, "b": 20, "c": -25}, 1.0),  # the sign is ignored
        ("Grow it by 10%", {"rate": 0.1}, 1.0),
        ("Grow it by 10%", {"rate": 10}, 1.0),
        ("a walk of 2 km", {"meters": 2000}, 1.0),
        ("three apples and a dozen eggs", {"apples": 3, "eggs": 12}, 1.0),
        ("Sales of product A at company XYZ", {"product": "ProductA", "company": "xyz"}, 1.0),
        ("The weather in New York City", {"city": "New York, NY"}, 1.0),  # half its words
        ("Who won the FIFA World Cup 2010?", {"company_name": "StokkenTicker"}, 0.0),
        ("Who won the FIFA World Cup in 2010?", {"expression": "2.0.0.0"}, 0.0),
        ("Compute 366 * 6045.", {"code": "result = 366 * 6045\nprint(int(result))"}, 1.0),
        ("Compute 366 * 6045.", {"code": "print(366 * 6046)"}, 0.0),
        (
            "What is the time now in New York City?",
            {"location": "New York City", "d": "2022-01-01"},
            0.5,
        ),
        ("Average temperature in Los Angeles?", {"weight": 1.75, "height": 5.3}, 0.0),
    ],
)
def test_the_share_of_values_found_in_the_request(request_text, arguments, share):
    assert grounded_share([call(**arguments)], request_text) == pytest.approx(share)


def test_booleans_nulls_and_schema_defaults_are_not_counted():
    tool = ToolDefinition(
        name="f",
        description="",
        input_schema={
            "type": "object",
            "properties": {"timeout": {"type": "integer", "default": 30}, "x": {"type": "string"}},
        },
    )
    text = "connect to 'ue boom'"
    assert grounded_share([call(x="ue boom", timeout=30)], text) == 0.5  # 30 counted, not found
    assert grounded_share([call(x="ue boom", timeout=30)], text, [tool]) == 1.0
    assert grounded_share([call(x="ue boom", timeout=31)], text, [tool]) == 0.5
    assert grounded_share([call(flag=True, none=None, empty=" ")], text) is None
    assert grounded_share([call()], text) is None  # no arguments: nothing to count


def test_nested_values_and_several_calls_count_each_leaf():
    calls = [call(point={"x": 3, "y": 4}, tags=["red", "blue"]), call("g", n=99)]
    assert grounded_share(calls, "a red point at 3, 4") == pytest.approx(3 / 5)


def test_the_conversation_is_the_text_of_every_message():
    messages = [
        ChatMessage(role="system", content="The user lives in Lyon"),
        ChatMessage(role="user", content="Look up Paris"),
        ChatMessage(role="assistant", content="", tool_calls=(call(city="Nice"),)),
        ChatMessage.tool_result(ToolResult(call_id="c1", tool_name="f", output="code 75001")),
        ChatMessage(role="assistant", content="Flight AF1234 leaves at 9."),
    ]
    text = conversation_text(messages)
    assert all(word in text for word in ("Lyon", "Paris", "75001", "AF1234"))
    assert "Nice" not in text  # an earlier call's own arguments are no evidence


def test_the_check_refuses_a_guessed_call_and_keeps_the_others():
    check = GroundingCheck()
    asked = [ChatMessage(role="user", content="Who won the FIFA World Cup 2010?")]
    guessed = check.review(asked, [call(company_name="StokkenTicker")])
    assert not guessed.call and "0% of the call's values" in guessed.reason
    half = check.review(asked, [call(team="Spain", year=2010)])  # one of two is not evidence
    assert not half.call and half.score == 0.5
    assert check.review(asked, [call(year=2010, cup="FIFA World Cup")]).call
    assert check.review(asked, [call(flag=True)]).call  # nothing to judge: it stands
    # after tool results for this request, a chain's next call stands whatever its values
    answered = [
        *asked,
        ChatMessage(role="assistant", content="", tool_calls=(call(q="winner"),)),
        ChatMessage.tool_result(ToolResult(call_id="c1", tool_name="f", output="Spain")),
    ]
    assert check.review(answered, [call(answer="42")]).call


def test_after_results_the_chain_check_refuses_repeats_and_guesses_and_keeps_the_chain():
    from tooluse.local.grounding import REPEATED_CALLS, repeats_last_calls

    check = GroundingCheck(after_results=True)
    asked = [ChatMessage(role="user", content="What is 12 * (3 + 4)?")]
    first = call(expression="12 * (3 + 4)")
    answered = [
        *asked,
        ChatMessage(role="assistant", content="", tool_calls=(first,)),
        ChatMessage.tool_result(ToolResult(call_id="c1", tool_name="f", output="84")),
    ]
    again = check.review(answered, [ToolCall(id="c9", name="f", arguments=dict(first.arguments))])
    assert not again.call and again.reason == REPEATED_CALLS
    assert repeats_last_calls(answered, [first]) and not repeats_last_calls(asked, [first])
    guessed = check.review(answered, [call(city="Paris")])  # nothing asked for Paris
    assert not guessed.call and "0% of the call's values" in guessed.reason
    assert check.review(answered, [call(answer=84)]).call  # the result submitted: the chain
    assert check.review(answered, [call(expression="84 - 4 * 3")]).call
    # the same call after a different one is a new step, not a repeat
    other = [*answered[:2], ChatMessage(role="assistant", content="", tool_calls=(call(x=7),))]
    assert not repeats_last_calls(other, [first])
    # without after_results the chain's calls stand whatever they are
    assert GroundingCheck().review(answered, [call(city="Paris")]).call


def test_model_strings_turn_the_check_on_and_off():
    from tooluse.local.model_strings import parse_local_options

    off: dict = {}
    on: dict = {}
    chain: dict = {}
    assert parse_local_options("#grounding=off", off) == "" and off == {"grounding": None}
    parse_local_options("#grounding=on", on)
    assert on["grounding"] == GroundingCheck()
    parse_local_options("#grounding=chain", chain)
    assert chain["grounding"] == GroundingCheck(after_results=True)
    with pytest.raises(ValueError, match="#grounding=on\\|off\\|chain"):
        parse_local_options("#grounding=maybe", {})
