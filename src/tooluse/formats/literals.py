"""Reading argument values the way models write them: JSON, Python literals, Python calls.

Models mix syntaxes: ``True``/``None``, single quotes, trailing commas, unquoted keys, calls such
as ``get_weather(city="Paris")``. :func:`decode_arguments` tries strict JSON first (fast, via the
standard library) and falls back to a tolerant reader. The tolerant reader is a small tokenizer
with regular expressions free of nested quantifiers plus a depth-limited recursive descent, so
hostile input costs linear time and cannot exhaust the stack.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "LiteralSyntaxError",
    "decode_arguments",
    "parse_loose_value",
    "parse_member",
    "parse_python_calls",
]

MAX_DEPTH = 200
"""Deepest nesting the tolerant reader accepts (deeper input is an error, not a crash)."""

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<dq>"(?:[^"\\]|\\.)*")
  | (?P<sq>'(?:[^'\\]|\\.)*')
  | (?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>[{}\[\]():,=])
    """,
    re.VERBOSE | re.DOTALL,
)

_CONSTANTS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}


class LiteralSyntaxError(ValueError):
    """Text that is not a JSON or Python literal value."""


def decode_arguments(text: str) -> Any:
    """Decode argument text: strict JSON, else the tolerant JSON/Python-literal reader."""
    try:
        return json.loads(text)
    except RecursionError:
        raise LiteralSyntaxError(f"nesting deeper than {MAX_DEPTH} levels") from None
    except ValueError:
        pass
    return parse_loose_value(text)


def parse_loose_value(text: str) -> Any:
    """One value in JSON or Python-literal syntax (the whole text must be that value)."""
    reader = _Reader(text)
    value = reader.value(0)
    reader.expect_end()
    return value


def parse_member(text: str, separator: str) -> tuple[str, Any]:
    """One ``key=value`` (``separator="="``, Python keyword argument) or ``key:value``
    (``separator=":"``, object member) written as the tolerant reader reads it."""
    reader = _Reader(text)
    tok = reader._token()
    if tok is None:
        raise reader.error("expected a key")
    kind, token, _ = tok
    if kind == "name" or (kind == "num" and separator == ":"):
        key = token
    elif kind in ("dq", "sq") and separator == ":":
        key = _decode_string(token)
    else:
        raise reader.error(f"expected a key, got {token!r}")
    reader.take(separator)
    value = reader.value(1)
    reader.expect_end()
    return key, value


def parse_python_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Calls written as Python: ``f(a=1)``, ``[f(a=1), g(b='x')]``, ``print(f())``.

    Returns ``(name, keyword arguments)`` pairs. Positional arguments are an error, since a tool
    call has only named parameters.
    """
    reader = _Reader(text)
    calls: list[tuple[str, dict[str, Any]]] = []
    if reader.peek() == "[":
        reader.take("[")
        while reader.peek() != "]":
            calls.append(reader.call())
            if reader.peek() == ",":
                reader.take(",")
            elif reader.peek() != "]":
                raise reader.error("expected ',' or ']' between calls")
        reader.take("]")
    else:
        while reader.peek() is not None:
            calls.append(reader.call())
            if reader.peek() in (",", ";"):
                reader.take(reader.peek() or "")
    reader.expect_end()
    return calls


class _Reader:
    """Tokenizer plus recursive descent (depth-limited) over one piece of text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._peeked: tuple[str, str, int] | None = None

    def error(self, message: str) -> LiteralSyntaxError:
        return LiteralSyntaxError(f"{message} at offset {self.pos}")

    def _next(self) -> tuple[str, str, int] | None:
        text, pos = self.text, self.pos
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                if text[pos] == ";":
                    self.pos = pos + 1
                    return ("punct", ";", pos)
                raise LiteralSyntaxError(f"unexpected character {text[pos]!r} at offset {pos}")
            pos = match.end()
            kind = match.lastgroup or ""
            if kind != "ws":
                self.pos = pos
                return (kind, match.group(), match.start())
        self.pos = pos
        return None

    def _token(self) -> tuple[str, str, int] | None:
        if self._peeked is not None:
            tok, self._peeked = self._peeked, None
            return tok
        return self._next()

    def peek(self) -> str | None:
        if self._peeked is None:
            self._peeked = self._next()
        return None if self._peeked is None else self._peeked[1]

    def take(self, expected: str) -> None:
        tok = self._token()
        if tok is None or tok[1] != expected:
            raise self.error(f"expected {expected!r}")

    def expect_end(self) -> None:
        if self.peek() is not None:
            raise self.error("unexpected text after the value")

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH} levels")
        tok = self._token()
        if tok is None:
            raise self.error("unexpected end of text")
        kind, text, _ = tok
        if kind == "dq" or kind == "sq":
            return _decode_string(text)
        if kind == "num":
            return _decode_number(text)
        if kind == "name":
            if text in _CONSTANTS:
                return _CONSTANTS[text]
            if self.peek() == "(":
                return self._call_rest(text, depth)
            raise self.error(f"unknown name {text!r}")
        if text == "{":
            return self._object(depth)
        if text in "[(":
            return self._sequence("]" if text == "[" else ")", depth)
        raise self.error(f"unexpected {text!r}")

    def _object(self, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while self.peek() != "}":
            tok = self._token()
            if tok is None:
                raise self.error("unclosed object")
            kind, text, _ = tok
            if kind in ("dq", "sq"):
                key = _decode_string(text)
            elif kind in ("name", "num"):
                key = text  # unquoted keys, as some models write them
            else:
                raise self.error(f"expected a key, got {text!r}")
            self.take(":")
            out[str(key)] = self.value(depth + 1)
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != "}":
                raise self.error("expected ',' or '}'")
        self.take("}")
        return out

    def _sequence(self, closer: str, depth: int) -> list[Any]:
        out: list[Any] = []
        while self.peek() != closer:
            if self.peek() is None:
                raise self.error(f"unclosed sequence, expected {closer!r}")
            out.append(self.value(depth + 1))
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != closer:
                raise self.error(f"expected ',' or {closer!r}")
        self.take(closer)
        return out

    def call(self) -> tuple[str, dict[str, Any]]:
        tok = self._token()
        if tok is None or tok[0] != "name":
            raise self.error("expected a function name")
        name = tok[1]
        if name == "print" and self.peek() == "(":
            # Gemma's tool_code style wraps the call in print(...)
            self.take("(")
            inner = self.call()
            self.take(")")
            return inner
        return name, self._call_rest(name, 0)

    def _call_rest(self, name: str, depth: int) -> dict[str, Any]:
        self.take("(")
        kwargs: dict[str, Any] = {}
        while self.peek() != ")":
            tok = self._token()
            if tok is None:
                raise self.error(f"unclosed call to {name!r}")
            if tok[0] != "name" or self.peek() != "=":
                raise self.error(f"call to {name!r} has a positional argument")
            self.take("=")
            kwargs[tok[1]] = self.value(depth + 1)
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != ")":
                raise self.error("expected ',' or ')'")
        self.take(")")
        return kwargs


def _decode_string(token: str) -> str:
    if token[0] == '"':
        try:
            return str(json.loads(token))
        except ValueError:
            pass
    try:
        return str(ast.literal_eval(token))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return token[1:-1]


def _decode_number(token: str) -> int | float:
    try:
        return int(token)
    except ValueError:
        return float(token)
