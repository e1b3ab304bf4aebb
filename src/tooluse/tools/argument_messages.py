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
_MAX_LISTED_VALUES = 12  # enum values named in one message
_MAX_PROBLEM_CHARS = 400
_MAX_MESSAGE_CHARS = 4000

# What the model reads for a string format: the form and one example.
FORMAT_HINTS = {
    "date-time": 'a date-time string (ISO 8601, e.g. "2024-07-14T09:30:00Z")',
    "date": 'a date string (YYYY-MM-DD, e.g. "2024-07-14")',
    "time": 'a time string (HH:MM:SS, e.g. "09:30:00")',
    "duration": 'a duration string (ISO 8601, e.g. "PT1H30M")',
    "uuid": 'a UUID string (e.g. "123e4567-e89b-12d3-a456-426614174000")',
    "email": 'an email address string (e.g. "ada@example.com")',
    "uri": 'a URI string (e.g. "https://example.com/page")',
}


def json_text(value: Any) -> str:
    """``value`` as the JSON text a model reads (never a Python repr)."""
    if isinstance(value, float) and value != value:
        return "NaN"
    try:
        return json.dumps(value, ensure_ascii=False, default=_not_json)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(f"<{type(value).__name__}>")


def _not_json(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return f"<{type(value).__name__}>"


def repeated_items(items: list[Any]) -> list[Any]:
    """The items of ``items`` that appear more than once (JSON equality), each once."""
    counts: dict[str, int] = {}
    repeated: list[Any] = []
    for item in items:
        try:
            key = json.dumps(item, sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            key = repr(item)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] == 2:
            repeated.append(item)
    return repeated


def unique_items_problem(items: list[Any]) -> str:
    """What to tell the model about an array whose items must be unique."""
    shown = ", ".join(short_value(v) for v in repeated_items(items)[:5])
    return f"items must be unique; repeated: {shown}"


def short_value(value: Any) -> str:
    text = json_text(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def received(value: Any) -> str:
    """``got <type> <value>`` in JSON words (``got null``, not ``got null null``)."""
    if value is None:
        return "got null"
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f"got {short_value(value)} (not a JSON number)"
    return f"got {json_type_name(value)} {short_value(value)}"


def listed_values(values: list[Any]) -> str:
    """Enum values for a message, at most a dozen of them."""
    shown = ", ".join(short_value(v) for v in values[:_MAX_LISTED_VALUES])
    if len(values) > _MAX_LISTED_VALUES:
        shown += f", ... ({len(values)} values in all)"
    return shown


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
    branches = schema_branches(deref_schema(schema, root), root)
    objects = sum(1 for b in branches if "object" in schema_types(b))
    for b in branches:
        if "enum" in b and isinstance(b["enum"], list):
            parts.append("one of " + listed_values(b["enum"]))
        elif "const" in b:
            parts.append(short_value(b["const"]))
        else:
            types = sorted(schema_types(b))
            for t in types:
                if t == "array" and isinstance(b.get("items"), dict):
                    inner = describe_expected(b["items"], root)
                    parts.append(f"array of {inner}")
                elif t == "array" and isinstance(b.get("prefixItems"), list):
                    n = len(b["prefixItems"])
                    parts.append(
                        f"array of exactly {n} items"
                        if b.get("items") is False or b.get("maxItems") == n
                        else f"array of {n} items"
                    )
                elif t == "object" and objects > 1 and b.get("properties"):
                    names = list(b.get("required") or b["properties"])[:6]
                    parts.append("object with " + ", ".join(names))
                elif t == "string" and b.get("format") in FORMAT_HINTS:
                    parts.append(FORMAT_HINTS[b["format"]])
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
    return f"; did you mean {json_text(close[0])}?" if close else ""


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def argument_error(tool_name: str, problems: list[tuple[str, str]]) -> ToolArgumentError:
    problems = [(_bounded(p, 200), _bounded(t, _MAX_PROBLEM_CHARS)) for p, t in problems]
    lines = [
        f"- {path}: {text}" if path else f"- {text}" for path, text in problems[:_MAX_LISTED_ERRORS]
    ]
    if len(problems) > _MAX_LISTED_ERRORS:
        lines.append(f"- ... and {len(problems) - _MAX_LISTED_ERRORS} more problems")
    head = (
        f"Invalid arguments for tool {json_text(tool_name)}:" if tool_name else "Invalid arguments:"
    )
    model_message = "\n".join([head, *lines, "Call the tool again with corrected arguments."])
    summary = "; ".join(f"{p}: {t}" if p else t for p, t in problems[:_MAX_LISTED_ERRORS])
    return ToolArgumentError(
        _bounded(f"{head} {summary}", _MAX_MESSAGE_CHARS),
        tool_name=tool_name,
        errors=[{"path": p, "message": t} for p, t in problems],
        model_message=_bounded(model_message, _MAX_MESSAGE_CHARS),
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
            isinstance(node, (Mapping, list, tuple))
            and isinstance(item, (str, int))
            and len(path) == len(loc) - 1
        ):
            path.append(item)  # a missing or extra key (or a missing tuple item) at the end
            node = _Missing()
    return path, node


def _format_path(loc: list[str | int]) -> str:
    out = ""
    for item in loc:
        out = join_path(out, item)
    return out


def _non_null(branches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in branches if schema_types(b) != {"null"}]


def _type_fits(value: Any, branch: dict[str, Any]) -> bool:
    kind = json_type_name(value)
    types = schema_types(branch)
    if not types:
        return "enum" not in branch and "const" not in branch
    return kind in types or (kind == "integer" and "number" in types)


def closest_branch(
    value: Any, branches: list[dict[str, Any]], root: dict[str, Any]
) -> dict[str, Any] | None:
    """The union branch ``value`` was most likely meant for, or ``None`` if no type fits."""
    fitting = [b for b in branches if _type_fits(value, b)]
    if len(fitting) <= 1 or not isinstance(value, Mapping):
        return fitting[0] if fitting else None

    def score(branch: dict[str, Any]) -> tuple[int, int]:
        props = branch.get("properties") or {}
        required = set(branch.get("required") or ())
        known = sum(1 for k in value if k in props)
        return known - sum(1 for k in value if k not in props), -len(required - set(value))

    return max(fitting, key=score)


def reference_validator(schema: dict[str, Any]) -> Any:
    """A ``jsonschema`` validator for ``schema``: linear-time patterns, checked date formats."""
    import jsonschema

    from tooluse.tools.json_schema_compile import FORMAT_CHECKS
    from tooluse.tools.schema_safety import compile_pattern

    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls = _EXTENDED.get(base)
    if cls is None:

        def pattern(validator: Any, patrn: str, instance: Any, _schema: Any) -> Any:
            if validator.is_type(instance, "string") and not compile_pattern(patrn)(instance):
                yield jsonschema.ValidationError(
                    f"{short_value(instance)} does not match {patrn!r}"
                )

        def pattern_properties(validator: Any, value: Any, instance: Any, _schema: Any) -> Any:
            if not validator.is_type(instance, "object"):
                return
            for patrn, sub in value.items():
                search = compile_pattern(patrn)
                for key, item in instance.items():
                    if search(key):
                        yield from validator.descend(item, sub, path=key, schema_path=patrn)

        cls = jsonschema.validators.extend(
            base, {"pattern": pattern, "patternProperties": pattern_properties}
        )
        _EXTENDED[base] = cls
    checker = jsonschema.FormatChecker(formats=())
    for name, check in FORMAT_CHECKS.items():
        checker.checks(name)(check)
    return cls(schema, format_checker=checker)


_EXTENDED: dict[Any, Any] = {}


def _union_problems(
    value: Any, node: dict[str, Any], root: dict[str, Any], loc: list[str | int]
) -> list[tuple[str, str]]:
    """Problems for a value that fits no branch of a union: the closest branch's, or the list."""
    path = _format_path(loc)
    fallback = [(path, f"expected {describe_expected(node, root)}, {received(value)}")]
    branch = closest_branch(value, _non_null(schema_branches(node, root)), root)
    if branch is None:
        return fallback
    try:
        validator = reference_validator(root).evolve(schema=branch)
        errors = sorted(validator.iter_errors(value), key=lambda e: str(list(e.path)))
    except Exception:  # an unreadable branch: the plain description still helps the model
        return fallback
    out = []
    for sub_path, text in jsonschema_problems(errors, root):
        if path and sub_path:
            sub_path = path + sub_path if sub_path.startswith("[") else f"{path}.{sub_path}"
        out.append((sub_path or path, text))
    return out or fallback


def _union_point(schema: dict[str, Any], loc: list[str | int]) -> list[str | int] | None:
    """The shallowest prefix of ``loc`` whose schema is a union of several non-null branches."""
    for n in range(len(loc) + 1):
        node = _schema_at(schema, schema, loc[:n])
        if node is None:
            return None
        if len(_non_null(schema_branches(node, schema))) > 1:
            return loc[:n]
    return None


def _value_at(data: Any, loc: list[str | int]) -> Any:
    for item in loc:
        try:
            data = data[item]
        except (KeyError, IndexError, TypeError):
            return _Missing()
    return data


def pydantic_problems(
    exc: ValidationError, data: Any, schema: dict[str, Any]
) -> list[tuple[str, str]]:
    problems: dict[str, str] = {}
    unions: dict[str, list[tuple[str, str]]] = {}
    for err in exc.errors(include_url=False):
        loc, value = _data_loc(data, tuple(err["loc"]))
        point = _union_point(schema, loc)
        if point is not None:
            key = _format_path(point)
            if key not in unions:
                unions[key] = _union_problems(
                    _value_at(data, point), _schema_at(schema, schema, point) or {}, schema, point
                )
                for p, t in unions[key]:
                    problems.setdefault(p, t)
            continue
        path = _format_path(loc)
        kind = err["type"]
        if kind == "missing" and loc and isinstance(loc[-1], int):
            parent = _value_at(data, loc[:-1])
            node = _schema_at(schema, schema, loc[:-1]) or {}
            size = len(node.get("prefixItems") or ()) or "more"
            have = len(parent) if isinstance(parent, (list, tuple)) else 0
            path = _format_path(loc[:-1])
            text = f"array too short: expected {size} items, got {have}"
        elif kind == "missing":
            text = "missing required argument"
        elif kind == "extra_forbidden":
            name = str(loc[-1]) if loc else ""
            text = "unknown argument" + did_you_mean(name, _names_at(schema, schema, loc[:-1]))
        elif kind == "finite_number":
            text = f"expected a finite number, {received(value)}"
        elif kind.endswith(_TYPE_ERROR_SUFFIXES) or kind.startswith("union"):
            sub = _schema_at(schema, schema, loc)
            expected = describe_expected(sub, schema) if sub is not None else err["msg"]
            text = f"expected {expected}, {received(value)}"
        elif kind == "too_long" and isinstance(value, (list, tuple)):
            text = f"{err['msg'][:1].lower()}{err['msg'][1:]}"
        else:
            text = f"{err['msg'][:1].lower()}{err['msg'][1:]}, {received(value)}"
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
        if err.validator in ("anyOf", "oneOf") and isinstance(err.validator_value, list):
            node = {err.validator: err.validator_value}
            branches = _non_null(schema_branches(node, schema))
            if len(branches) > 1 or closest_branch(err.instance, branches, schema) is not None:
                for p, t in _union_problems(err.instance, node, schema, loc):
                    problems.setdefault(p, t)
                continue
        if err.validator in ("type", "enum", "const", "anyOf", "oneOf", "format"):
            text = f"expected {describe_expected(err.schema, schema)}, {received(err.instance)}"
        elif err.validator in ("minItems", "maxItems") and isinstance(err.instance, list):
            word = "too short" if err.validator == "minItems" else "too long"
            bound = "at least" if err.validator == "minItems" else "at most"
            text = f"array {word}: expected {bound} {err.validator_value} items, got {len(err.instance)}"
        elif err.validator == "uniqueItems" and isinstance(err.instance, list):
            text = unique_items_problem(err.instance)
        else:
            text = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        problems.setdefault(_format_path(loc), text)
    return list(problems.items())
