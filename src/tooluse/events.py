"""Stream events shared by text-format parsers and streaming backends.

A stream of events adds up to one assistant turn: the concatenated ``TextDelta`` texts are the
content, ``ReasoningDelta`` texts the reasoning, and each ``ToolCallFinished`` one parsed call.
``index`` numbers the calls of a turn in order, from 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from tooluse.messages import ToolCall

__all__ = [
    "ArgumentsDelta",
    "ParseError",
    "ReasoningDelta",
    "StreamEvent",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
]


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    text: str


@dataclass(frozen=True, kw_only=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCallStarted:
    index: int
    name: str
    id: str


@dataclass(frozen=True, kw_only=True)
class ArgumentsDelta:
    index: int
    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCallFinished:
    index: int
    call: ToolCall


@dataclass(frozen=True, kw_only=True)
class ParseError:
    """Text that looked like a tool call but could not be read; ``raw`` is kept whole."""

    message: str
    raw: str = ""
    index: int | None = None


StreamEvent = Union[
    TextDelta, ReasoningDelta, ToolCallStarted, ArgumentsDelta, ToolCallFinished, ParseError
]
