"""One local turn as data: its plan, its prompt and decode settings, what the token loop wrote,
and the events of a turn that may hold calls (parsed in the profile's call format). Pure."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from tooluse.events import ArgumentsDelta, ParseError, TextDelta, ToolCallFinished, ToolCallStarted
from tooluse.local.profiles import ToolPromptProfile
from tooluse.local.sampling import DecodeSettings, GrammarSampler
from tooluse.messages import Usage
from tooluse.providers.base import GenerationDone, GenerationResult, StreamItem
from tooluse.tools.definition import ToolDefinition

__all__ = ["Decoded", "Turn", "TurnPlan", "call_turn_events"]


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One turn ready to decode: its plan, prompt tokens, settings and call grammar."""

    plan: TurnPlan
    prompt: list[int]
    settings: DecodeSettings
    grammar: GrammarSampler | None = None
    parallel: bool = False


@dataclass
class Decoded:
    """What the token loop produced (filled in while the turn streams)."""

    text: str = ""
    count: int = 0
    repeat_dropped: bool = False


@dataclass(frozen=True, kw_only=True)
class TurnPlan:
    """What one turn will do: answer in text, or call one of ``tools`` under a grammar."""

    mode: Literal["text", "call", "free"]
    tools: tuple[ToolDefinition, ...] = ()
    show_tools: bool = False
    reason: str = ""


def call_turn_events(
    profile: ToolPromptProfile,
    plan: TurnPlan,
    text: str,
    usage: Usage,
    hit_limit: bool,
    raw: dict[str, Any],
) -> Iterator[StreamItem]:
    """The events and result of a turn that may hold calls (constrained or free)."""
    parsed = profile.parse_constrained(text) if plan.mode == "call" else profile.parse(text)
    errors = tuple(ParseError(message=error, raw=text) for error in parsed.errors)
    yield from errors
    if parsed.text and plan.mode == "free":
        yield TextDelta(text=parsed.text)
    for index, call in enumerate(parsed.calls):
        yield ToolCallStarted(index=index, name=call.name, id=call.id)
        yield ArgumentsDelta(index=index, text=call.arguments_json())
        yield ToolCallFinished(index=index, call=call)
    finish = "tool_calls" if parsed.calls else ("length" if hit_limit else "stop")
    result = GenerationResult(
        text=parsed.text if plan.mode == "free" or not parsed.calls else "",
        tool_calls=parsed.calls,
        parse_errors=errors,
        usage=usage,
        finish_reason=finish,
        raw=raw,
    )
    yield GenerationDone(result=result)
