"""Damaged output within bounds: random mutations of valid outputs in every format parse with
no exception, within a watchdog's time limit and with peak memory linear in the input, and
streaming gives what parsing whole gives. Large arguments cost memory linear in their size.

Memory is counted by ``tracemalloc`` (allocations, not time), so these bounds do not depend on
the machine's load. Time growth is measured in ``benchmarks/bench_format_limits.py``.
"""

from __future__ import annotations

import random
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooluse.formats import available_formats, collect_events, get_parser

from .helpers import check_events, random_chunks, run_split, summary
from .samples import FRAGMENTS, TOOLS, WRITERS, render, samples
from .watchdog import watchdog

ALL = sorted(available_formats())
LIMIT = 10.0  # seconds per parse of at most a few hundred KB: only a hang comes near it
# Peak bytes allowed per input byte, plus a constant for the parser's fixed structures. Linear
# readers need under 12 (each stage keeps one copy: buffer, raw text, value, JSON, events); the
# readers this replaced needed 200 per byte for string values.
PER_BYTE = 24
CONSTANT = 1_000_000


def _size(text: str) -> int:
    """Bytes Python needs for the text's characters (1, 2 or 4 per character)."""
    widest = max(map(ord, text), default=0)
    return len(text) * (1 if widest < 256 else 2 if widest < 65536 else 4)


def _peak(fn) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _sources(fmt: str) -> list[str]:
    if fmt in WRITERS:
        return samples(fmt)
    return ["".join(render(other) for other in sorted(WRITERS))]


mutation = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 40)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.sampled_from(FRAGMENTS)),
    st.tuples(st.just("repeat"), st.integers(0, 10**6), st.integers(1, 30), st.integers(2, 400)),
    st.tuples(st.just("swap"), st.integers(0, 10**6)),
    st.tuples(st.just("cut"), st.integers(0, 10**6)),
    st.tuples(st.just("splice"), st.integers(0, 10**6), st.sampled_from(sorted(WRITERS))),
)


def _mutate(text: str, change: tuple) -> str:  # type: ignore[type-arg]
    kind, at = change[0], change[1] % (len(text) + 1)
    if kind == "delete":
        return text[:at] + text[at + change[2] :]
    if kind == "insert":
        return text[:at] + change[2] + text[at:]
    if kind == "repeat":  # a run of the text many times over: floods and huge values
        piece = text[at : at + change[2]]
        return text[:at] + piece * change[3] + text[at:]
    if kind == "swap" and at + 1 < len(text):
        return text[:at] + text[at + 1] + text[at] + text[at + 2 :]
    if kind == "cut":
        return text[:at]
    if kind == "splice":  # another format's output inside this one
        return text[:at] + render(change[2]) + text[at:]
    return text


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fmt=st.sampled_from(ALL),
    which=st.integers(0, 2),
    changes=st.lists(mutation, min_size=1, max_size=6),
    reasoning_started=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_mutated_outputs_parse_within_time_and_memory_bounds(
    fmt, which, changes, reasoning_started, seed
):
    sources = _sources(fmt)
    text = sources[which % len(sources)]
    for change in changes:
        text = _mutate(text, change)
    parser = get_parser(fmt, reasoning_started=reasoning_started)
    results = []
    with watchdog(LIMIT, f"{fmt} parse of a mutated output"):
        peak = _peak(lambda: results.append(parser.parse(text, TOOLS)))
        events = run_split(parser, random_chunks(text, random.Random(seed), most=64), TOOLS)
    assert peak <= PER_BYTE * _size(text) + CONSTANT, (fmt, peak, len(text))
    check_events(events)
    assert summary(collect_events(events)) == summary(results[0]), fmt


# A large value with every kind of character a reader treats specially.
_UNIT = 'lorem {ipsum} [dolor], "sit" \\ amet: (x) ünï €\n'


@pytest.mark.parametrize("fmt", ALL)
def test_a_large_argument_costs_memory_linear_in_its_size(fmt):
    value = _UNIT * (300_000 // len(_UNIT))
    text = render(fmt, [("search", {"query": value})]) if fmt in WRITERS else None
    if text is None:
        text = render("hermes", [("search", {"query": value})])
    parser = get_parser(fmt)
    results = []
    with watchdog(60, f"{fmt} parse of a 300 KB argument"):
        peak = _peak(lambda: results.append(parser.parse(text, TOOLS)))
    assert peak <= PER_BYTE * _size(text) + CONSTANT, (fmt, peak / _size(text))
    if fmt in WRITERS:
        calls = results[0].tool_calls
        assert [c.name for c in calls] == ["search"], results[0].errors
        query = calls[0].arguments["query"]
        assert query.strip() == value.strip(), fmt
