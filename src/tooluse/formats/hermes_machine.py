"""The streaming reader of the Hermes format (``<tool_call>{..}</tool_call>``).

A leaf below :mod:`tooluse.formats.hermes` (the parsers) and :mod:`tooluse.formats.hermes_lenient`
(the lenient reader, which extends this machine).
"""

from __future__ import annotations

import re

from tooluse.formats.json_calls import JsonCallMachine
from tooluse.formats.lexer import MarkerSet

__all__ = ["CLOSE", "OPEN", "HermesMachine"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
# After a call object: a comma, then (group 1) the next object's brace.
_MORE = re.compile(r"[ \t\r\n]*,[ \t\r\n]*(\{)?")
_BLANK = re.compile(r"[ \t\r\n]*")


class HermesMachine(JsonCallMachine):
    """Streaming reader of the Hermes format."""

    open_marker: str = OPEN
    close_marker: str | None = CLOSE
    #: Other spellings of the opener the model family writes (Granite 3.1: ``<tool_call>``).
    other_openers: tuple[str, ...] = ()

    def _call_openers(self) -> tuple[str, ...]:
        return (self.open_marker, *self.other_openers)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._opened = self.open_marker  # the opener of the current body, as written
        self._closer = self.close_marker  # the closing marker of the current body
        markers = [self.open_marker, *self.other_openers]
        markers += [self.think_open] if self.think_open else []
        self._text_markers = MarkerSet(markers)
        ends = [self.open_marker] + ([self.close_marker] if self.close_marker else [])
        self._terminators = MarkerSet(ends)
        self._state = "text"

    def _step(self) -> bool:
        if self._state == "text":
            marker = self._text_until(self._text_markers)
            if marker is None:
                return False
            if marker == self.think_open:
                self._enter_reasoning()
            else:
                self._begin_block(marker)
            return True
        if self._state == "body":
            progress = self._scan_body()
            if progress is not None:
                return progress
            if self._end_body() != "invalid":
                self._state = "after"
                return True
            # Not followed by JSON: the opener was literal text (prose about the format, or the
            # word "functools"); keep it as text so nothing after it is swallowed, and report it
            # when the format has a closing marker (a real but malformed call attempt).
            lead = "".join(self._raw_parts)
            self._raw_parts = []
            self._emit_text(self._opened + lead)
            if self._closer is not None:
                self._error(
                    f"{self._opened!r} is not followed by a JSON call; kept as text",
                    self._opened,
                )
            self._state = "text"
            return True
        # "after" a body: another call object after a comma (two objects, one block), else
        # drop the closing marker when it follows
        blank = _BLANK.match(self._buf, self._pos)
        blank_end = blank.end() if blank else self._pos
        if blank_end == len(self._buf) and not self._final and blank_end - self._pos <= 64:
            return False  # what follows the object decides
        more = _MORE.match(self._buf, self._pos)
        if more is not None:
            if more.group(1):
                self._pos = more.end() - 1
                self._open_calls(self._opened, self._terminators)
                self._state = "body"
                return True
            at_end = more.end() == len(self._buf)
            if at_end and not self._final and more.end() - self._pos <= 64:
                return False
        if self._closer and self._skip_closing(self._closer) is None:
            return False
        self._state = "text"
        return True

    def _begin_block(self, marker: str) -> None:
        """A call block opened with ``marker`` begins at ``self._pos``."""
        self._opened = marker
        self._closer = self.close_marker
        self._open_calls(marker, self._terminators)
        self._state = "body"
