"""Hostile input: random bytes, floods of markers, huge arguments, deep nesting, regex traps.

Each case must end with a result (no exception, no hang) that keeps the text it could not read.
Growth of work with input size is checked here by counting operations (text scanned by the marker
lexer, text copied into the stream buffer, lexer calls, events), never by timing; the times are
measured in ``benchmarks/bench_parsers.py``.
"""

from __future__ import annotations

import os
import random

import pytest

from tooluse.formats import StreamMachine, available_formats, collect_events, get_parser
from tooluse.formats.lexer import MarkerMatch, MarkerSet
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


class WorkCounter:
    """Counts the work a stream does: characters the marker lexer scans, characters copied into
    the stream buffer, lexer calls and events. Quadratic re-scanning or re-buffering shows up
    as counts that grow faster than the input."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scanned = self.copied = self.finds = self.events = 0
        find, feed = MarkerSet.find, StreamMachine.feed

        def counting_find(lexer: MarkerSet, text: str, pos: int, final: bool) -> MarkerMatch:
            found = find(lexer, text, pos, final)
            self.finds += 1
            self.scanned += (found.marker_end if found.marker else len(text)) - pos
            return found

        def counting_feed(machine: StreamMachine, delta: str) -> list:
            self.copied += len(machine._buf) - machine._pos + len(delta)
            out = feed(machine, delta)
            self.events += len(out)
            return out

        monkeypatch.setattr(MarkerSet, "find", counting_find)
        monkeypatch.setattr(StreamMachine, "feed", counting_feed)

    def total(self) -> int:
        return self.scanned + self.copied + self.finds + self.events

    def measure(self, fmt: str, text: str, delta: int) -> int:
        before = self.total()
        stream = get_parser(fmt).stream(())
        for i in range(0, len(text), delta):
            stream.feed(text[i : i + delta])
        self.events += len(stream.close())
        return self.total() - before


def _growth(counter: WorkCounter, fmt: str, unit: str, small: int, ratio: int, delta: int):
    work_small = counter.measure(fmt, unit * small, delta)
    work_large = counter.measure(fmt, unit * (small * ratio), delta)
    assert work_small > small  # the counters see the work at all
    return work_large / work_small


@pytest.mark.slow
def test_a_million_tool_call_markers_cost_linear_work(monkeypatch):
    counter = WorkCounter(monkeypatch)
    growth = _growth(counter, "hermes", "<tool_call>", 250_000, 4, 4096)
    assert growth <= 4 * 1.1, growth  # 4x the markers: at most 4.4x the work


@pytest.mark.parametrize("fmt", ALL)
def test_marker_floods_cost_linear_work_in_every_format(fmt, monkeypatch):
    counter = WorkCounter(monkeypatch)
    unit = (
        "<tool_call>[TOOL_CALLS]<|python_tag|>```tool_code<start_function_call><|channel|>"
        "<｜tool▁call▁begin｜><function=<parameter=[f(<think></think>"
    )
    for piece in (unit, "<tool_call>", "<think>"):
        growth = _growth(counter, fmt, piece, 500, 4, 64)
        assert growth <= 4 * 1.1, (piece, growth)


def test_work_counter_sees_quadratic_rescanning(monkeypatch):
    """The counter is able to fail: a reader that re-parses the whole text on every delta (the
    method of the parsers this library replaces) shows work growing with the square."""
    counter = WorkCounter(monkeypatch)
    lexer = MarkerSet(["<tool_call>"])

    def rescanning_work(text: str) -> int:
        before = counter.total()
        for end in range(64, len(text) + 64, 64):
            pos = 0
            while True:
                found = lexer.find(text[:end], pos, True)
                if found.marker is None:
                    break
                pos = found.marker_end
        return counter.total() - before

    small = rescanning_work("x" * 10 + "<tool_call>" * 500)
    large = rescanning_work("x" * 10 + "<tool_call>" * 2000)
    assert large / small > 12
