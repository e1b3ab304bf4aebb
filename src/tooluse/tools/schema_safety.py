"""Guards against hostile schemas and arguments: bounded regexes, schema checks, argument screens.

Tool schemas can come from anywhere (an MCP server, a file) and arguments come from a model, so
nothing here may hang, recurse without bound or raise anything but the documented errors:

- :func:`compile_pattern` compiles a JSON Schema ``pattern`` with a linear-time engine
  (``google-re2``). Patterns RE2 cannot run (backreferences, lookaround) fall back to Python's
  ``re`` only when they have no nested or adjacent quantifiers, the shapes that backtrack
  catastrophically; otherwise they are refused.
- :func:`check_schema` runs at definition time: nesting depth, ``$ref`` that point nowhere or
  outside the document, ``$ref`` cycles that never reach a value, unusable patterns. Each
  problem names its JSON pointer.
- :func:`screen_arguments` runs before validation: nesting depth, integers too long to print,
  non-string object keys; it also reports whether NaN/Infinity or booleans occur, so the
  validator can apply the schema's rule for them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from tooluse.errors import ToolDefinitionError
from tooluse.tools.json_schema_rewrite import (
    SCHEMA_LIST_KEYWORDS,
    SCHEMA_MAP_KEYWORDS,
    SCHEMA_VALUE_KEYWORDS,
)

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_SCHEMA_DEPTH",
    "REGEX_ENGINE",
    "ArgumentRefused",
    "UnsafePatternError",
    "check_schema",
    "compile_pattern",
    "screen_arguments",
]

try:  # a linear-time engine: no pattern can make matching take more than linear time
    import re2 as _re2
except ImportError:  # pragma: no cover - google-re2 ships wheels for the supported platforms
    _re2 = None

REGEX_ENGINE = "re2" if _re2 is not None else "re (nested quantifiers refused)"
MAX_SCHEMA_DEPTH = 64  # nesting levels of a schema document
MAX_ARGUMENT_DEPTH = 64  # nesting levels of an argument value
# Python refuses to print integers longer than this many digits (a ValueError deep inside json)
MAX_INTEGER_DIGITS = 4300
_MAX_INTEGER_BITS = int(MAX_INTEGER_DIGITS * math.log2(10)) - 8

# A quantified group whose body is itself quantified, e.g. (a+)+ or (\w*)*: exponential in re.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[*+}?](?:[^()\\]|\\.)*\)\s*[*+{]")
_BACKREFERENCE = re.compile(r"\\[1-9]|\(\?P=")


class UnsafePatternError(ValueError):
    """A ``pattern`` that no engine here can run in bounded time."""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Callable[[str], bool]:
    """A ``search`` predicate for ``pattern``; raises :class:`UnsafePatternError`."""
    if _re2 is not None:
        options = _re2.Options()
        options.log_errors = False  # an unsupported pattern is handled below, not logged
        try:
            compiled = _re2.compile(pattern, options=options)
        except Exception:  # re2.error: a feature RE2 does not have; try the bounded fallback
            pass
        else:
            return lambda text: compiled.search(text) is not None
    if _NESTED_QUANTIFIER.search(pattern) or _BACKREFERENCE.search(pattern):
        raise UnsafePatternError(
            f"pattern {pattern!r} can take exponential time to match (nested quantifiers or "
            "backreferences); simplify it"
        )
    try:
        fallback = re.compile(pattern)
    except re.error as exc:
        raise UnsafePatternError(
            f"pattern {pattern!r} is not a valid regular expression: {exc}"
        ) from None
    return lambda text: fallback.search(text) is not None


# ---------------------------------------------------------------------------------------------
# Definition-time schema checks

# keywords through which a $ref chain can loop without ever describing a value
_PASS_THROUGH = ("allOf", "anyOf", "oneOf")


def _pointer(parts: tuple[str, ...]) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts) if parts else "#"


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _immediate_refs(node: Any, depth: int = 0) -> list[str]:
    """The ``$ref`` reached from ``node`` without descending into a value's structure."""
    if not isinstance(node, Mapping) or depth > MAX_SCHEMA_DEPTH:
        return []
    out: list[str] = []
    ref = node.get("$ref")
    if isinstance(ref, str):
        out.append(ref)
    for key in _PASS_THROUGH:
        value = node.get(key)
        if isinstance(value, list) and (key == "allOf" or len(value) == 1):
            for branch in value:
                out.extend(_immediate_refs(branch, depth + 1))
    return out


class _Unsafe(Exception):
    """A schema node that cannot be validated safely: where (``parts``) and why."""

    def __init__(self, parts: tuple[str, ...], text: str) -> None:
        super().__init__(text)
        self.parts = parts
        self.text = text


def check_schema(schema: Mapping[str, Any], tool_name: str) -> None:
    """Raise :class:`ToolDefinitionError` if ``schema`` cannot be validated safely."""
    try:
        refs: list[tuple[str, tuple[str, ...]]] = []
        stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
        while stack:
            node, parts = stack.pop()
            if isinstance(node, Mapping):
                _check_node(schema, node, parts, refs)
                stack.extend(_subschemas(node, parts))
        _check_ref_cycles(schema, refs)
    except _Unsafe as exc:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: invalid schema at {_pointer(exc.parts)}: {exc.text}"
        ) from None


