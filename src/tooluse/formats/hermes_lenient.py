"""Lenient Hermes reading: calls that a model wraps differently from ``<tool_call>``.

Off by default (``get_parser("hermes", lenient=True)`` turns it on). Fine-tunes of Hermes-style
models drift from the trained wrapper; like llama.cpp's Hermes reader, the lenient machine also
takes:

- ``<tool>{..}</tool>``, ``<tools>[..]</tools>``, ``<function_call>{..}</function_call>``: call
  objects in another tag (read as ``<tool_call>`` bodies, errors reported the same way);
- ``<function=NAME>{..}</function>``: the name in the tag, the arguments object inside;
- a fenced block ```` ```json {"name": .., "arguments": ..} ``` ````: read whole, and only when it
  holds call objects; any other fenced JSON (an answer showing JSON) stays text, untouched.

``<tool_call>`` alone still ends reasoning opened by the prompt; the lenient wrappers never do,
since reasoning often quotes them.
"""

from __future__ import annotations

import re
from typing import Any

from tooluse.formats.hermes_machine import OPEN, HermesMachine
from tooluse.formats.json_calls import call_from_object
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, decode_arguments

__all__ = ["LenientHermesMachine"]

#: Other tags around call objects, with their closing tags.
BLOCKS: dict[str, str] = {
    "<tool>": "</tool>",
    "<tools>": "</tools>",
    "<function_call>": "</function_call>",
}
FUNCTION_OPEN, FUNCTION_CLOSE = "<function=", "</function>"
FENCE_OPEN, FENCE_CLOSE = "```json", "```"

_FUNCTION_HEAD = re.compile(r"""[ \t]*["']?([A-Za-z0-9_.\-:]{1,128})["']?[ \t]*>""")
_FUNCTION_HEAD_PARTIAL = re.compile(r"""[ \t]*["']?[A-Za-z0-9_.\-:]{0,128}["']?[ \t]*\Z""")


class LenientHermesMachine(HermesMachine):
    """The Hermes machine plus the wrappers listed in the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        markers = [OPEN, *BLOCKS, FUNCTION_OPEN, FENCE_OPEN]
        markers += [self.think_open] if self.think_open else []
        self._text_markers = MarkerSet(markers)
        self._block_ends = {tag: MarkerSet([OPEN, end]) for tag, end in BLOCKS.items()}
        self._function_end = MarkerSet([FUNCTION_CLOSE])
        self._fence_end = MarkerSet([FENCE_CLOSE])

    def _call_openers(self) -> tuple[str, ...]:
        return (OPEN,)

    def _begin_block(self, marker: str) -> None:
        if marker in BLOCKS:
            self._opened = marker
            self._closer = BLOCKS[marker]
            self._open_calls(marker, self._block_ends[marker])
            self._state = "body"
        elif marker == FUNCTION_OPEN:
            self._state = "function_head"
        elif marker == FENCE_OPEN:
            self._state = "fence"
        else:
            super()._begin_block(marker)

    def _step(self) -> bool:
        if self._state == "function_head":
            return self._function_head()
        if self._state == "fence":
            return self._fence()
        return super()._step()

    def _function_head(self) -> bool:
        head = _FUNCTION_HEAD.match(self._buf, self._pos)
        if head is not None:
            name = head.group(1)
            self._pos = head.end()
            self._opened = f"{FUNCTION_OPEN}{name}>"
            self._closer = FUNCTION_CLOSE
            self._open_arguments(self._opened, name, self._function_end)
            self._state = "body"
            return True
        waiting = len(self._buf) - self._pos <= 140
        if not self._final and waiting and _FUNCTION_HEAD_PARTIAL.match(self._buf, self._pos):
            return False
        self._emit_text(FUNCTION_OPEN)  # not a call: the tag was text
        self._state = "text"
        return True

    def _fence(self) -> bool:
        got = self._collect_until(self._fence_end)
        if got is None:
            return False
        body, marker = got
        self._state = "text"
        calls = _call_objects(body)
        if calls is None:  # JSON (or anything) that is not calls: the block stays text
            self._emit_text(FENCE_OPEN + body + (marker or ""))
            return True
        raw = FENCE_OPEN + body + (marker or "")
        for name, arguments in calls:
            self._whole_call(name, arguments, raw=raw)
        return True


def _call_objects(text: str) -> list[tuple[str, Any]] | None:
    """The calls in a fenced block's text, or ``None`` when it does not hold only calls."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = decode_arguments(stripped)
    except LiteralSyntaxError:
        return None
    objects = value if isinstance(value, list) else [value]
    calls: list[tuple[str, Any]] = []
    for obj in objects:
        name, arguments, _ = call_from_object(obj)
        if name is None:
            return None
        calls.append((name, arguments))
    return calls or None
