"""Whether a call's argument values come from the conversation: the check after an ``auto`` call.

Forced by a grammar to call, a small model fills in whatever it must: asked "Who won the FIFA
World Cup 2010?" with only a stock-ticker tool, SmolLM2-135M calls
``stock_ticker(company_name="StokkenTicker")``. A call that serves the request mostly repeats
what the user said (``calculate_triangle_area(base=10, height=5)`` for "a base of 10 and a
height of 5"); a call that does not invents its values. So after an ``auto`` turn's call, each
argument value is looked for in the conversation's messages (user, system, earlier answers and
tool results):

- a number counts when it appears there (as digits, as a number word up to twenty or a round
  word like "thousand", or scaled by 100 or 1000: "5%" grounds 0.05, "2 km" grounds 2000);
  its sign is ignored ("-25" and "minus 25" read alike);
- a string counts when it appears there, ignoring case, spaces and punctuation; a string with
  numbers in it (code, an expression, a date) when all its numbers do; any other string when at
  least half of its words of two or more letters do (of all its words, when it has no longer
  one);
- booleans, nulls and a parameter's own schema default are not evidence either way.

The call stands when more than half of the counted values are grounded (or none is counted);
otherwise the turn answers in text instead. Measured with the base model on the first 100
entries of BFCL's seed-0 samples (``benchmarks/measure_grounding.py``): irrelevance 54 -> 91 of
100, and 4 of the 600 entries of six categories that need a call lost it (a date the user wrote
in words, a code only the tool's description gives).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse.local.decision import ToolDecision
from tooluse.local.decision_prompts import latest_request
from tooluse.messages import ChatMessage, ToolCall, call_key
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "GROUNDED_SHARE",
    "REPEATED_CALLS",
    "GroundingCheck",
    "conversation_text",
    "grounded_share",
    "repeats_last_calls",
    "scalar_leaves",
]

#: A call stands when more than this share of its counted argument values is grounded.
GROUNDED_SHARE = 0.5
#: The reason of a review that refused the calls of the turn before, repeated.
REPEATED_CALLS = "the calls of the turn before again"

_NUMBER_WORDS = {
    word: float(value)
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {
    "thirty": 30.0,
    "forty": 40.0,
    "fifty": 50.0,
    "hundred": 100.0,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "dozen": 12.0,
    "half": 0.5,
    "twice": 2.0,
}
# "1,000,000" is one number, "A(3,4)" two: commas only group thousands
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.?\d+(?:e-?\d+)?")
_WORD = re.compile(r"[a-z0-9]+")


def conversation_text(messages: Sequence[ChatMessage]) -> str:
    """What a call's values may come from: the text of every message (the user's, the system
    prompt the caller wrote, earlier answers and tool results; not the tool list, which the
    backend adds when it renders the prompt)."""
    return "\n".join(m.content for m in messages if m.content)


def _numbers(text: str) -> set[float]:
    found: set[float] = set()
    for match in _NUMBER.findall(text):
        try:
            value = float(match.replace(",", ""))
        except ValueError:
            continue
        found |= {value, value / 100, value / 1000, value * 1000}
    found |= {_NUMBER_WORDS[w] for w in _WORD.findall(text) if w in _NUMBER_WORDS}
    return found


@dataclass(frozen=True)
class _Evidence:
    """The conversation, prepared once for every value of a turn's calls."""

    text: str
    squashed: str
    words: frozenset[str]
    numbers: frozenset[float]

    @classmethod
    def of(cls, text: str) -> _Evidence:
        lower = text.lower()
        return cls(
            text=lower,
            squashed=re.sub(r"[^a-z0-9]", "", lower),
            words=frozenset(_WORD.findall(lower)),
            numbers=frozenset(_numbers(lower)),
        )

    def grounds(self, value: Any) -> bool | None:
        """Whether ``value`` comes from the text (``None``: not evidence either way)."""
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int | float):
            return any(abs(abs(float(value)) - n) < 1e-9 for n in self.numbers)
        string = str(value).strip().lower()
        squashed = re.sub(r"[^a-z0-9]", "", string)
        if not squashed:
            return None
        if string in self.text or squashed in self.squashed:
            return True
        numbers = _NUMBER.findall(string)
        if numbers:  # code or an expression ("x = 366 * 6045\nprint(x)"): judged by its numbers
            return all(self.grounds(float(n.replace(",", ""))) for n in numbers)
        words = _WORD.findall(string)
        words = [w for w in words if len(w) > 1] or words  # "2.0.0.0" has only short ones
        return sum(w in self.words for w in words) * 2 >= len(words)


def scalar_leaves(value: Any) -> Iterator[Any]:
    """The scalars inside ``value`` (mappings' values and sequences' items, all the way down)."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from scalar_leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from scalar_leaves(item)
    else:
        yield value


def _defaults(tool: ToolDefinition | None) -> dict[str, Any]:
    properties = (tool.parameters_schema.get("properties") or {}) if tool is not None else {}
    return {
        name: schema["default"]
        for name, schema in properties.items()
        if isinstance(schema, Mapping) and "default" in schema
    }


def grounded_share(
    calls: Sequence[ToolCall], text: str, tools: Sequence[ToolDefinition] = ()
) -> float | None:
    """The share of the calls' argument values found in ``text`` (``None``: none counted).

    A value equal to its parameter's schema default in ``tools`` is not counted."""
    evidence = _Evidence.of(text)
    by_name = {t.name: t for t in tools}
    marks: list[bool] = []
    for call in calls:
        defaults = _defaults(by_name.get(call.name))
        for name, value in call.arguments.items():
            if name in defaults and defaults[name] == value:
                continue
            marks.extend(
                mark for mark in map(evidence.grounds, scalar_leaves(value)) if mark is not None
            )
    return sum(marks) / len(marks) if marks else None


def repeats_last_calls(messages: Sequence[ChatMessage], calls: Sequence[ToolCall]) -> bool:
    """Whether ``calls`` are the calls of the latest assistant turn again (same names and
    arguments, in any order): nothing but their results came in since, so they would only
    fetch them again."""
    for message in reversed(messages):
        if message.role == "assistant" and message.tool_calls:
            return sorted(map(call_key, message.tool_calls)) == sorted(map(call_key, calls))
    return False


@dataclass(frozen=True, kw_only=True)
class GroundingCheck:
    """Reviews an ``auto`` turn's calls before they are returned: a call whose values are
    mostly not in the conversation becomes a text answer. Calls made after tool results came
    back for the latest request stand (a chain's later values come from those results, which
    are in the text anyway, or from the model's own work, like an answer it computed), unless
    ``after_results``: then they are checked too, and the calls of the turn before repeated
    are refused (an adapter trained only to call tools calls on where it should answer)."""

    share: float = GROUNDED_SHARE
    after_results: bool = False

    def review(
        self,
        messages: Sequence[ChatMessage],
        calls: Sequence[ToolCall],
        tools: Sequence[ToolDefinition] = (),
    ) -> ToolDecision:
        if latest_request(messages)[1]:
            if not self.after_results:
                return ToolDecision(call=True, reason="tool results are in")
            if repeats_last_calls(messages, calls):
                return ToolDecision(call=False, reason=REPEATED_CALLS)
        share = grounded_share(calls, conversation_text(messages), tools)
        if share is None or share > self.share:
            return ToolDecision(call=True, score=1.0 if share is None else share)
        return ToolDecision(
            call=False,
            score=share,
            reason=f"{share:.0%} of the call's values are in the conversation: answered in text",
        )
