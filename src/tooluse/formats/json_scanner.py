"""Incremental JSON scanning in one pass: depth, strings and escapes, never a re-parse.

:class:`JsonScanner` walks one JSON value as it streams in. Plain runs inside strings are skipped
with one regular-expression search, so cost is linear in the text. It reports, through a
:class:`JsonSink`:

- in ``calls`` mode (the value is a call object ``{"name": .., "arguments": {..}}`` or a list of
  them): the name as soon as its string closes, the raw text of the arguments as it arrives (when
  the name came first), and each call object's raw text when it closes;
- in ``arguments`` mode (the value is the argument object itself): the raw text as it arrives.

A value that does not start like one (``{``/``[`` for calls, ``{`` for arguments) stops the scan
at once with ``invalid`` set, so the format can keep the text as raw.

Closing markers of the surrounding format (``terminators``) are recognised only outside strings,
where valid JSON can never contain them, so ``</tool_call>`` inside a string argument is just
text while a call whose braces never balance still ends at its closing tag.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

from tooluse.formats.lexer import MarkerSet

__all__ = ["ARGUMENT_KEYS", "JsonScanner", "JsonSink"]

ARGUMENT_KEYS = frozenset({"arguments", "parameters"})
"""Keys of a call object that hold its arguments (``parameters`` is Llama's spelling)."""

_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_WS = " \t\r\n"
_WS_RUN = re.compile(r"[ \t\r\n]+")


class JsonSink(Protocol):
    """Receiver of what :class:`JsonScanner` finds."""

    def json_name(self, name: str) -> None: ...

    def json_arguments_text(self, text: str) -> None: ...

    def json_call_end(self, raw_call: str, raw_arguments: str | None, streamed: bool) -> None: ...


class _Span:
    """Text recorded across chunks: parts of earlier chunks plus a start in the current one."""

    __slots__ = ("active", "parts", "start")

    def __init__(self) -> None:
        self.active = False
        self.parts: list[str] = []
        self.start = 0

    def open(self, at: int) -> None:
        self.active, self.parts, self.start = True, [], at

    def flush(self, text: str, end: int) -> str:
        piece = text[self.start : end] if self.active else ""
        if piece:
            self.parts.append(piece)
        self.start = end
        return piece

    def close(self, text: str, end: int) -> str:
        self.flush(text, end)
        self.active = False
        out = "".join(self.parts)
        self.parts = []
        return out


class JsonScanner:
    """Scans one JSON value incrementally; see the module docstring."""

    def __init__(
        self, sink: JsonSink, *, calls: bool, terminators: MarkerSet | None = None
    ) -> None:
        self.sink = sink
        self.calls = calls
        self.terminators = terminators
        self._term_first = (
            frozenset(m[0] for m in terminators.markers) if terminators else frozenset()
        )
        self.started = False
        self.done = False
        #: A terminator marker met outside strings before the value closed.
        self.terminated_by: str | None = None
        #: The value did not start like one (``{``/``[`` for calls, ``{`` for arguments).
        self.invalid = False
        #: Call objects met so far (``calls`` mode).
        self.calls_seen = 0
        #: Whitespace skipped before the value (kept so an invalid value loses nothing).
        self.leading: list[str] = []
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.raw = _Span()  # the whole value
        self._call_depth = 1  # depth of call objects: 2 when the value is a list of calls
        self._call = _Span()  # current call object
        self._key_expected = False
        self._key: str | None = None
        self._capture = _Span()  # key or name string being read
        self._capture_kind = ""
        self._args = _Span()  # arguments value of the current call
        self._args_depth = -1  # depth at which the arguments value sits; -1 when not inside
        self._args_scalar = False
        self._args_streamed = False
        self._args_taken = False  # the current call's arguments value was met already
        #: The current call object names its arguments twice; the first value is the one read.
        self.repeated_arguments = False
        self._name_seen = False

    @property
    def complete(self) -> bool:
        return self.done and self.terminated_by is None and not self.invalid

    def partial_arguments(self) -> str | None:
        """Raw text of the current call's arguments read so far (``None`` if they never began)."""
        return "".join(self._args.parts) if self._args.parts or self._args.active else None

    def scan(self, text: str, pos: int, final: bool) -> int:
        """Consume ``text`` from ``pos``; return where scanning stopped (``len(text)`` unless the
        value ended, or a possible terminator at the end needs more text)."""
        for span in (self.raw, self._call, self._capture, self._args):
            if span.active:
                span.start = pos
        i = self._scan(text, pos, final)
        piece = self.raw.flush(text, i)
        if not self.calls and piece:
            self.sink.json_arguments_text(piece)
        for span in (self._call, self._capture):
            span.flush(text, i)
        if self._args.active:
            piece = self._args.flush(text, i)
            if self._args_streamed and piece:
                self.sink.json_arguments_text(piece)
        return i

    def _scan(self, text: str, i: int, final: bool) -> int:  # noqa: C901, PLR0912, PLR0915 -- per-character loop, inline for speed
        n = len(text)
        while i < n and not self.done:
            if self.in_string:
                if self.escape:
                    self.escape = False
                    i += 1
                    continue
                # One C-level match skips plain text and complete escapes up to the next quote.
                body = _STRING_BODY.match(text, i)
                j = body.end() if body is not None else i  # the pattern matches even empty text
                if j >= n:
                    return n
                if text[j] == "\\":  # a backslash at the very end: its pair comes next
                    self.escape = True
                    return n
                i = j + 1
                self.in_string = False
                self._string_closed(text, i)
                continue
            c = text[i]
            if c in _WS:
                j = _WS_RUN.match(text, i).end()  # type: ignore[union-attr]  # matches always
                if not self.started:
                    self.leading.append(text[i:j])
                i = j
                continue
            if c in self._term_first and self.terminators is not None:
                stop = self._check_terminator(text, i, final)
                if stop is not None:
                    return stop
            if not self.started:
                self.started = True
                self.raw.open(i)
                if c not in ("{[" if self.calls else "{"):
                    self.invalid = True
                    self.done = True
                    return i
                if self.calls and c == "[":
                    self._call_depth = 2
            if self._args_depth == self.depth and self._args_depth >= 0 and not self._args.active:
                self._begin_arguments(text, i, c)
            if c == '"':
                self.in_string = True
                self._string_opened(i)
                i += 1
                continue
            if c in "{[":
                self.depth += 1
                if self.calls and c == "{" and self.depth == self._call_depth:
                    self._begin_call(i)
                i += 1
                continue
            if c in "}]":
                i += 1
                self._close_container(text, i)
                continue
            if self.calls and self.depth == self._call_depth:
                if c == ":":
                    self._key_expected = False
                    # only the first arguments value of a call is read: a repeated key (or
                    # both spellings) must not restart text that has already streamed
                    if self._key in ARGUMENT_KEYS:
                        self.repeated_arguments = self._args_taken
                        if not self._args_taken:
                            self._args_depth = self.depth
                            self._args_taken = True
                elif c == ",":
                    self._end_scalar_arguments(text, i)
                    self._key_expected = True
                    self._key = None
            i += 1
        return i

    def _check_terminator(self, text: str, i: int, final: bool) -> int | None:
        assert self.terminators is not None
        tail = text[i : i + self.terminators.longest]
        for marker in self.terminators.markers:
            if tail.startswith(marker):
                self.terminated_by = marker
                self.done = True
                return i
            if not final and marker.startswith(tail) and len(tail) < len(marker):
                return i  # could be a marker: wait for more text
        return None

    def _string_opened(self, i: int) -> None:
        if not (self.calls and self.depth == self._call_depth):
            self._capture_kind = ""
            return
        if self._key_expected:
            self._capture_kind = "key"
        elif self._key == "name" and not self._name_seen:
            self._capture_kind = "name"
        else:
            self._capture_kind = ""
            return
        self._capture.open(i)

    def _string_closed(self, text: str, i: int) -> None:
        if self._capture_kind:
            raw = self._capture.close(text, i)
            value = raw[1:-1]
            if "\\" in value:
                try:
                    value = json.loads(raw)
                except ValueError:
                    pass
            if self._capture_kind == "key":
                self._key = str(value)
            else:
                self._name_seen = True
                self.sink.json_name(str(value))
            self._capture_kind = ""
        if self._args.active and self._args_scalar and self.depth == self._args_depth:
            self._finish_arguments(text, i)

    def _begin_call(self, i: int) -> None:
        self.calls_seen += 1
        self._call.open(i)
        self._key_expected = True
        self._key = None
        self._name_seen = False
        self._args_depth = -1
        self._args_streamed = False
        self._args_taken = False
        self.repeated_arguments = False

    def _begin_arguments(self, text: str, i: int, c: str) -> None:
        self._args.open(i)
        self._args_scalar = c not in "{["
        # Arguments sent as a JSON string are decoded at the end, not streamed as raw text.
        self._args_streamed = self._name_seen and c != '"'

    def _finish_arguments(self, text: str, end: int) -> None:
        piece = self._args.flush(text, end)
        if self._args_streamed and piece:
            self.sink.json_arguments_text(piece)
        self._args.active = False
        self._args_depth = -1

    def _end_scalar_arguments(self, text: str, i: int) -> None:
        if self._args.active and self._args_scalar:
            self._finish_arguments(text, i)

    def _close_container(self, text: str, end: int) -> None:
        if self._args.active and not self._args_scalar and self.depth == self._args_depth + 1:
            self.depth -= 1
            self._finish_arguments(text, end)
        else:
            if self._args.active and self._args_scalar and self.depth == self._args_depth:
                self._finish_arguments(text, end - 1)
            self.depth -= 1
        if self.calls and self.depth == self._call_depth - 1 and self._call.active:
            raw_call = self._call.close(text, end)
            raw_args = "".join(self._args.parts) if self._args.parts else None
            self.sink.json_call_end(raw_call, raw_args, self._args_streamed)
            self._args = _Span()
            self._key_expected = False
        if self.depth <= 0:
            self.done = True
