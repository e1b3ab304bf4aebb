"""Python-call lists and Gemma call objects stream their arguments one member at a time."""

from __future__ import annotations

import json

import pytest

from tooluse.events import ArgumentsDelta, ToolCallFinished, ToolCallStarted
from tooluse.formats import get_parser
from tooluse.formats.base import ArgumentsWriter

from .helpers import TOOLS, assert_stream_equals_parse, check_events, chunks, run_split

SEARCH_ARGS = {"query": "a, b) [c]", "filters": {"k": [1, 2], "on": True}, "tags": ["x"]}

TEXTS = {
    "pythonic": (
        "[search(query='a, b) [c]', ",
        "filters={'k': [1, 2], 'on': True}, ",
        "tags=['x'])]",
    ),
    "lfm2": (
        "<|tool_call_start|>[search(query='a, b) [c]', ",
        "filters={'k': [1, 2], 'on': True}, ",
        "tags=['x'])]<|tool_call_end|>",
    ),
    "functiongemma": (
        "<start_function_call>call:search{query:<escape>a, b) [c]<escape>,",
        "filters:{k:[1,2],on:true},",
        "tags:[<escape>x<escape>]}<end_function_call>",
    ),
    "gemma4": (
        '<|tool_call>call:search{query:<|"|>a, b) [c]<|"|>,',
        "filters:{k:[1,2],on:true},",
        'tags:[<|"|>x<|"|>]}<tool_call|>',
    ),
}


@pytest.mark.parametrize("fmt", sorted(TEXTS))
def test_arguments_arrive_member_by_member(fmt):
    stream = get_parser(fmt).stream(TOOLS)
    first, second, third = TEXTS[fmt]
    seen = stream.feed(first)
    # the call has started and its first argument is out before the call is complete
    assert [e.name for e in seen if isinstance(e, ToolCallStarted)] == ["search"]
    assert not any(isinstance(e, ToolCallFinished) for e in seen)
    early = [e.text for e in seen if isinstance(e, ArgumentsDelta)]
    assert early and json.loads("".join(early) + "}") == {"query": "a, b) [c]"}
    seen2 = stream.feed(second)
    assert not any(isinstance(e, ToolCallFinished) for e in seen2)
    middle = early + [e.text for e in seen2 if isinstance(e, ArgumentsDelta)]
    assert json.loads("".join(middle) + "}") == {
        "query": "a, b) [c]",
        "filters": {"k": [1, 2], "on": True},
    }
    rest = stream.feed(third) + stream.close()
    events = seen + seen2 + rest
    check_events(events)
    deltas = [e.text for e in events if isinstance(e, ArgumentsDelta)]
    # three members and the closing brace; Gemma's string member comes as open, text, close
    assert len(deltas) == (6 if "gemma" in fmt else 4)
    finished = [e.call for e in events if isinstance(e, ToolCallFinished)]
    assert [c.arguments for c in finished] == [SEARCH_ARGS]
    assert json.loads("".join(deltas)) == SEARCH_ARGS
    assert_stream_equals_parse(get_parser(fmt), "".join(TEXTS[fmt]))


def test_pythonic_duplicate_keyword_streams_to_the_final_value():
    text = "[get_weather(city='Rome', city='Paris')]"
    events = run_split(get_parser("pythonic"), chunks(text, 1))
    check_events(events)
    call = next(e.call for e in events if isinstance(e, ToolCallFinished))
    deltas = "".join(e.text for e in events if isinstance(e, ArgumentsDelta))
    assert call.arguments == {"city": "Paris"}
    assert json.loads(deltas) == {"city": "Paris"}


def test_pythonic_cut_off_call_keeps_its_id_and_raw_text():
    text = '[get_weather(city="Paris", days=3, met'
    result = assert_stream_equals_parse(get_parser("pythonic"), text)
    assert [c.name for c in result.tool_calls] == ["get_weather"]
    call = result.tool_calls[0]
    assert call.arguments == {}
    assert call.raw_arguments == 'city="Paris", days=3, met'
    messages = [e.message for e in result.errors]
    assert any("cut off before ']'" in m for m in messages)
    assert any("tool call was cut off" in m for m in messages)


def test_pythonic_unreadable_element_after_started_call_is_an_error_with_raw_text():
    text = "[get_weather(city=Paris)]"
    result = assert_stream_equals_parse(get_parser("pythonic"), text)
    assert result.tool_calls[0].raw_arguments == "city=Paris"
    assert "not a Python function call" in result.errors[0].message


def test_print_wrapper_is_not_started_as_a_call():
    text = "[print(get_weather(city='Paris'))]"
    result = assert_stream_equals_parse(get_parser("pythonic"), text)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]


