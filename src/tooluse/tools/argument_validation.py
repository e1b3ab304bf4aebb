"""Validation and safe coercion of the arguments a model sends to a tool.

One :class:`ArgumentValidator` is built per tool (lazily, then cached) and reused for every
call. Validation runs in three steps:

1. the arguments are read (dict, JSON text, ``""``/``null``, double-encoded JSON);
2. a strict fast path validates them as they are;
3. only if that fails, safe coercions guided by the JSON Schema are applied and reported
   (``"5"`` -> 5, ``"true"`` -> True, scalar -> one-item list, JSON text -> object/array,
   enum case, ``null`` for an optional argument -> its default) and validation runs again.

Failures raise :class:`ToolArgumentError` whose ``model_message`` tells the model what to fix:
the JSON path, expected vs received, allowed values and "did you mean" for unknown names.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import SchemaValidator

from tooluse.errors import ToolArgumentError, ToolDefinitionError
from tooluse.tools.json_schema_compile import compile_json_schema
from tooluse.tools.json_schema_rewrite import resolve_ref

__all__ = [
    "ArgumentValidator",
    "Coercion",
    "ValidationReport",
    "coerce_to_schema",
    "describe_expected",
    "parse_arguments",
]

_MAX_LISTED_ERRORS = 8
_MAX_VALUE_CHARS = 60


@dataclass(frozen=True, kw_only=True)
class Coercion:
    """One change made to the model's arguments before they validated."""

    path: str
    kind: str
    original: Any
    value: Any

    def __str__(self) -> str:
        where = self.path or "arguments"
        return f"{where}: {self.kind} ({_short(self.original)} -> {_short(self.value)})"


@dataclass(frozen=True, kw_only=True)
class ValidationReport:
    """Validated arguments plus the coercions applied to get them."""

    arguments: dict[str, Any]
    coercions: tuple[Coercion, ...] = ()


def _short(value: Any) -> str:
    text = (
        json.dumps(value, ensure_ascii=False, default=repr)
        if not isinstance(value, str)
        else repr(value)
    )
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def _json_type(value: Any) -> str:
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


def parse_arguments(raw: Any, tool_name: str = "") -> tuple[dict[str, Any], list[Coercion]]:
    """The argument object from what the model sent; raises :class:`ToolArgumentError`."""
    coercions: list[Coercion] = []
    if raw is None:
        return {}, coercions
    if isinstance(raw, Mapping):
        return dict(raw), coercions
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        raise _argument_error(
            tool_name, [("", f"arguments must be a JSON object, got {_json_type(raw)}")]
        )
    text = raw.strip()
    if text in ("", "null", "{}"):
        return {}, coercions
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _argument_error(
            tool_name,
            [("", f"arguments are not valid JSON ({exc.msg} at character {exc.pos})")],
        ) from None
    if isinstance(value, str):  # double-encoded: a JSON string holding the JSON object
        try:
            inner = json.loads(value)
        except json.JSONDecodeError:
            inner = None
        if isinstance(inner, dict):
            coercions.append(
                Coercion(path="", kind="decoded double-encoded JSON", original=value, value=inner)
            )
            return inner, coercions
    if value is None:
        return {}, coercions
    if not isinstance(value, dict):
        raise _argument_error(
            tool_name, [("", f"arguments must be a JSON object, got {_json_type(value)}")]
        )
    return value, coercions


# ---------------------------------------------------------------------------------------------
# Schema-guided safe coercion (slow path only)


def _schema_types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return set(t)
    if "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    if "const" in schema:
        return {_json_type(schema["const"])}
    if "properties" in schema:
        return {"object"}
    return set()


