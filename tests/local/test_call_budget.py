"""Constrained calls always finish: a call-specific token budget, a closing reserve that steers
the call to its end, a loop breaker, and honest reporting when the context itself is too small.
"""

from __future__ import annotations

import jsonschema
import pytest

from tooluse import ChatMessage, SamplingParams, ToolDefinition, ToolParameter
from tooluse.events import ParseError
from tooluse.local import LlamaCppBackend
from tooluse.local.call_shape import count_values
from tooluse.local.grammar import minimal_instance
from tooluse.local.sampling import DecodeSettings, JsonStringState, is_looping
from tooluse.providers.base import GenerationDone

LETTER = ToolDefinition(
    name="write_letter",
    description="Write and send a long formal letter",
    parameters=(
        ToolParameter("recipient", description="Full name and postal address of the recipient"),
        ToolParameter("subject", description="Subject line"),
        ToolParameter("body", description="The whole letter, several paragraphs"),
        ToolParameter("closing", description="Closing formula and signature"),
    ),
)
LETTER_REQUEST = (
    "Write a very long letter to Mr. John Smith, 12 Long Road, Springfield, complaining about "
    "the noise of his dog, the state of his garden, his car parked on my lawn and his music."
)


def user(text: str) -> list[ChatMessage]:
    return [ChatMessage.user(text)]


# -- pure logic ------------------------------------------------------------------------------


def test_minimal_instance_keeps_required_keys_with_shortest_values():
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"enum": ["fahrenheit", "c"]},
            "days": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "note": {"type": "string"},
            "mode": {"anyOf": [{"type": "string", "minLength": 3}, {"type": "null"}]},
        },
        "required": ["city", "unit", "days", "tags", "mode"],
    }
    assert minimal_instance(schema) == {
        "city": "",
        "unit": "c",
        "days": 0,
        "tags": ["", ""],
        "mode": None,
    }


def test_minimal_instance_follows_local_refs():
    schema = {
        "type": "object",
        "properties": {"point": {"$ref": "#/$defs/point"}},
        "required": ["point"],
        "$defs": {
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            }
        },
    }
    assert minimal_instance(schema) == {"point": {"x": 0, "y": 0}}


def test_count_values_counts_leaves_of_nested_objects():
    assert count_values(LETTER.parameters_schema) == 4
    nested = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "object", "properties": {"c": {}, "d": {}}},
            "e": {"type": "array", "items": {"type": "object", "properties": {"f": {}}}},
        },
    }
    assert count_values(nested) == 4


def test_json_string_state_follows_quotes_and_escapes():
    state = JsonStringState()
    state.feed('{"a": "x')
    assert state.in_string
    state.feed('\\"y')  # an escaped quote does not end the string
    assert state.in_string
    state.feed('\\\\"')  # an escaped backslash, then the closing quote
    assert not state.in_string
    state.feed("}")
    assert not state.in_string


def test_loops_longer_than_sixteen_tokens_are_detected():
    sentence = list(range(100, 130))  # a 30-token sentence, said twice
    assert is_looping([1, 2, 3] + sentence + sentence)
    assert not is_looping([1, 2, 3] + sentence + sentence[:-1] + [7])
    assert not is_looping(list(range(80)))


# -- the real model --------------------------------------------------------------------------


@pytest.mark.slow
def test_call_budget_is_derived_from_the_schema(backend, tools):
    weather = tools[0]
    budget, reserve = backend.call_budget([weather])
    skeleton = backend.profile.render_calls(
        [backend_call(weather.name, minimal_instance(weather.parameters_schema))]
    )
    assert reserve >= backend.count_tokens(skeleton)
    assert budget > reserve
    letter_budget, _ = backend.call_budget([LETTER])
    assert letter_budget > budget  # four strings get more room than one
    parallel_budget, _ = backend.call_budget([LETTER], parallel=True)
    assert parallel_budget > letter_budget


def backend_call(name, arguments):
    from tooluse import ToolCall

    return ToolCall(name=name, arguments=arguments)


@pytest.mark.slow
@pytest.mark.parametrize("max_tokens", [1, 4, 12])
def test_a_tiny_max_tokens_still_gives_a_complete_valid_call(backend, tools, max_tokens):
    # before: the call was cut at max_tokens and came back as a parse error
    result = backend.generate_with_tools(
        user("What's the weather in Paris?"),
        tools,
        SamplingParams(max_tokens=max_tokens),
        "required",
    )
    assert result.finish_reason == "tool_calls"
    (call,) = result.tool_calls
    assert call.raw_arguments is None
    jsonschema.validate(
        call.arguments, next(t for t in tools if t.name == call.name).parameters_schema
    )