@pytest.mark.parametrize("fmt", ["functiongemma", "gemma4"])
def test_gemma_unreadable_arguments_keep_the_started_call(fmt):
    open_, close = {
        "functiongemma": ("<start_function_call>", "<end_function_call>"),
        "gemma4": ("<|tool_call>", "<tool_call|>"),
    }[fmt]
    text = f"{open_}call:get_weather{{city:Paris days:3}}{close}"
    result = assert_stream_equals_parse(get_parser(fmt), text)
    assert [c.name for c in result.tool_calls] == ["get_weather"]
    assert result.tool_calls[0].raw_arguments == "{city:Paris days:3}"
    assert "cannot be read" in result.errors[0].message
    trailing = f"{open_}call:get_weather{{city:1}} extra{close}"
    result = assert_stream_equals_parse(get_parser(fmt), trailing)
    assert result.tool_calls[0].raw_arguments == "{city:1} extra"
    assert "is not 'call:NAME{...}'" in result.errors[0].message


def test_arguments_writer_close_sends_what_members_missed():
    sent: list[str] = []
    writer = ArgumentsWriter(sent.append)
    writer.member("a", 1)
    writer.member("b", {1, 2})  # not JSON: left for close
    writer.close({"a": 2, "b": [1, 2], "c": None})
    assert json.loads("".join(sent)) == {"a": 2, "b": [1, 2], "c": None}
    writer.member("d", 1)
    writer.close({})
    assert json.loads("".join(sent)) == {"a": 2, "b": [1, 2], "c": None}
    empty: list[str] = []
    ArgumentsWriter(empty.append).close({})
    assert empty == ["{}"]


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        ('{"arguments": {"city": "Kyiv"}, "name": "get_weather"}', {"city": "Kyiv"}),
        ('{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}', {"city": "Oslo"}),
        ('{"name": "today"}', {}),
        ('{"name": "today", "arguments": ""}', {}),
    ],
)
def test_json_calls_whose_arguments_cannot_stream_still_send_them(body, arguments):
    """Arguments read before the name, double-encoded or missing are sent once, as JSON, before
    the call finishes: clients assembling deltas never see a call without arguments."""
    for pieces in (chunks(f"<tool_call>{body}</tool_call>", 1), [f"<tool_call>{body}</tool_call>"]):
        events = run_split(get_parser("hermes"), pieces)
        check_events(events)
        deltas = [e.text for e in events if isinstance(e, ArgumentsDelta)]
        assert deltas and json.loads("".join(deltas)) == arguments
        assert isinstance(events[-1], ToolCallFinished)
        assert events[-1].call.arguments == arguments


@pytest.mark.parametrize(
    ("fmt", "open_", "quote", "close"),
    [
        ("functiongemma", "<start_function_call>", "<escape>", "<end_function_call>"),
        ("gemma4", "<|tool_call>", '<|"|>', "<tool_call|>"),
    ],
)
def test_gemma_string_values_stream_as_their_text_arrives(fmt, open_, quote, close):
    code = 'def f():\n    return "}<x>"\n' * 50
    text = f"{open_}call:search{{query:{quote}{code}{quote},tags:[{quote}a{quote}]}}{close}"
    stream = get_parser(fmt).stream(TOOLS)
    head = len(open_) + len("call:search{query:") + len(quote)
    events = stream.feed(text[: head + 40])
    events += stream.feed(text[head + 40 : head + 90])
    sent = "".join(e.text for e in events if isinstance(e, ArgumentsDelta))
    # the first 90 characters of the value are out while the value is still open
    assert sent == '{"query": "' + json.dumps(code[:90])[1:-1]
    rest = stream.feed(text[head + 90 :]) + stream.close()
    check_events(events + rest)
    call = next(e.call for e in rest if isinstance(e, ToolCallFinished))
    assert call.arguments == {"query": code, "tags": ["a"]}
    # a string that is not a member's whole value (inside a list) is sent with its member
    deltas = [e.text for e in events + rest if isinstance(e, ArgumentsDelta)]
    assert deltas[-2:] == [', "tags": ["a"]', "}"]
    assert_stream_equals_parse(get_parser(fmt), text)


@pytest.mark.parametrize("fmt", ["functiongemma", "gemma4"])
def test_gemma_string_cut_off_mid_value(fmt):
    open_, quote = {
        "functiongemma": ("<start_function_call>", "<escape>"),
        "gemma4": ("<|tool_call>", '<|"|>'),
    }[fmt]
    text = f"{open_}call:search{{query:{quote}half a val"
    result = assert_stream_equals_parse(get_parser(fmt), text)
    assert result.tool_calls[0].name == "search"
    assert result.tool_calls[0].raw_arguments is not None
    assert result.errors
