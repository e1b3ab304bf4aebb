"""Markers matched by special-token identity, for backends that stream tokens.

A model writes ``<tool_call>`` as one special token; the same characters typed inside an
argument or an answer arrive as ordinary tokens and are text. When a backend hands over tokens
(``(token_id, text, is_special)``), :meth:`StreamMachine.feed_tokens` passes them through a
:class:`SpecialTokenGuard`: wherever the text of a special token (one declared up front, or one
already seen as special in this stream) occurs inside ordinary token text, a break character is
inserted after its first character, so no marker can match there. The break character is removed
again from every event (text, reasoning, names, argument text and values, errors), so the events
read as the model's own text. It is a private-use character that models do not produce; one in
the model's own text would be removed the same way.

Markers a tokenizer does not have as special tokens (Qwen3-Coder's ``<parameter=``, for one) match
in ordinary text as before, since only special-token texts are guarded.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from tooluse.events import (
    ArgumentsDelta,
    ParseError,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = ["BREAK", "SpecialTokenGuard", "Token"]

#: Inserted into ordinary text to stop a special token's text from matching as a marker.
BREAK = "\ue000"

#: A token as a backend reports it: ``(token_id, text, is_special)``.
Token = tuple[int, str, bool]


class SpecialTokenGuard:
    """Turns a token stream into text for a stream machine; see the module docstring."""

    def __init__(self, special_texts: Iterable[str] = ()) -> None:
        self._texts: set[str] = {t for t in special_texts if t}
        self._pattern: re.Pattern[str] | None = None
        self._prefixes: frozenset[str] = frozenset()
        self._tail = ""  # ordinary text that may still grow into a special token's text
        self._rebuild()

    def _rebuild(self) -> None:
        ordered = sorted(self._texts, key=lambda t: (-len(t), t))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._prefixes = frozenset(t[:i] for t in ordered for i in range(1, len(t)))

    def special_text(self, text: str) -> None:
        """Declare one more special token's text."""
        if text and text not in self._texts:
            self._texts.add(text)
            self._rebuild()

    def special(self, text: str) -> str:
        """A special token: its text is released as is (a marker), after any held text."""
        self.special_text(text)
        out, self._tail = self._tail, ""
        return out + text

    def normal(self, text: str) -> str:
        """Ordinary token text, with special-token texts inside it broken; the end that could
        still become one with the next ordinary token is held back."""
        run = self._tail + text
        if self._pattern is None:
            self._tail = ""
            return run
        cut = len(run) - self._held(run)
        spans = [m.span() for m in self._pattern.finditer(run)]
        for start, end in spans:
            if start < cut < end:
                cut = start
        self._tail = run[cut:]
        return self._break(run[:cut], [(s, e) for s, e in spans if e <= cut])

    def flush(self) -> str:
        """Text still held at the end of output (it can no longer become a marker)."""
        out, self._tail = self._tail, ""
        return out

    def _held(self, run: str) -> int:
        for length in range(min(len(run), max((len(p) for p in self._prefixes), default=0)), 0, -1):
            if run[len(run) - length :] in self._prefixes:
                return length
        return 0

    @staticmethod
    def _break(text: str, spans: list[tuple[int, int]]) -> str:
        if not spans:
            return text
        parts: list[str] = []
        last = 0
        for start, _ in spans:
            parts.append(text[last : start + 1])
            parts.append(BREAK)
            last = start + 1
        parts.append(text[last:])
        return "".join(parts)

    @staticmethod
    def clean(events: list[StreamEvent]) -> list[StreamEvent]:
        """The events with every break character removed."""
        return [_clean_event(event) for event in events]


def _strip(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(BREAK, "") if BREAK in value else value
    if isinstance(value, dict):
        return {_strip(k): _strip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _clean_event(event: StreamEvent) -> StreamEvent:
    if isinstance(event, ArgumentsDelta):  # JSON text may spell the character as an escape
        return dataclasses.replace(event, text=_strip(event.text).replace("\\ue000", ""))
    if isinstance(event, TextDelta | ReasoningDelta):
        return dataclasses.replace(event, text=_strip(event.text))
    if isinstance(event, ToolCallStarted):
        return dataclasses.replace(event, name=_strip(event.name), id=_strip(event.id))
    if isinstance(event, ToolCallFinished):
        call = event.call
        cleaned = dataclasses.replace(
            call,
            id=_strip(call.id),
            name=_strip(call.name),
            arguments=_strip(call.arguments),
            raw_arguments=_strip(call.raw_arguments),
        )
        return dataclasses.replace(event, call=cleaned)
    if isinstance(event, ParseError):
        return dataclasses.replace(event, message=_strip(event.message), raw=_strip(event.raw))
    return event
