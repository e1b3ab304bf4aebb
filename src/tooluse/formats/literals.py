"""Reading argument values the way models write them: JSON, Python literals, Python calls.

Models mix syntaxes: ``True``/``None``, single quotes, trailing commas, unquoted keys, calls such
as ``get_weather(city="Paris")``. :func:`decode_arguments` tries strict JSON first (fast, via the
standard library) and falls back to a tolerant reader. The tolerant reader is a small tokenizer
with regular expressions free of nested quantifiers plus a depth-limited recursive descent, so
hostile input costs linear time and cannot exhaust the stack.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
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

# Strings are not in this pattern: a repeated alternation keeps backtracking state for every
# character it matches (hundreds of bytes per character), so they are read by _string_end.
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>[{}\[\]():,=])
    """,
    re.VERBOSE | re.DOTALL,
)

_PLAIN = {'"': re.compile(r'[^"\\]*'), "'": re.compile(r"[^'\\]*")}
_ESCAPE_FREE = re.compile(r"[^\\\x00-\x1f]*")
_PY_ESCAPE = re.compile(
    r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[^}\n]{1,100}\}|.)",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {
    "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\n": "",
}  # fmt: skip

_CONSTANTS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}


# Token kinds that can start an object key.
_KEYS = frozenset({"dq", "sq", "name", "num"})


class LiteralSyntaxError(ValueError):
    """Text that is not a JSON or Python literal value."""


def decode_arguments(text: str) -> Any:
    """Decode argument text: strict JSON, else the tolerant JSON/Python-literal reader.

    Non-finite numbers (``1e999``, ``NaN``, ``Infinity``) are an error: arguments must stay
    valid JSON, and no JSON text can hold them.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise LiteralSyntaxError(f"nesting deeper than {MAX_DEPTH} levels") from None
    except LiteralSyntaxError:
        raise
    except ValueError:
        pass
    return parse_loose_value(text)


def _reject_constant(name: str) -> Any:
    raise LiteralSyntaxError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise LiteralSyntaxError(f"number {text} is out of range (not finite)")
    return value


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
            if text[pos] in "\"'":
                end = _string_end(text, pos)
                if end < 0:
                    raise LiteralSyntaxError(f"unterminated string at offset {pos}")
                self.pos = end
                return ("dq" if text[pos] == '"' else "sq", text[pos:end], pos)
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

    def _object(self, depth: int) -> dict[str, Any] | list[Any]:
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
            if not out and self.peek() in (",", "}") and kind != "name":
                # a Python set literal ({'a', 'b'}): JSON has no sets, so it becomes a list
                first = _decode_number(text) if kind == "num" else key
                return self._set_rest(first, depth)
            self.take(":")
            out[str(key)] = self.value(depth + 1)
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != "}" and (self._peeked is None or self._peeked[0] not in _KEYS):
                # a missing comma is read past only when a key follows (FunctionGemma writes
                # members without commas); the key must then be followed by ':'
                raise self.error("expected ',' or '}'")
        self.take("}")
        return out

    def _set_rest(self, first: Any, depth: int) -> list[Any]:
        items = [first]
        while self.peek() == ",":
            self.take(",")
            if self.peek() == "}":
                break
            items.append(self.value(depth + 1))
        self.take("}")
        return items

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


def _string_end(text: str, start: int) -> int:
    """End (after the closing quote) of the string literal opening at ``start``; -1 when it is
    not closed. Plain runs are skipped by one regex match each, escapes one at a time."""
    quote = text[start]
    plain = _PLAIN[quote]
    n = len(text)
    i = start + 1
    while True:
        i = plain.match(text, i).end()  # type: ignore[union-attr]  # matches even empty text
        if i >= n:
            return -1
        if text[i] == quote:
            return i + 1
        i += 2  # a backslash and the character it escapes
        if i > n:
            return -1


def _decode_string(token: str) -> str:
    body = token[1:-1]
    if _ESCAPE_FREE.fullmatch(body):
        return body  # nothing to decode: no parser needed (and no copy of a long value)
    if token[0] == '"':
        try:
            return str(json.loads(token, strict=False))
        except ValueError:
            pass
    # Python escapes, decoded in one pass (a Python parser would take many times the text)
    return _PY_ESCAPE.sub(_python_escape, body)


def _python_escape(match: re.Match[str]) -> str:
    escape = match.group()
    kind = escape[1]
    if kind in "xuU" and len(escape) > 2:  # "\\x" without its digits matched as a plain escape
        code = int(escape[2:], 16)
        return chr(code) if code <= 0x10FFFF else escape
    if kind in "01234567":
        return chr(int(escape[1:], 8))
    if kind == "N":
        try:
            return unicodedata.lookup(escape[3:-1])
        except KeyError:
            return escape
    return _SIMPLE_ESCAPES.get(kind, escape)  # an unknown escape keeps its backslash, as in Python


def _decode_number(token: str) -> int | float:
    try:
        return int(token)
    except ValueError:
        return _finite_float(token)
