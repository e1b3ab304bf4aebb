"""Gemma call-object formats: FunctionGemma and Gemma 4.

- FunctionGemma: ``<start_function_call>call:NAME{key:<escape>text<escape>,n:3}<end_function_call>``
- Gemma 4: ``<|tool_call>call:NAME{key:<|"|>text<|"|>,o:{a:true}}<tool_call|>``, with reasoning in
  ``<|channel>thought ... <channel|>``.

Keys are bare words and strings are delimited by a special token, so string text may contain
anything (braces, quotes, the end marker) without escaping. A call starts as soon as
``call:NAME{`` is read and its arguments stream as JSON one member at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import ArgumentsWriter, StreamMachine, TextFormatParser
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, parse_loose_value, parse_member
from tooluse.tools.definition import ToolDefinition

__all__ = ["FunctionGemmaParser", "Gemma4Parser"]

_CALL = re.compile(r"\s*call:([A-Za-z0-9_.\-]{1,128})\s*(\{.*\})?\s*", re.DOTALL)
_HEADER = re.compile(r"\s*call:([A-Za-z0-9_.\-]{1,128})\s*\{")
_MAX_HEADER = 256
_STRING_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*")
_STRUCTURE = re.compile(r"[{}\[\],]")


class _MemberSplitter:
    """Splits the argument object of a call, as it streams, into ``key:value`` members: commas
    at the object's own level separate them (strings arrive already encoded, never split)."""

    def __init__(self) -> None:
        self.depth = 1
        self.pieces: list[str] = []
        self.members: list[str] = []  # completed members, taken by the machine

    def code(self, text: str) -> None:
        start = 0
        for match in _STRUCTURE.finditer(text):
            if self.depth == 0:
                return
            char = match.group()
            if char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self._end(text[start : match.start()])
            elif self.depth == 1:
                self._end(text[start : match.start()])
                start = match.end()
        if self.depth > 0:
            self.pieces.append(text[start:])

    def string_key(self) -> str | None:
        """The key whose value a string starting now is (``key:`` alone so far at the object's
        own level), else ``None``."""
        if self.depth != 1 or len(self.pieces) > 1:
            return None
        match = _STRING_KEY.fullmatch("".join(self.pieces))
        return match.group(1) if match else None

    def string(self, encoded: str) -> None:
        if self.depth > 0:
            self.pieces.append(encoded)

    def _end(self, last: str) -> None:
        self.pieces.append(last)
        member = "".join(self.pieces).strip()
        self.pieces = []
        if member:
            self.members.append(member)


