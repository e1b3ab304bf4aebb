"""Shared checks for format tests: every split of a text gives what ``parse`` gives."""

from __future__ import annotations

import random
from collections.abc import Sequence

from tooluse.events import (
    ArgumentsDelta,
    ParseError,
    StreamEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from tooluse.formats import ParsedToolResponse, ToolCallParser, collect_events
from tooluse.formats.literals import decode_arguments
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather of a city.",
    parameters=(
        ToolParameter("city", ToolParameterType.STRING),
        ToolParameter("days", ToolParameterType.INTEGER, required=False),
        ToolParameter("metric", ToolParameterType.BOOLEAN, required=False),
    ),
)
TODAY = ToolDefinition(name="today", description="Today's date.")
SEARCH = ToolDefinition(
    name="search",
    description="Search documents.",
    parameters=(
        ToolParameter("query", ToolParameterType.STRING),
        ToolParameter("filters", ToolParameterType.OBJECT, required=False),
        ToolParameter("tags", ToolParameterType.ARRAY, required=False),
    ),
)
TOOLS = (WEATHER, TODAY, SEARCH)


def summary(result: ParsedToolResponse) -> tuple:
    """What must agree between stream and parse (call ids are fresh per run)."""
    return (
        result.text,
        result.reasoning,
        [(c.name, c.arguments, c.raw_arguments) for c in result.tool_calls],
        [(e.message, e.raw, e.index) for e in result.errors],
    )


def run_split(
    parser: ToolCallParser, pieces: Sequence[str], tools: Sequence[ToolDefinition] = TOOLS
) -> list[StreamEvent]:
    stream = parser.stream(tools)
    events: list[StreamEvent] = []
    for piece in pieces:
        events.extend(stream.feed(piece))
    events.extend(stream.close())
    return events


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def random_chunks(text: str, rng: random.Random, most: int = 9) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, most)
        out.append(text[i : i + n])
        i += n
    return out


def check_events(events: list[StreamEvent]) -> None:
    """Event-level rules: each started call finishes once with the same id and name, indices
    count from 0, and streamed argument text decodes to the final arguments."""
    started: dict[int, ToolCallStarted] = {}
    finished: dict[int, ToolCallFinished] = {}
    args: dict[int, list[str]] = {}
    for event in events:
        if isinstance(event, ToolCallStarted):
            assert event.index not in started
            assert event.index == len(started)
            started[event.index] = event
        elif isinstance(event, ArgumentsDelta):
            assert event.index in started and event.index not in finished
            args.setdefault(event.index, []).append(event.text)
        elif isinstance(event, ToolCallFinished):
            assert event.index in started and event.index not in finished
            assert event.call.id == started[event.index].id
            assert event.call.name == started[event.index].name
            finished[event.index] = event
        elif isinstance(event, ParseError):
            assert event.message
    assert set(started) == set(finished)
    for index, event in finished.items():
        call = event.call
        if call.raw_arguments is None:
            # every readable call streams its arguments, "{}" included (clients wait for them)
            assert index in args, ("no ArgumentsDelta", call)
            # JSON formats stream the model's own text, which may use Python literals; the
            # tolerant reader reads both, so every streamed text must decode to the arguments
            text = "".join(args[index])
            decoded = decode_arguments(text)
            assert decoded == call.arguments, (text, call.arguments)


def assert_stream_equals_parse(
    parser: ToolCallParser,
    text: str,
    tools: Sequence[ToolDefinition] = TOOLS,
    *,
    seeds: int = 5,
) -> ParsedToolResponse:
    """``parse`` and streaming at 1, 2, 3, 7 characters and random splits agree."""
    whole = parser.parse(text, tools)
    expected = summary(whole)
    splits = [chunks(text, n) for n in (1, 2, 3, 7)] + [[text]]
    rng = random.Random(len(text))
    splits += [random_chunks(text, rng) for _ in range(seeds)]
    for pieces in splits:
        events = run_split(parser, pieces, tools)
        check_events(events)
        got = summary(collect_events(events))
        assert got == expected, (pieces[:5], got, expected)
    return whole