def _deref(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        target = resolve_ref(root, schema["$ref"])
        if target is None:
            break
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema if isinstance(schema, dict) else {}


def _branches(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out: list[dict[str, Any]] = []
            for b in schema[key]:
                out.extend(_branches(_deref(b, root), root))
            return out
    return [schema]


def _allows_null(schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return any(
        "null" in _schema_types(b) or b.get("nullable") is True or b == {}
        for b in _branches(schema, root)
    )


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _scalar_coercion(value: str, types: set[str]) -> tuple[Any, str] | None:
    text = value.strip()
    if "integer" in types:
        try:
            return int(text), "string to integer"
        except ValueError:
            pass
    if "number" in types:
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is not None and number == number and abs(number) != float("inf"):
            if number.is_integer() and "." not in text and "e" not in text.lower():
                return int(number), "string to number"
            return number, "string to number"
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true", "string to boolean"
    if "null" in types and text.lower() in ("null", "none"):
        return None, "string to null"
    return None


def coerce_to_schema(
    value: Any,
    schema: dict[str, Any],
    root: dict[str, Any],
    coercions: list[Coercion],
    path: str = "",
) -> Any:
    """``value`` with the safe coercions the schema calls for; each is appended to ``coercions``."""
    schema = _deref(schema, root)
    branches = _branches(schema, root)
    if len(branches) > 1:
        # pick the branch whose type already matches; else the first one a coercion fits
        for b in branches:
            if _json_type(value) in _schema_types(b) or (
                isinstance(value, int)
                and not isinstance(value, bool)
                and "number" in _schema_types(b)
            ):
                return coerce_to_schema(value, b, root, coercions, path)
        for b in branches:
            trial: list[Coercion] = []
            out = coerce_to_schema(value, b, root, trial, path)
            if trial:
                coercions.extend(trial)
                return out
        return value
    types = _schema_types(schema)
    original = value
    kind = ""
    if isinstance(value, str) and types and "string" not in types:
        text = value.strip()
        if text[:1] in "[{" and types & {"array", "object"}:
            try:
                decoded = json.loads(text)
            except json.JSONDecodeError:
                decoded = None
            if _json_type(decoded) in types:
                value, kind = decoded, "decoded JSON text"
        if not kind:
            scalar = _scalar_coercion(value, types)
            if scalar is not None:
                value, kind = scalar
    elif (
        isinstance(value, float)
        and "integer" in types
        and "number" not in types
        and value.is_integer()
    ):
        value, kind = int(value), "whole number to integer"
    if (
        "array" in types
        and not isinstance(value, (list, tuple))
        and value is not None
        and not kind
        and not (isinstance(value, str) and "string" in types)
    ):
        value, kind = [value], "wrapped a single value in a list"
    enum = schema.get("enum")
    if isinstance(enum, list) and isinstance(value, str) and value not in enum:
        folded = [e for e in enum if isinstance(e, str) and e.casefold() == value.casefold()]
        if len(folded) == 1:
            value, kind = folded[0], "matched enum value ignoring case"
    if kind:
        coercions.append(Coercion(path=path, kind=kind, original=original, value=value))
    if isinstance(value, dict) and (types & {"object"} or "properties" in schema):
        props = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        extra = schema.get("additionalProperties")
        result: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key)
            if sub is not None:
                sub = _deref(sub, root)
                if item is None and key not in required and not _allows_null(sub, root):
                    # strict exports make optional arguments nullable: null means "use default"
                    coercions.append(
                        Coercion(
                            path=_path(path, key),
                            kind="null means default",
                            original=None,
                            value="(default)",
                        )
                    )
                    continue
                result[key] = coerce_to_schema(item, sub, root, coercions, _path(path, key))
            elif isinstance(extra, dict):
                result[key] = coerce_to_schema(item, extra, root, coercions, _path(path, key))
            else:
                result[key] = item
        return result
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return [
                coerce_to_schema(v, items, root, coercions, _path(path, i))
                for i, v in enumerate(value)
            ]
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [
                coerce_to_schema(v, prefix[i], root, coercions, _path(path, i))
                if i < len(prefix) and isinstance(prefix[i], dict)
                else v
                for i, v in enumerate(value)
            ]
    return value


# ---------------------------------------------------------------------------------------------
# Messages for the model


def describe_expected(schema: dict[str, Any], root: dict[str, Any] | None = None) -> str:
    """A short human description of what ``schema`` accepts (``"integer or null"``)."""
    root = root if root is not None else schema
    parts: list[str] = []
    for b in _branches(_deref(schema, root), root):
        if "enum" in b:
            parts.append("one of " + ", ".join(_short(v) for v in b["enum"]))
        elif "const" in b:
            parts.append(_short(b["const"]))
        else:
            types = sorted(_schema_types(b))
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
    node: dict[str, Any] | None = _deref(schema, root)
    for item in loc:
        if node is None:
            return None
        found = None
        for b in _branches(node, root):
            if isinstance(item, int) and isinstance(b.get("items"), dict):
                found = _deref(b["items"], root)
            elif isinstance(item, int) and isinstance(b.get("prefixItems"), list):
                prefix = b["prefixItems"]
                found = _deref(prefix[item], root) if item < len(prefix) else None
            elif isinstance(item, str) and item in (b.get("properties") or {}):
                found = _deref(b["properties"][item], root)
            if found is not None:
                break
        node = found
    return node


def _names_at(schema: dict[str, Any], root: dict[str, Any], loc: list[str | int]) -> list[str]:
    node = _schema_at(schema, root, loc)
    if node is None:
        return []
    names: list[str] = []
    for b in _branches(node, root):
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


def _argument_error(tool_name: str, problems: list[tuple[str, str]]) -> ToolArgumentError:
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
        out = _path(out, item)
    return out


def _pydantic_problems(
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
            text = f"expected {expected}, got {_json_type(value)} {_short(value)}"
        else:
            text = f"{err['msg'][:1].lower()}{err['msg'][1:]}, got {_short(value)}"
        problems.setdefault(path, text)  # union branches repeat a path: keep the first
    return list(problems.items())


def _jsonschema_problems(errors: list[Any], schema: dict[str, Any]) -> list[tuple[str, str]]:
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
            text = f"expected {describe_expected(err.schema, schema)}, got {_json_type(err.instance)} {_short(err.instance)}"
        else:
            text = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        problems.setdefault(_format_path(loc), text)
    return list(problems.items())


# ---------------------------------------------------------------------------------------------


class ArgumentValidator:
    """Validates one tool's arguments; build once per tool, call :meth:`validate` per call.

    With ``model`` (callable and pydantic-model tools) the signature types are the truth;
    without it the JSON Schema is, checked by a compiled validator when the schema is in the
    common subset and by ``jsonschema`` otherwise.
    """

    def __init__(
        self,
        *,
        tool_name: str,
        schema: dict[str, Any],
        model: type[BaseModel] | None = None,
        field_names: tuple[tuple[str, str], ...] | None = None,
        forbid_extra: bool = False,
    ) -> None:
        self.tool_name = tool_name
        self.schema = schema
        self._model = model
        self._field_names = field_names
        self._forbid_extra = forbid_extra
        self._known = frozenset((schema.get("properties") or {}).keys())
        self._fast: SchemaValidator | None = None
        self._reference: Any = None
        if model is None:
            self._fast = compile_json_schema(schema)
            if self._fast is None:
                self._reference = self._reference_validator()

    def _reference_validator(self) -> Any:
        import jsonschema

        cls = jsonschema.validators.validator_for(
            self.schema, default=jsonschema.Draft202012Validator
        )
        try:
            cls.check_schema(self.schema)
        except jsonschema.SchemaError as exc:
            raise ToolDefinitionError(
                f"tool {self.tool_name!r}: invalid JSON Schema: {exc.message}"
            ) from exc
        return cls(self.schema)

    def _from_model(self, instance: BaseModel) -> dict[str, Any]:
        values = instance.__dict__
        if self._field_names is None:
            return dict(values)
        return {name: values[internal] for internal, name in self._field_names}

    def _unknown_names(self, data: dict[str, Any]) -> list[tuple[str, str]]:
        names = sorted(self._known)
        return [
            (k, "unknown argument" + did_you_mean(k, names)) for k in data if k not in self._known
        ]

    def validate(self, arguments: Any) -> ValidationReport:
        """Validate (and safely coerce) ``arguments``; raises :class:`ToolArgumentError`."""
        data, coercions = parse_arguments(arguments, self.tool_name)
        if self._model is not None:
            return self._validate_model(data, coercions)
        if self._fast is not None:
            try:
                return ValidationReport(
                    arguments=self._fast.validate_python(data), coercions=tuple(coercions)
                )
            except ValidationError:
                pass
        elif not any(True for _ in self._reference.iter_errors(data)):
            return ValidationReport(arguments=data, coercions=tuple(coercions))
        coerced = coerce_to_schema(data, self.schema, self.schema, coercions)
        if self._fast is not None:
            try:
                out = self._fast.validate_python(coerced)
                return ValidationReport(arguments=out, coercions=tuple(coercions))
            except ValidationError:
                pass  # confirm with the reference validator, which also words the errors
        reference = self._reference or self._reference_validator()
        self._reference = reference
        errors = sorted(reference.iter_errors(coerced), key=lambda e: list(e.absolute_path))
        if not errors:
            return ValidationReport(arguments=coerced, coercions=tuple(coercions))
        problems = _jsonschema_problems(errors, self.schema)
        if not any("unknown argument" in t for _, t in problems):
            problems += [p for p in self._unknown_names(coerced) if p[0] not in dict(problems)]
        raise _argument_error(self.tool_name, problems)

    def _validate_model(self, data: dict[str, Any], coercions: list[Coercion]) -> ValidationReport:
        assert self._model is not None
        validator = self._model.__pydantic_validator__
        if self._forbid_extra:
            unknown = self._unknown_names(data)
            if unknown:
                raise _argument_error(self.tool_name, unknown)
        try:
            instance = validator.validate_python(data, strict=True)
            return ValidationReport(
                arguments=self._from_model(instance), coercions=tuple(coercions)
            )
        except ValidationError:
            pass
        coerced = coerce_to_schema(data, self.schema, self.schema, coercions)
        try:
            instance = validator.validate_python(coerced)
        except ValidationError as exc:
            raise _argument_error(
                self.tool_name, _pydantic_problems(exc, coerced, self.schema)
            ) from None
        return ValidationReport(arguments=self._from_model(instance), coercions=tuple(coercions))
