"""Cut-off output: every prefix of a valid output (what ``max_tokens`` produces) parses.

For every format and every truncation of its sample outputs: no exception, no hang (each parse
runs under a watchdog), started and finished calls pair up, and streaming the prefix in pieces
gives what parsing it whole gives.
"""

from __future__ import annotations

import random

import pytest

from tooluse.events import ParseError, TextDelta
from tooluse.formats import StreamMachine, available_formats, collect_events, get_parser

from .helpers import check_events, random_chunks, run_split, summary
from .samples import FRAGMENTS, TOOLS, WRITERS, samples
from .watchdog import ParseHang, watchdog

ALL = sorted(available_formats())
LIMIT = 5.0  # seconds per parse: microseconds of work, so only a hang comes near it


def _texts(fmt: str) -> list[str]:
    if fmt in WRITERS:
        return samples(fmt)
    # A format this module has no writer for still gets every format's markers and syntax
    # pieces, cut everywhere (so a new format is never left out of the sweep).
    return ["Here: " + "".join(FRAGMENTS)]


def _sweep(fmt: str, text: str, *, reasoning_started: bool = False) -> int:
    parser = get_parser(fmt, reasoning_started=reasoning_started)
    rng = random.Random(f"{fmt}:{len(text)}")
    for end in range(len(text) + 1):
        prefix = text[:end]
        with watchdog(LIMIT, f"{fmt} parse of a {end}-character prefix"):
            whole = parser.parse(prefix, TOOLS)
            events = run_split(parser, random_chunks(prefix, rng), TOOLS)
        check_events(events)
        assert summary(collect_events(events)) == summary(whole), (fmt, prefix)
    return len(text) + 1


@pytest.mark.parametrize("fmt", ALL)
def test_every_prefix_of_valid_output_parses(fmt):
    swept = sum(_sweep(fmt, text) for text in _texts(fmt))
    assert swept > 100


@pytest.mark.parametrize("fmt", ALL)
def test_every_prefix_parses_with_reasoning_opened_by_the_prompt(fmt):
    texts = _texts(fmt)
    text = texts[1] if len(texts) > 1 else texts[0]  # the sample with reasoning and text
    assert _sweep(fmt, text, reasoning_started=True) > 50


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=ci"),
        ("seed_oss", "<seed:tool_call>\n<function=get_weather>\n<parameter=ci"),
        ("minimax_m2", '<minimax:tool_call><invoke name="get_weather"><parameter name="ci'),
        ("glm45", "<tool_call>get_weather\n<arg_key>ci"),
        ("glm45", "<tool_call>get_weather\n" + "<arg_key" * 200),
    ],
)
def test_output_ending_inside_a_parameter_name_reports_the_cut_call(fmt, text):
    with watchdog(LIMIT):
        result = get_parser(fmt).parse(text, TOOLS)
    assert [c.name for c in result.tool_calls] == ["get_weather"]
    assert any("cut off" in e.message for e in result.errors), result.errors


class _StuckMachine(StreamMachine):
    """A format step that claims progress without consuming anything (a bug)."""

    def _step(self) -> bool:
        return True


def test_a_step_that_never_progresses_becomes_an_error_not_a_hang():
    machine = _StuckMachine()
    with watchdog(LIMIT):
        events = machine.feed("some text") + machine.close()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["some text"]
    assert any(isinstance(e, ParseError) and "no progress" in e.message for e in events)


def test_the_watchdog_catches_a_hang():
    with pytest.raises(ParseHang), watchdog(0.05):
        while True:
            pass


class _PingPongMachine(StreamMachine):
    """Two states that hand the same position to each other forever (a bug)."""

    def __init__(self) -> None:
        super().__init__()
        self._state = "a"

    def _step(self) -> bool:
        self._state = "b" if self._state == "a" else "a"
        return True


def test_states_that_cycle_without_reading_become_an_error_not_a_hang():
    machine = _PingPongMachine()
    with watchdog(LIMIT):
        events = machine.feed("text") + machine.close()
    assert any(isinstance(e, ParseError) and "no progress" in e.message for e in events)