@pytest.mark.slow
def test_several_long_strings_are_closed_within_a_short_budget(backend):
    """The closing reserve steers a call with four long strings to a valid end."""
    tokens = backend.loop.tokenize(backend.render(user(LETTER_REQUEST), [LETTER]))
    grammar = backend.grammar_for([LETTER], False)
    _, reserve = backend.call_budget([LETTER])
    limit = reserve + 20  # far too short for four free-running paragraphs
    steps = list(
        backend.loop.run(tokens, DecodeSettings(max_tokens=limit, close_within=reserve), grammar)
    )
    text = "".join(step.text for step in steps)
    assert len(steps) <= limit
    assert grammar.matches([step.token for step in steps], backend.loop.eos), text
    parsed = backend.profile.parse_constrained(text)
    assert not parsed.errors
    (call,) = parsed.calls
    jsonschema.validate(call.arguments, LETTER.parameters_schema)


@pytest.mark.slow
def test_without_the_closing_reserve_the_same_budget_cuts_the_call(backend):
    """The control for the test above: the budget alone is not what makes it finish."""
    tokens = backend.loop.tokenize(backend.render(user(LETTER_REQUEST), [LETTER]))
    grammar = backend.grammar_for([LETTER], False)
    _, reserve = backend.call_budget([LETTER])
    steps = list(backend.loop.run(tokens, DecodeSettings(max_tokens=reserve + 20), grammar))
    assert not grammar.matches([step.token for step in steps], backend.loop.eos)


@pytest.mark.slow
def test_letter_call_through_the_backend_is_complete(backend):
    result = backend.generate_with_tools(
        user(LETTER_REQUEST), [LETTER], SamplingParams(max_tokens=16), "required"
    )
    assert result.finish_reason == "tool_calls"
    (call,) = result.tool_calls
    jsonschema.validate(call.arguments, LETTER.parameters_schema)
    assert all(value.strip() for value in call.arguments.values())  # no empty strings
    assert isinstance(result.raw["closed_early"], bool)


@pytest.mark.slow
def test_call_strings_do_not_start_with_closing_brackets(backend, tools):
    calculator = next(t for t in tools if t.name == "calculate")
    for question in ("Multiply 12 by 12.", "What is 1234 * 5678?"):
        result = backend.generate_with_tools(user(question), [calculator], None, "required")
        (call,) = result.tool_calls
        expression = call.arguments["expression"]
        assert expression and expression[0] not in " ,]}{[", expression


@pytest.mark.slow
def test_a_call_cut_by_the_context_end_is_never_reported_as_complete(tools):
    small = LlamaCppBackend.default(n_ctx=1024)
    try:
        # pad the request until only 6 tokens of context are left: no call fits there
        padding = 0
        for _ in range(20):
            messages = user("Weather in Paris?" + " ok" * padding)
            room = small.n_ctx - small.count_tokens(small.render(messages, tools))
            if room == 6:
                break
            padding += room - 6
        assert room == 6
        events = list(small.stream_with_tools(messages, tools, None, "required"))
    finally:
        small.close()
    done = events[-1]
    assert isinstance(done, GenerationDone)
    assert done.result.finish_reason == "length"
    assert done.result.tool_calls == ()
    assert any(isinstance(e, ParseError) for e in events)
    assert done.result.raw["output"]  # the partial text is kept for inspection


@pytest.mark.slow
def test_call_grammar_rejects_empty_and_bracket_led_strings(backend, tools):
    calculator = next(t for t in tools if t.name == "calculate")
    grammar = backend.grammar_for([calculator], False)

    def accepts(expression_json: str) -> bool:
        text = backend.profile.open + (
            '{"name": "calculate", "arguments": {"expression": ' + expression_json + "}}"
        )
        return grammar.matches(
            backend.loop.tokenize(text + backend.profile.close), backend.loop.eos
        )

    assert accepts('"12 * 12"')
    assert accepts('"x}"')  # closing characters are fine after the first one
    for bad in ('""', '" 12"', '"}}]</tool_call>"', '"{12}"', '", 12"'):
        assert not accepts(bad), bad
