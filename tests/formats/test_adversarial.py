"""Hostile input: random bytes, floods of markers, huge arguments, deep nesting, regex traps.

Each case must end with a result (no exception, no hang) that keeps the text it could not read.
Growth of work with input size is measured in ``benchmarks/bench_parsers.py``, not here.
"""

from __future__ import annotations

import os
import random

import pytest

from tooluse.formats import available_formats, collect_events, get_parser
from tooluse.formats.literals import LiteralSyntaxError, parse_loose_value, parse_python_calls

from .helpers import chunks, run_split, summary

ALL = sorted(available_formats())


@pytest.mark.parametrize("fmt", ALL)
def test_random_bytes_are_text(fmt):
    rng = random.Random(fmt)
    data = bytes(rng.getrandbits(8) for _ in range(20_000))
    text = data.decode("utf-8", errors="replace")
    parser = get_parser(fmt)
    whole = parser.parse(text)
    streamed = collect_events(run_split(parser, chunks(text, 97), ()))
    assert summary(streamed) == summary(whole)
    # nothing is lost: what is not a call is content, reasoning or kept in an error
    kept = len(whole.text) + len(whole.reasoning) + sum(len(e.raw) for e in whole.errors)
    assert kept >= len(text) * 0.9


@pytest.mark.parametrize("fmt", ALL)
def test_flood_of_every_marker(fmt):
    unit = (
        "<tool_call>[TOOL_CALLS]<|python_tag|>```tool_code<start_function_call><|channel|>"
        "<｜tool▁call▁begin｜><function=<parameter=[f(<think></think>"
    )
    text = unit * 300
    parser = get_parser(fmt)
    whole = parser.parse(text)
    streamed = collect_events(run_split(parser, chunks(text, 13), ()))
    assert summary(streamed) == summary(whole)


def test_many_hermes_markers_each_reported():
    result = get_parser("hermes").parse("<tool_call>" * 20_000)
    assert len(result.errors) == 20_000
    assert result.tool_calls == ()
    assert all(e.raw == "<tool_call>" for e in result.errors[:10])


def test_one_megabyte_argument_streamed():
    value = "x" * 1_000_000
    text = '<tool_call>{"name": "f", "arguments": {"a": "' + value + '"}}</tool_call>'
    events = run_split(get_parser("hermes"), chunks(text, 4096))
    call = collect_events(events).tool_calls[0]
    assert call.arguments == {"a": value}


def test_deep_nesting_is_an_error_not_a_crash():
    depth = 50_000
    text = (
        '<tool_call>{"name": "f", "arguments": {"a": '
        + "[" * depth
        + "]" * depth
        + "}}</tool_call>"
    )
    result = get_parser("hermes").parse(text)
    assert result.tool_calls[0].name == "f"
    assert result.tool_calls[0].arguments == {}
    assert "nesting" in result.errors[0].message
    unclosed = get_parser("hermes").parse('<tool_call>{"name": "f", "arguments": ' + "{" * depth)
    assert "cut off" in unclosed.errors[0].message


def test_unbalanced_braces_and_quotes():
    for text in (
        '<tool_call>{"name": "f", "arguments": {"a": "}}}}}"}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"a": "\\"}}\\""}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": }}}}]]]</tool_call>',
        '<tool_call>{"name": "f\\',
        "<tool_call>{{{{{{{{{{{{</tool_call>",
    ):
        parser = get_parser("hermes")
        whole = parser.parse(text)
        assert summary(collect_events(run_split(parser, chunks(text, 1), ()))) == summary(whole)
    first = get_parser("hermes").parse(
        '<tool_call>{"name": "f", "arguments": {"a": "}}}}}"}}</tool_call>'
    )
    assert first.tool_calls[0].arguments == {"a": "}}}}}"}


def test_literal_reader_limits():
    with pytest.raises(LiteralSyntaxError, match="nesting"):
        parse_loose_value("[" * 10_000)
    with pytest.raises(LiteralSyntaxError):
        parse_loose_value('"' + "\\" * 100_001)
    with pytest.raises(LiteralSyntaxError):
        parse_python_calls("f(" * 10_000)
    assert parse_python_calls("f(a='" + "\\'" * 10_000 + "')")[0][1]["a"] == "'" * 10_000


def test_qwen3_coder_closing_tag_flood_in_a_value():
    value = "</parameter>x" * 5_000
    text = f"<tool_call>\n<function=f>\n<parameter=a>\n{value}\n</parameter>\n</function>\n</tool_call>"
    parser = get_parser("qwen3_coder")
    whole = parser.parse(text)
    assert whole.tool_calls[0].arguments == {"a": value}
    assert summary(collect_events(run_split(parser, chunks(text, 7), ()))) == summary(whole)


def test_os_random_bytes_in_every_format_quickly():
    text = os.urandom(50_000).decode("latin-1")
    for fmt in ALL:
        get_parser(fmt).parse(text)
