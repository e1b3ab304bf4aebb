"""Gemma call-object formats: FunctionGemma and Gemma 4.

- FunctionGemma: ``<start_function_call>call:NAME{key:<escape>text<escape>,n:3}<end_function_call>``
- Gemma 4: ``<|tool_call>call:NAME{key:<|"|>text<|"|>,o:{a:true}}<tool_call|>``, with reasoning in
  ``<|channel>thought ... <channel|>``.

Keys are bare words and strings are delimited by a special token, so string text may contain
anything (braces, quotes, the end marker) without escaping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import StreamMachine, TextFormatParser
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, parse_loose_value
from tooluse.tools.definition import ToolDefinition

__all__ = ["FunctionGemmaParser", "Gemma4Parser"]

_CALL = re.compile(r"\s*call:([A-Za-z0-9_.\-]{1,128})\s*(\{.*\})?\s*", re.DOTALL)


class _CallObjectMachine(StreamMachine):
    call_open = "<start_function_call>"
    call_close = "<end_function_call>"
    quote = "<escape>"
    think_open: str | None = None
    think_close: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opens = [self.call_open] + ([self.think_open] if self.think_open else [])
        self._text_markers = MarkerSet(opens)
        self._body_markers = MarkerSet([self.quote, self.call_close])
        self._string_markers = MarkerSet([self.quote])
        self._state = "text"
        self._parts: list[str] = []  # body pieces: code, then strings as JSON text

    def _step(self) -> bool:
        if self._state == "text":
            found = self._text_markers.find(self._buf, self._pos, self._final)
            self._emit_text(self._buf[self._pos : found.text_end])
            self._pos = found.text_end
            if found.marker is None:
                return False
            self._pos = found.marker_end
            if found.marker == self.call_open:
                self._state = "body"
                self._parts = []
                self._raw: list[str] = [self.call_open]
            else:
                self._enter_reasoning()
            return True
        if self._state == "body":
            got = self._collect_until(self._body_markers)
            if got is None:
                return False
            code, marker = got
            self._parts.append(code)
            self._raw.append(code + (marker or ""))
            if marker == self.quote:
                self._state = "string"
                return True
            self._end_body(cut=marker is None)
            return True
        got = self._collect_until(self._string_markers)  # "string": up to the closing quote
        if got is None:
            return False
        text, marker = got
        self._raw.append(text + (marker or ""))
        self._parts.append(json.dumps(text, ensure_ascii=False))
        if marker is None:
            self._end_body(cut=True)
        else:
            self._state = "body"
        return True

    def _end_body(self, *, cut: bool) -> None:
        self._state = "text"
        raw = "".join(self._raw)
        code = "".join(self._parts)
        match = _CALL.fullmatch(code)
        if match is None:
            self._error("function call is not 'call:NAME{...}'", raw)
            return
        name, body = match.group(1), match.group(2)
        problem = "function call was cut off before its end marker" if cut else None
        if body is None:
            self._whole_call(name, {}, raw=raw, problem=problem)
            return
        try:
            arguments = parse_loose_value(body)
        except LiteralSyntaxError as exc:
            self._whole_call(
                name,
                None,
                raw_arguments=body,
                raw=raw,
                problem=problem or f"arguments of {name!r} cannot be read: {exc}",
            )
            return
        self._whole_call(name, arguments, raw=raw, problem=problem)

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


class Gemma4Parser(FunctionGemmaParser):
    """Gemma 4 calls: ``<|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>``."""

    name = "gemma4"
    machine = _Gemma4Machine
    declaration_open = "<|tool>"
    declaration_close = "<tool|>"
