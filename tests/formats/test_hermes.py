"""Hermes / Qwen format: prompt section, complete parses, every split, broken input."""

from __future__ import annotations

import json

import pytest

from tooluse.events import ArgumentsDelta, ParseError, TextDelta, ToolCallFinished, ToolCallStarted
from tooluse.formats import HermesToolCallParser, get_parser

from .helpers import TODAY, TOOLS, WEATHER, assert_stream_equals_parse, chunks, run_split

P = HermesToolCallParser()

REAL_OUTPUTS = [
    # Qwen3 walkthrough: one call, newline-wrapped
    '<tool_call>\n{"name": "today", "arguments": {}}\n</tool_call>',
    # text before, two calls, text after
    'Let me check both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n'
    '<tool_call>\n{"name": "search", "arguments": {"query": "rain \\"gear\\" ünïcode", "filters": {"a": [1, {"b": null}]}}}\n</tool_call>\nDone.',
    # reasoning with a call-looking draft inside it
    '<think>\nI could write <tool_call>{"name": "today"}</tool_call> here.\n</think>\n\n'
    '<tool_call>\n{"name": "today", "arguments": {}}\n</tool_call>',
    # closing marker inside a string argument
    '<tool_call>{"name": "search", "arguments": {"query": "how to write </tool_call> in docs"}}</tool_call>',
    # the Qwen3 seed's unclosed last call
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}',
    # SmolLM2 writes a list inside one block
    '<tool_call>[{"name": "today", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]</tool_call>',
    # parameters instead of arguments, arguments before name, string-encoded arguments
    '<tool_call>{"name": "get_weather", "parameters": {"city": "Lima"}}</tool_call>'
    '<tool_call>{"arguments": {"city": "Kyiv"}, "name": "get_weather"}</tool_call>'
    '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Baku\\"}"}</tool_call>',
    # Python literals, missing arguments, OpenAI wrapper
    "<tool_call>{'name': 'get_weather', 'arguments': {'city': 'Nice', 'metric': True, 'days': None}}</tool_call>"
    '<tool_call>{"name": "today"}</tool_call>'
    '<tool_call>{"type": "function", "function": {"name": "today", "arguments": {}}}</tool_call>',
    # shell braces that crash naive parsers (vLLM #21544)
    '<tool_call>{"name": "search", "arguments": {"query": "mkdir -p x/{a,b"}}</tool_call>',
    "plain answer with no calls at all, < and <tool and </tool_call> stray",
]


@pytest.mark.parametrize("text", REAL_OUTPUTS)
def test_every_split_matches_parse(text):
    assert_stream_equals_parse(P, text)


def test_single_call_as_in_the_qwen3_walkthrough():
    result = P.parse(REAL_OUTPUTS[0], TOOLS)
    assert result.text == ""
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("today", {})]
    assert result.errors == ()


def test_text_between_and_around_calls_is_kept():
    result = P.parse(REAL_OUTPUTS[1], TOOLS)
    assert result.text == "Let me check both.\n\n\nDone."
    assert [c.name for c in result.tool_calls] == ["get_weather", "search"]
    assert result.tool_calls[1].arguments["filters"] == {"a": [1, {"b": None}]}
    assert result.tool_calls[1].arguments["query"] == 'rain "gear" ünïcode'


def test_think_is_reasoning_and_never_parsed_for_calls():
    result = P.parse(REAL_OUTPUTS[2], TOOLS)
    assert "<tool_call>" in result.reasoning
    assert len(result.tool_calls) == 1
    assert result.text == "\n\n"


def test_prefilled_think_only_closes():
    parser = HermesToolCallParser(reasoning_started=True)
    result = parser.parse(
        'thinking...</think>answer <tool_call>{"name": "today"}</tool_call>', TOOLS
    )
    assert result.reasoning == "thinking..."
    assert result.text == "answer "
    assert [c.name for c in result.tool_calls] == ["today"]


def test_marker_inside_string_is_not_a_terminator():
    call = P.parse(REAL_OUTPUTS[3], TOOLS).tool_calls[0]
    assert call.arguments == {"query": "how to write </tool_call> in docs"}


def test_unclosed_last_call_is_read():
    result = P.parse(REAL_OUTPUTS[4], TOOLS)
    assert result.tool_calls[0].arguments == {"city": "Oslo"}
    assert result.errors == ()


def test_list_of_calls_in_one_block():
    result = P.parse(REAL_OUTPUTS[5], TOOLS)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("today", {}),
        ("get_weather", {"city": "Rome"}),
    ]


