"""What the model reads when its tool arguments are wrong, and the schema reading behind it.

:func:`argument_error` builds the :class:`ToolArgumentError` whose ``model_message`` lists each
problem with its JSON path: missing or unknown arguments ("did you mean ..."), expected vs
received types and allowed enum values. :func:`pydantic_problems` and
:func:`jsonschema_problems` turn either validator's errors into those problems. The small
schema helpers (``$ref`` resolution, union branches, JSON type names) are shared with the
coercion step in :mod:`tooluse.tools.argument_validation`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tooluse.errors import ToolArgumentError
from tooluse.tools.json_schema_rewrite import resolve_ref

__all__ = [
    "argument_error",
    "describe_expected",
    "did_you_mean",
    "jsonschema_problems",
    "pydantic_problems",
]

_MAX_LISTED_ERRORS = 8
_MAX_VALUE_CHARS = 60


def short_value(value: Any) -> str:
    text = (
        json.dumps(value, ensure_ascii=False, default=repr)
        if not isinstance(value, str)
        else repr(value)
    )
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def schema_types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return set(t)
    if "enum" in schema:
        return {json_type_name(v) for v in schema["enum"]}
    if "const" in schema:
        return {json_type_name(schema["const"])}
    if "properties" in schema:
        return {"object"}
    return set()


def deref_schema(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        target = resolve_ref(root, schema["$ref"])
        if target is None:
            break
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema if isinstance(schema, dict) else {}


def schema_branches(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out: list[dict[str, Any]] = []
            for b in schema[key]:
                out.extend(schema_branches(deref_schema(b, root), root))
            return out
    return [schema]


def join_path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def describe_expected(schema: dict[str, Any], root: dict[str, Any] | None = None) -> str:
    """A short human description of what ``schema`` accepts (``"integer or null"``)."""
    root = root if root is not None else schema
    parts: list[str] = []
    for b in schema_branches(deref_schema(schema, root), root):
        if "enum" in b:
            parts.append("one of " + ", ".join(short_value(v) for v in b["enum"]))
        elif "const" in b:
            parts.append(short_value(b["const"]))
        else:
            types = sorted(schema_types(b))
            for t in types:
                if t == "array" and isinstance(b.get("items"), dict):
                    inner = describe_expected(b["items"], root)
                    parts.append(f"array of {inner}")
                else:
                    parts.append(t)
    return " or ".join(dict.fromkeys(parts)) or "any value"


def _schema_at(
    schema: dict[str, Any], root: dict[str, Any], loc: list[str | int]
) -> dict[str, Any] | None:
    node: dict[str, Any] | None = deref_schema(schema, root)
    for item in loc:
        if node is None:
            return None
        found = None
        for b in schema_branches(node, root):
            if isinstance(item, int) and isinstance(b.get("items"), dict):
                found = deref_schema(b["items"], root)
            elif isinstance(item, int) and isinstance(b.get("prefixItems"), list):
                prefix = b["prefixItems"]
                found = deref_schema(prefix[item], root) if item < len(prefix) else None
            elif isinstance(item, str) and item in (b.get("properties") or {}):
                found = deref_schema(b["properties"][item], root)
            if found is not None:
                break
        node = found
    return node


def _names_at(schema: dict[str, Any], root: dict[str, Any], loc: list[str | int]) -> list[str]:
    node = _schema_at(schema, root, loc)
    if node is None:
        return []
    names: list[str] = []
    for b in schema_branches(node, root):
        names.extend((b.get("properties") or {}).keys())
    return names


def did_you_mean(name: str, candidates: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in candidates}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return f"; did you mean {close[0]!r}?" if close else ""


def argument_error(tool_name: str, problems: list[tuple[str, str]]) -> ToolArgumentError:
    lines = [
        f"- {path}: {text}" if path else f"- {text}" for path, text in problems[:_MAX_LISTED_ERRORS]
    ]
    if len(problems) > _MAX_LISTED_ERRORS:
        lines.append(f"- ... and {len(problems) - _MAX_LISTED_ERRORS} more problems")
    head = f"Invalid arguments for tool {tool_name!r}:" if tool_name else "Invalid arguments:"
    model_message = "\n".join([head, *lines, "Call the tool again with corrected arguments."])
    return ToolArgumentError(
        f"{head} " + "; ".join(f"{p}: {t}" if p else t for p, t in problems),
        tool_name=tool_name,
        errors=[{"path": p, "message": t} for p, t in problems],
        model_message=model_message,
    )


_TYPE_ERROR_SUFFIXES = (
    "_type",
    "_parsing",
    "literal_error",
    "enum",
    "is_instance_of",
    "union_tag_invalid",
)


class _Missing:
    pass


def _data_loc(data: Any, loc: tuple[Any, ...]) -> tuple[list[str | int], Any]:
    """The error location as data keys (union branch tags dropped) and the value there."""
    path: list[str | int] = []
    node: Any = data
    for item in loc:
        if (
            isinstance(node, Mapping)
            and isinstance(item, str)
            and item in node
            or isinstance(node, (list, tuple))
            and isinstance(item, int)
            and 0 <= item < len(node)
        ):
            node = node[item]  # type: ignore[index]
            path.append(item)
        elif (
            isinstance(node, Mapping) and isinstance(item, (str, int)) and len(path) == len(loc) - 1
        ):
            path.append(item)  # a missing or extra key at the end
            node = _Missing()
    return path, node


def _format_path(loc: list[str | int]) -> str:
    out = ""
    for item in loc:
        out = join_path(out, item)
    return out


def pydantic_problems(
    exc: ValidationError, data: Any, schema: dict[str, Any]
) -> list[tuple[str, str]]:
    problems: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        loc, value = _data_loc(data, tuple(err["loc"]))
        path = _format_path(loc)
        kind = err["type"]
        if kind == "missing":
            text = "missing required argument"
        elif kind == "extra_forbidden":
            name = str(loc[-1]) if loc else ""
            text = "unknown argument" + did_you_mean(name, _names_at(schema, schema, loc[:-1]))
        elif kind.endswith(_TYPE_ERROR_SUFFIXES) or kind.startswith("union"):
            sub = _schema_at(schema, schema, loc)
            expected = describe_expected(sub, schema) if sub is not None else err["msg"]
            text = f"expected {expected}, got {json_type_name(value)} {short_value(value)}"
        else:
            text = f"{err['msg'][:1].lower()}{err['msg'][1:]}, got {short_value(value)}"
        problems.setdefault(path, text)  # union branches repeat a path: keep the first
    return list(problems.items())


def jsonschema_problems(errors: list[Any], schema: dict[str, Any]) -> list[tuple[str, str]]:
    problems: dict[str, str] = {}
    for err in errors:
        loc = list(err.absolute_path)
        if err.validator == "required":
            props = err.validator_value
            present = set(err.instance) if isinstance(err.instance, dict) else set()
            for name in props:
                if name not in present:
                    problems.setdefault(_format_path([*loc, name]), "missing required argument")
            continue
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = list((err.schema.get("properties") or {}).keys())
            for name in err.instance:
                if name not in known:
                    problems.setdefault(
                        _format_path([*loc, name]), "unknown argument" + did_you_mean(name, known)
                    )
            continue
        if err.validator in ("type", "enum", "const", "anyOf", "oneOf"):
            text = f"expected {describe_expected(err.schema, schema)}, got {json_type_name(err.instance)} {short_value(err.instance)}"
        else:
            text = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        problems.setdefault(_format_path(loc), text)
    return list(problems.items())
