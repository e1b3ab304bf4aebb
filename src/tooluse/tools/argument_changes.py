"""What reading the model's arguments into a function's types would change without a word.

pydantic reads a JSON array into a ``set`` by dropping repeated items, and JSON object keys
into ``dict[int, ...]`` keys by number, so ``"1"`` and ``"01"`` become one key. Validation
compares what the model sent with what the function would get: items or keys that would be
lost are problems for the model to fix, keys whose text changed are reported as coercions.
A JSON object with a repeated key keeps its last value (as JSON parsers do); that is reported
too, and so is a name a nested pydantic model has no field for (which it ignores).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Set
from typing import Any

from pydantic import BaseModel

from tooluse.tools.argument_messages import (
    join_path,
    repeated_items,
    short_value,
    unique_items_problem,
)

__all__ = ["loads_reporting_repeated_keys", "lost_members"]

_CANONICAL_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _same_key(text: str, key: Any) -> bool:
    """Whether ``key`` is the JSON object key ``text`` read without changing it."""
    if isinstance(key, str):
        return key == text
    if isinstance(key, bool) or not isinstance(key, (int, float)):
        return str(key) == text
    return bool(_CANONICAL_NUMBER.fullmatch(text)) and float(text) == key


def lost_members(
    sent: Mapping[str, Any], read: Mapping[str, Any]
) -> tuple[list[tuple[str, str]], list[tuple[str, str, Any, Any]]]:
    """Problems (``(path, text)``: items or keys that would be lost) and changes
    (``(path, kind, original, value)``: keys whose text changed) between the arguments
    ``sent`` and the arguments ``read`` (argument name -> value)."""
    problems: list[tuple[str, str]] = []
    changes: list[tuple[str, str, Any, Any]] = []
    stack: list[tuple[Any, Any, str]] = [
        (value, read[name], name) for name, value in sent.items() if name in read
    ]
    while stack:
        before, after, where = stack.pop()
        if isinstance(before, list) and isinstance(after, (Set, frozenset)):
            if repeated_items(before):
                problems.append((where, unique_items_problem(before)))
        elif isinstance(before, list) and isinstance(after, (list, tuple)):
            stack.extend(
                (b, a, join_path(where, i))
                for i, (b, a) in enumerate(zip(before, after, strict=False))
            )
        elif isinstance(before, dict) and isinstance(after, Mapping):
            _compare_keys(before, after, where, problems, changes, stack)
        elif isinstance(before, dict) and isinstance(after, BaseModel):
            _compare_fields(before, after, where, changes, stack)
    return problems, changes


def _compare_fields(
    before: dict[str, Any],
    after: BaseModel,
    where: str,
    changes: list[tuple[str, str, Any, Any]],
    stack: list[tuple[Any, Any, str]],
) -> None:
    """A pydantic model ignores names it has no field for (its default): each is a change."""
    by_name: dict[str, str] = {}
    for field_name, field in type(after).model_fields.items():
        by_name[field_name] = field_name
        for alias in (field.alias, field.validation_alias):
            if isinstance(alias, str):
                by_name[alias] = field_name
    model = type(after).__name__
    for key, value in before.items():
        known = by_name.get(key)
        if known is None:
            kind = f"dropped: {model} has no field of that name"
            changes.append((join_path(where, key), kind, value, "(dropped)"))
        else:
            stack.append((value, getattr(after, known), join_path(where, key)))


def _compare_keys(
    before: dict[str, Any],
    after: Mapping[Any, Any],
    where: str,
    problems: list[tuple[str, str]],
    changes: list[tuple[str, str, Any, Any]],
    stack: list[tuple[Any, Any, str]],
) -> None:
    if len(after) < len(before):
        read_keys = list(after)
        unmatched = [k for k in before if not any(_same_key(k, r) for r in read_keys)]
        shown = ", ".join(short_value(k) for k in unmatched[:5])
        problems.append((where, f"keys {shown} repeat a key once read; send each key once"))
        return
    for text, value in before.items():
        if text in after:
            stack.append((value, after[text], join_path(where, text)))
    rest_sent = [t for t in before if t not in after]
    rest_read = [k for k in after if not (isinstance(k, str) and k in before)]
    if len(rest_sent) != len(rest_read):
        return
    # pydantic keeps the order of the keys, so the n-th key changed is the n-th key read
    for text, key in zip(rest_sent, rest_read, strict=True):
        if not _same_key(text, key):
            changes.append((join_path(where, text), "key text read as a value", text, key))
        stack.append((before[text], after[key], join_path(where, text)))


def loads_reporting_repeated_keys(text: str) -> tuple[Any, list[tuple[str, Any, Any]]]:
    """``json.loads(text)`` and, for each object key given more than once,
    ``(key, first value, kept value)`` (the last value is kept, as JSON parsers do)."""
    repeated: list[tuple[str, Any, Any]] = []

    def pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            first: dict[str, Any] = {}
            for key, value in pairs:
                first.setdefault(key, value)
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen and key not in {r[0] for r in repeated}:
                    repeated.append((key, first[key], out[key]))
                seen.add(key)
        return out

    return json.loads(text, object_pairs_hook=pairs_to_dict), repeated