def test_argument_spellings():
    result = P.parse(REAL_OUTPUTS[6], TOOLS)
    assert [c.arguments for c in result.tool_calls] == [
        {"city": "Lima"},
        {"city": "Kyiv"},
        {"city": "Baku"},
    ]
    assert result.errors == ()


def test_python_literals_missing_arguments_and_wrapper():
    result = P.parse(REAL_OUTPUTS[7], TOOLS)
    assert [c.arguments for c in result.tool_calls] == [
        {"city": "Nice", "metric": True, "days": None},
        {},
        {},
    ]
    assert [c.name for c in result.tool_calls] == ["get_weather", "today", "today"]


def test_streamed_arguments_are_raw_text_and_name_comes_first():
    text = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</tool_call>'
    )
    events = run_split(P, chunks(text, 4))
    kinds = [type(e) for e in events]
    assert kinds[0] is ToolCallStarted
    assert kinds[-1] is ToolCallFinished
    deltas = [e.text for e in events if isinstance(e, ArgumentsDelta)]
    assert len(deltas) > 3  # arguments stream as they arrive, not at the end
    assert json.loads("".join(deltas)) == {"city": "Paris", "days": 3}


def test_unknown_tool_is_kept_and_reported():
    result = P.parse('<tool_call>{"name": "launch", "arguments": {"x": 1}}</tool_call>', TOOLS)
    assert [c.name for c in result.tool_calls] == ["launch"]
    assert result.errors[0].index == 0
    assert "launch" in result.errors[0].message
    assert '"launch"' in result.errors[0].raw


def test_no_tools_given_means_no_name_check():
    result = P.parse('<tool_call>{"name": "anything"}</tool_call>')
    assert result.errors == ()
    assert result.tool_calls[0].name == "anything"


def test_broken_arguments_keep_raw_text_and_report():
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    result = assert_stream_equals_parse(P, text)
    call = result.tool_calls[0]
    assert call.arguments == {}
    assert call.raw_arguments == '{"city": "Par'
    assert result.errors[0].index == 0
    assert "cut off" in result.errors[0].message


def test_missing_brace_before_closing_tag_recovers_arguments_with_error():
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Pau"}</tool_call>after'
    result = assert_stream_equals_parse(P, text)
    assert result.tool_calls[0].arguments == {"city": "Pau"}
    assert result.text == "after"
    assert "unbalanced" in result.errors[0].message


def test_block_without_json_is_kept_as_text_and_reported():
    text = "<tool_call>get_weather(city='x')</tool_call>after"
    result = assert_stream_equals_parse(P, text)
    assert result.tool_calls == ()
    assert result.text == text
    assert result.errors[0].raw == "<tool_call>"


def test_literal_tag_in_prose_does_not_swallow_the_rest():
    text = "Wrap calls in a <tool_call> tag, then wait. " * 3
    result = assert_stream_equals_parse(P, text)
    assert result.text == text
    assert len(result.errors) == 3


def test_split_markers_never_leak_into_text():
    text = "Hi <tool_call>" + '{"name": "today"}' + "</tool_call> bye"
    for n in (1, 2, 3, 5):
        events = run_split(P, chunks(text, n))
        joined = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert joined == "Hi  bye"
        assert not any(isinstance(e, ParseError) for e in events)


def test_start_and_end_in_one_delta_with_text():
    events = run_split(
        P, ['a<tool_call>{"name": "today"}</tool_call>b<tool_call>{"name": "today"}']
    )
    assert [type(e).__name__ for e in events].count("ToolCallFinished") == 2


def test_format_tools_lists_every_schema():
    prompt = P.format_tools([WEATHER, TODAY])
    assert "<tools>" in prompt and "</tools>" in prompt and "<tool_call>" in prompt
    lines = prompt.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert [json.loads(line)["function"]["name"] for line in lines] == ["get_weather", "today"]


def test_registry_aliases():
    assert isinstance(get_parser("qwen3"), HermesToolCallParser)
    assert isinstance(get_parser("Hermes"), HermesToolCallParser)
    with pytest.raises(KeyError, match="known formats"):
        get_parser("no-such-format")


def test_feed_after_close_is_an_error():
    stream = P.stream(TOOLS)
    stream.close()
    with pytest.raises(RuntimeError):
        stream.feed("x")


def test_list_without_call_objects_is_reported_and_empty_list_is_not():
    result = assert_stream_equals_parse(P, '<tool_call>["get_weather", 3]</tool_call>')
    assert result.tool_calls == ()
    assert "no call object" in result.errors[0].message
    assert assert_stream_equals_parse(P, "<tool_call>[]</tool_call>").errors == ()
