"""The whole-text reader of plain Hermes responses: a fast path for ``parse``.

A response the model wrote cleanly (text, then ``<tool_call>{"name": "..", "arguments":
{..}}</tool_call>`` blocks with text between them, no reasoning) is read here with ``str.find``
and one ``json`` decode per call, at C speed. Anything else (a list of calls in one block,
``parameters``, arguments as a string, an unclosed or malformed block, a name with escapes,
reasoning markers, an unknown tool) returns ``None`` and the streaming machine reads the text,
so the two readers never disagree: this one accepts only what it can prove the machine reads
the same way (the property tests compare them on generated responses).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection

from tooluse.formats.base import ParsedToolResponse
from tooluse.messages import ToolCall

__all__ = ["read_whole_response"]

# The head of a call object: its first key "name" with a plain string, then "arguments"
# opening an object. JSON whitespace only (\s would also match what JSON rejects).
_HEAD = re.compile(
    r'[ \t\r\n]*\{[ \t\r\n]*"name"[ \t\r\n]*:[ \t\r\n]*"([^"\\]*)"[ \t\r\n]*,'
    r'[ \t\r\n]*"arguments"[ \t\r\n]*:[ \t\r\n]*(?=\{)'
)
_TAIL = re.compile(r"[ \t\r\n]*\}[ \t\r\n]*")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("a number too large for a float")
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


# Non-finite numbers are argument errors in the streaming reader: decline them here.
_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)


def read_whole_response(
    text: str,
    *,
    open_marker: str,
    close_marker: str,
    reserved: tuple[str, ...],
    tools: Collection[str],
    new_id: Callable[[], str],
) -> ParsedToolResponse | None:
    """The calls and text of ``text``, or ``None`` when the streaming reader must decide.

    ``reserved`` are markers whose presence anywhere needs the machine (reasoning markers);
    ``tools`` the names offered (empty: any name)."""
    for marker in reserved:
        if marker in text:
            return None
    pieces: list[str] = []
    calls: list[ToolCall] = []
    position = 0
    while True:
        start = text.find(open_marker, position)
        segment = text[position:] if start < 0 else text[position:start]
        if close_marker in segment:
            return None  # a stray closing marker: the machine's text rules decide
        pieces.append(segment)
        if start < 0:
            break
        body_start = start + len(open_marker)
        end = text.find(close_marker, body_start)
        if end < 0 or text.find(open_marker, body_start, end) >= 0:
            return None
        call = _read_call(text, body_start, end, tools, new_id)
        if call is None:
            return None
        calls.append(call)
        position = end + len(close_marker)
    return ParsedToolResponse(text="".join(pieces), tool_calls=tuple(calls))


def _read_call(
    text: str, start: int, end: int, tools: Collection[str], new_id: Callable[[], str]
) -> ToolCall | None:
    head = _HEAD.match(text, start, end)
    if head is None:
        return None
    name = head.group(1)
    if not name or (tools and name not in tools):
        return None
    try:
        arguments, after = _DECODER.raw_decode(text, head.end())
    except (ValueError, RecursionError):  # deep nesting: the machine reports it
        return None
    if after > end or not isinstance(arguments, dict):
        return None
    tail = _TAIL.match(text, after, end)
    if tail is None or tail.end() != end:
        return None
    return ToolCall(id=new_id(), name=name, arguments=arguments)