class _CallObjectMachine(StreamMachine):
    call_open = "<start_function_call>"
    call_close = "<end_function_call>"
    quote = "<escape>"
    think_open: str | None = None
    think_close: str | None = None
    #: Special tokens that may stray into the answer (a doubled or unmatched channel marker):
    #: dropped from content, since they are never text.
    stray_markers: tuple[str, ...] = ()

    def _call_openers(self) -> tuple[str, ...]:
        return (self.call_open,)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opens = [self.call_open] + ([self.think_open] if self.think_open else [])
        self._text_markers = MarkerSet([*opens, *self.stray_markers])
        self._body_markers = MarkerSet([self.quote, self.call_close])
        self._string_markers = MarkerSet([self.quote])
        self._state = "text"
        self._parts: list[str] = []  # body pieces: code, then strings as JSON text
        # the call being read, started once "call:NAME{" arrived, and its argument members
        self._started: tuple[tuple[int, str, ArgumentsWriter], str] | None = None
        self._splitter: _MemberSplitter | None = None
        self._header: list[str] | None = None  # code read while the header is incomplete
        self._string: list[str] = []  # text of the string being read
        self._string_streams = False  # whether that string is a member value sent as it comes

    def _step(self) -> bool:
        if self._state == "text":
            return self._text_step()
        if self._state == "body":
            return self._body_step()
        return self._string_step()

    def _text_step(self) -> bool:
        marker = self._text_until(self._text_markers)
        if marker is None:
            return False
        if marker == self.call_open:
            self._state = "body"
            self._parts = []
            self._header = []
            self._raw: list[str] = [self.call_open]
        elif marker == self.think_open:
            self._enter_reasoning()
        return True

    def _body_step(self) -> bool:
        # code is released as it arrives (not gathered up to the next marker) so that
        # each argument streams as soon as the comma after it is read
        found = self._body_markers.find(self._buf, self._pos, self._final)
        code = self._buf[self._pos : found.text_end]
        self._pos = found.text_end
        if code:
            self._stream_code(code)
            self._parts.append(code)
            self._raw.append(code)
        if found.marker is None:
            if self._final:
                self._end_body(cut=True)
                return True
            return bool(code)
        self._pos = found.marker_end
        self._raw.append(found.marker)
        if found.marker == self.quote:
            self._header = None  # a string before "call:NAME{": not a streamable call
            self._open_string()
            return True
        self._end_body(cut=False)
        return True

    def _string_step(self) -> bool:
        """A string's text needs no unescaping, so a member's string value is sent as it comes."""
        found = self._string_markers.find(self._buf, self._pos, self._final)
        piece = self._buf[self._pos : found.text_end]
        self._pos = found.text_end
        self._string.append(piece)
        if self._string_streams and self._started is not None:
            self._started[0][2].string_piece(piece)
        if found.marker is None and not self._final:
            return bool(piece)
        marker = found.marker
        if marker is not None:
            self._pos = found.marker_end
        text, self._string = "".join(self._string), []
        self._raw.append(text + (marker or ""))
        self._parts.append(json.dumps(text, ensure_ascii=False))
        if self._splitter is not None:
            self._splitter.string(self._parts[-1])
        if self._string_streams and self._started is not None and marker is not None:
            self._started[0][2].close_string(text)
        self._string_streams = False
        if marker is None:
            self._end_body(cut=True)
        else:
            self._state = "body"
        return True

    def _open_string(self) -> None:
        self._state = "string"
        self._string = []
        key = self._splitter.string_key() if self._splitter is not None else None
        self._string_streams = key is not None and self._started is not None
        if key is not None and self._started is not None:
            self._started[0][2].open_string(key)

    def _stream_code(self, code: str) -> None:
        """Start the call as soon as its header is read, then send each completed member."""
        if self._header is not None:
            self._header.append(code)
            head = "".join(self._header)
            header = _HEADER.match(head)
            if header is None:
                if len(head) > _MAX_HEADER:  # not a header: the call is read whole at its end
                    self._header = None
                return
            self._header = None
            self._started = (self._begin_streamed_call(header.group(1)), header.group(1))
            self._splitter = _MemberSplitter()
            code = head[header.end() :]
        if self._splitter is None or self._started is None:
            return
        self._splitter.code(code)
        for member in self._splitter.members:
            try:
                key, value = parse_member(member, ":")
            except LiteralSyntaxError:
                continue  # the final arguments fill it in when the call ends
            self._started[0][2].member(key, value)
        self._splitter.members = []

    def _end_body(self, *, cut: bool) -> None:
        self._state = "text"
        started, self._started, self._splitter = self._started, None, None
        raw = "".join(self._raw)
        code = "".join(self._parts)
        match = _CALL.fullmatch(code)
        if match is None:
            shape = "function call is not 'call:NAME{...}'"
            if started is None:
                self._error(shape, raw)
            else:
                header = _HEADER.match(code)
                start = header.end() - 1 if header else 0
                self._end_call(started, None, raw_arguments=code[start:], raw=raw, problem=shape)
            return
        name, body = match.group(1), match.group(2)
        problem = "function call was cut off before its end marker" if cut else None
        if body is None:
            self._end_call(started or name, {}, raw=raw, problem=problem)
            return
        try:
            arguments = parse_loose_value(body)
        except LiteralSyntaxError as exc:
            self._end_call(
                started or name,
                None,
                raw_arguments=body,
                raw=raw,
                problem=problem or f"arguments of {name!r} cannot be read: {exc}",
            )
            return
        self._end_call(started or name, arguments, raw=raw, problem=problem)

    def _end_call(
        self,
        call: tuple[tuple[int, str, ArgumentsWriter], str] | str,
        arguments: Any,
        **details: Any,
    ) -> None:
        """Finish the streamed call, or emit a call whose header came in one piece with its
        end (``call`` is then just the name)."""
        if isinstance(call, str):
            self._whole_call(call, arguments, **details)
        else:
            self._end_streamed_call(call[0], call[1], arguments, **details)

    def _finish(self) -> None:
        if self._state in ("body", "string"):
            self._end_body(cut=True)


def _declaration_value(value: Any, quote: str) -> str:
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    if isinstance(value, dict):
        inner = ",".join(f"{k}:{_declaration_value(v, quote)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_declaration_value(v, quote) for v in value) + "]"
    return json.dumps(value)


class FunctionGemmaParser(TextFormatParser):
    """FunctionGemma (270M) calls: ``call:NAME{k:<escape>v<escape>}`` between call markers."""

    name = "functiongemma"
    machine = _CallObjectMachine
    declaration_open = "<start_function_declaration>"
    declaration_close = "<end_function_declaration>"

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        quote = self.machine.quote
        out = []
        for tool in tools:
            body = {"description": tool.description, "parameters": tool.parameters_schema}
            out.append(
                f"{self.declaration_open}declaration:{tool.name}"
                f"{_declaration_value(body, quote)}{self.declaration_close}"
            )
        return "".join(out)


class _Gemma4Machine(_CallObjectMachine):
    call_open = "<|tool_call>"
    call_close = "<tool_call|>"
    quote = '<|"|>'
    think_open = "<|channel>thought"
    think_close = "<channel|>"
    stray_markers = ("<|channel>", "<channel|>")


class Gemma4Parser(FunctionGemmaParser):
    """Gemma 4 calls: ``<|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>``."""

    name = "gemma4"
    machine = _Gemma4Machine
    declaration_open = "<|tool>"
    declaration_close = "<tool|>"