def _check_node(
    schema: Mapping[str, Any],
    node: Mapping[str, Any],
    parts: tuple[str, ...],
    refs: list[tuple[str, tuple[str, ...]]],
) -> None:
    """Check one node's depth, ``$ref`` (gathered into ``refs``) and ``pattern``."""
    if len(parts) > 2 * MAX_SCHEMA_DEPTH:
        raise _Unsafe(parts[:8] + ("...",), f"nested deeper than {MAX_SCHEMA_DEPTH} levels")
    ref = node.get("$ref")
    if ref is not None:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise _Unsafe(parts, f"$ref {ref!r} does not point inside this schema")
        if _resolve(schema, ref) is None:
            raise _Unsafe(parts, f"$ref {ref!r} points nowhere (dangling reference)")
        refs.append((ref, parts))
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        _check_pattern(pattern, parts)


def _check_pattern(pattern: str, parts: tuple[str, ...]) -> None:
    try:
        compile_pattern(pattern)
    except UnsafePatternError as exc:
        raise _Unsafe(parts, str(exc)) from None


def _subschemas(
    node: Mapping[str, Any], parts: tuple[str, ...]
) -> list[tuple[Any, tuple[str, ...]]]:
    """The subschemas of one node, each with its path (patternProperties' patterns checked)."""
    out: list[tuple[Any, tuple[str, ...]]] = []
    for key in SCHEMA_VALUE_KEYWORDS:
        child = node.get(key)
        if isinstance(child, Mapping):
            out.append((child, (*parts, key)))
        elif key == "items" and isinstance(child, list):
            out.extend((c, (*parts, key, str(i))) for i, c in enumerate(child))
    for key in SCHEMA_LIST_KEYWORDS:
        children = node.get(key)
        if isinstance(children, list):
            out.extend((c, (*parts, key, str(i))) for i, c in enumerate(children))
    for key in SCHEMA_MAP_KEYWORDS:
        children = node.get(key)
        if isinstance(children, Mapping):
            if key == "patternProperties":
                for name in children:
                    _check_pattern(str(name), (*parts, key))
            out.extend((c, (*parts, key, str(n))) for n, c in children.items())
    return out


def _check_ref_cycles(schema: Mapping[str, Any], refs: list[tuple[str, tuple[str, ...]]]) -> None:
    """A $ref chain that comes back to itself before describing any value never terminates."""
    for ref, parts in refs:
        seen: set[str] = set()
        todo = [ref]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            for nxt in _immediate_refs(_resolve(schema, current)):
                if nxt == ref:
                    raise _Unsafe(parts, f"$ref {ref!r} is a cycle that never describes a value")
                todo.append(nxt)


# ---------------------------------------------------------------------------------------------
# Argument screening


class ArgumentRefused(Exception):
    """An argument value no validator should see; ``path`` and ``text`` describe it."""

    def __init__(self, path: str, text: str) -> None:
        super().__init__(f"{path}: {text}" if path else text)
        self.path = path
        self.text = text


def _path_of(link: Any) -> str:
    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    out = ""
    for key in reversed(keys):
        out = f"{out}[{key}]" if isinstance(key, int) else (f"{out}.{key}" if out else key)
    return out


def screen_arguments(data: Any) -> tuple[bool, bool]:
    """Refuse hostile values; returns (NaN/Infinity seen, a boolean or float seen).

    The second flag matters for enums of integers, which ``True`` and ``2.0`` equal.

    Iterative, so 100,000 nested lists cost a refusal, not a ``RecursionError``; scalars are
    checked in place and only containers go on the stack (this runs on every call).
    """
    if not isinstance(data, (Mapping, list, tuple)):
        return _scalar_flags(data, None)
    non_finite = loose_number = False
    stack: list[tuple[Any, int, Any]] = [(data, 0, None)]
    while stack:
        container, depth, link = stack.pop()
        if depth >= MAX_ARGUMENT_DEPTH:
            raise ArgumentRefused(
                _path_of(link), f"value nested deeper than {MAX_ARGUMENT_DEPTH} levels"
            )
        is_map = type(container) is dict or isinstance(container, Mapping)
        for key, value in container.items() if is_map else enumerate(container):
            if is_map and type(key) is not str and not isinstance(key, str):
                raise ArgumentRefused(
                    _path_of(link),
                    f"object keys must be strings, got a key of type {type(key).__name__}",
                )
            kind = type(value)
            if kind is str or value is None:
                continue
            if kind is bool:
                loose_number = True
            elif kind is int:
                if value.bit_length() > _MAX_INTEGER_BITS:
                    raise ArgumentRefused(
                        _path_of((link, key)),
                        f"integer too large (more than {MAX_INTEGER_DIGITS} digits)",
                    )
            elif kind is float:
                loose_number = True
                if value - value != 0.0:  # NaN or an infinity
                    non_finite = True
            elif kind is dict or kind is list or isinstance(value, (Mapping, list, tuple)):
                stack.append((value, depth + 1, (link, key)))
            else:
                flags = _scalar_flags(value, (link, key))
                non_finite, loose_number = non_finite or flags[0], loose_number or flags[1]
    return non_finite, loose_number


def _scalar_flags(value: Any, link: Any) -> tuple[bool, bool]:
    if isinstance(value, bool):
        return False, True
    if isinstance(value, int) and value.bit_length() > _MAX_INTEGER_BITS:
        raise ArgumentRefused(
            _path_of(link), f"integer too large (more than {MAX_INTEGER_DIGITS} digits)"
        )
    if isinstance(value, float):
        return not math.isfinite(value), True
    return False, False
