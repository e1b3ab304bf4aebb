"""Validation and safe coercion of the arguments a model sends to a tool.

One :class:`ArgumentValidator` is built per tool (lazily, then cached) and reused for every
call. Validation runs in three steps:

1. the arguments are read (dict, JSON text, ``""``/``null``, double-encoded JSON);
2. a strict fast path validates them as they are;
3. only if that fails, the documented lossless coercions guided by the JSON Schema are applied
   and reported (``"5"`` -> 5, ``"2.5"`` -> 2.5, ``"true"`` -> True, ``3.0`` -> 3 for an
   integer, scalar -> one-item list, JSON text -> object/array, enum case when exactly one value
   matches, ``null`` for an optional argument -> its default) and validation runs again,
   strictly: nothing else is converted (``true`` is not 1, ``"yes"``/``"1"``/``1`` are not
   booleans, ``"3.0"`` is not the integer 3, a number is not a date, ``"NaN"`` is not a number).

Nothing changes without a word: a JSON key given twice keeps its last value and is reported,
and what reading into the function's types would lose (repeated items of a ``set``, keys that
become one key) is an argument error (:mod:`tooluse.tools.argument_changes`).

Both kinds of tool follow the same rules: a function tool's types are checked as JSON input in
pydantic's strict mode, a raw-schema tool's schema by a compiled validator or ``jsonschema``
(date/time/UUID formats checked the way the function types parse them). Hostile input
(deep nesting, huge integers, NaN, non-string keys) is refused before either runs
(:mod:`tooluse.tools.schema_safety`); the only error ever raised is ``ToolArgumentError``.

Failures raise :class:`ToolArgumentError` whose ``model_message`` tells the model what to fix:
the JSON path, expected vs received, allowed values and "did you mean" for unknown names
(worded in :mod:`tooluse.tools.argument_messages`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import SchemaValidator

from tooluse.errors import ToolDefinitionError, ToolUseError
from tooluse.tools.argument_changes import loads_reporting_repeated_keys, lost_members
from tooluse.tools.argument_messages import (
    argument_error,
    deref_schema,
    describe_expected,
    did_you_mean,
    join_path,
    json_type_name,
    jsonschema_problems,
    pydantic_problems,
    reference_validator,
    schema_branches,
    schema_types,
    short_value,
)
from tooluse.tools.json_schema_compile import compile_json_schema
from tooluse.tools.json_schema_rewrite import honour_nullable
from tooluse.tools.schema_safety import ArgumentRefused, screen_arguments

__all__ = [
    "ArgumentValidator",
    "Coercion",
    "ValidationReport",
    "coerce_to_schema",
    "describe_expected",
    "parse_arguments",
]


@dataclass(frozen=True, kw_only=True)
class Coercion:
    """One change made to the model's arguments before they validated."""

    path: str
    kind: str
    original: Any
    value: Any

    def __str__(self) -> str:
        where = self.path or "arguments"
        return f"{where}: {self.kind} ({short_value(self.original)} -> {short_value(self.value)})"


@dataclass(frozen=True, kw_only=True)
class ValidationReport:
    """Validated arguments plus the coercions applied to get them."""

    arguments: dict[str, Any]
    coercions: tuple[Coercion, ...] = ()


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
        raise argument_error(
            tool_name, [("", f"arguments must be a JSON object, got {json_type_name(raw)}")]
        )
    text = raw.strip()
    if text in ("", "null", "{}"):
        return {}, coercions
    value = _loads(text, tool_name, coercions)
    if isinstance(value, str):  # double-encoded: a JSON string holding the JSON object
        try:
            inner = json.loads(value)
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, dict):
            coercions.append(
                Coercion(path="", kind="decoded double-encoded JSON", original=value, value=inner)
            )
            return inner, coercions
    if value is None:
        return {}, coercions
    if not isinstance(value, dict):
        raise argument_error(
            tool_name, [("", f"arguments must be a JSON object, got {json_type_name(value)}")]
        )
    return value, coercions


def _loads(text: str, tool_name: str, coercions: list[Coercion]) -> Any:
    try:
        value, repeated = loads_reporting_repeated_keys(text)
    except json.JSONDecodeError as exc:
        raise argument_error(
            tool_name,
            [("", f"arguments are not valid JSON ({exc.msg} at character {exc.pos})")],
        ) from None
    except ValueError:  # an integer longer than Python will convert
        raise argument_error(
            tool_name, [("", "arguments hold an integer too large to read")]
        ) from None
    except RecursionError:
        raise argument_error(tool_name, [("", "arguments are nested too deeply")]) from None
    coercions.extend(
        Coercion(path=key, kind="repeated key, the last value kept", original=first, value=kept)
        for key, first, kept in repeated
    )
    return value


# ---------------------------------------------------------------------------------------------
# Schema-guided safe coercion (slow path only)

# Only numbers written exactly as JSON writes them: no "5_000", " +5", "0x10", "٣", "NaN".
_JSON_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _allows_null(schema: dict[str, Any], root: dict[str, Any]) -> bool:
    return any(
        "null" in schema_types(b) or b.get("nullable") is True or b == {}
        for b in schema_branches(schema, root)
    )


def _scalar_coercion(value: str, types: set[str]) -> tuple[Any, str] | None:
    text = value.strip()
    if "integer" in types and _JSON_INTEGER.fullmatch(text) and len(text) <= 300:
        return int(text), "string to integer"
    if "number" in types and _JSON_NUMBER.fullmatch(text) and len(text) <= 300:
        if _JSON_INTEGER.fullmatch(text):
            return int(text), "string to number"
        number = float(text)
        if number == number and abs(number) != float("inf"):
            return number, "string to number"
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true", "string to boolean"
    if "null" in types and text == "null":
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
    schema = deref_schema(schema, root)
    branches = schema_branches(schema, root)
    if len(branches) > 1:
        return _coerce_to_branch(value, branches, root, coercions, path)
    types = schema_types(schema)
    original = value
    value, kind = _coerce_node(value, schema, types)
    if kind:
        coercions.append(Coercion(path=path, kind=kind, original=original, value=value))
    if isinstance(value, dict) and (types & {"object"} or "properties" in schema):
        return _coerce_members(value, schema, root, coercions, path)
    if isinstance(value, list):
        return _coerce_items(value, schema, root, coercions, path)
    return value


def _coerce_to_branch(
    value: Any,
    branches: list[dict[str, Any]],
    root: dict[str, Any],
    coercions: list[Coercion],
    path: str,
) -> Any:
    """Pick the branch whose type already matches; else the first one a coercion fits."""
    for b in branches:
        if json_type_name(value) in schema_types(b) or (
            isinstance(value, int) and not isinstance(value, bool) and "number" in schema_types(b)
        ):
            return coerce_to_schema(value, b, root, coercions, path)
    for b in branches:
        trial: list[Coercion] = []
        out = coerce_to_schema(value, b, root, trial, path)
        if trial:
            coercions.extend(trial)
            return out
    return value


def _coerce_node(value: Any, schema: dict[str, Any], types: set[str]) -> tuple[Any, str]:
    """The coercion of ``value`` itself (not its members): the new value and what was done
    (``""`` when nothing was)."""
    kind = ""
    if isinstance(value, str) and types and "string" not in types:
        value, kind = _coerce_text(value, types)
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
        wanted = value.casefold()
        folded = [e for e in enum if isinstance(e, str) and e.casefold() == wanted]
        if len(folded) == 1:
            value, kind = folded[0], "matched enum value ignoring case"
    return value, kind


def _coerce_text(value: str, types: set[str]) -> tuple[Any, str]:
    """A string where the schema wants no string: JSON text of an array/object, or a scalar."""
    text = value.strip()
    if text[:1] in "[{" and types & {"array", "object"}:
        try:
            decoded = json.loads(text)
            screen_arguments(decoded)
        except (ValueError, RecursionError, ArgumentRefused):
            decoded = None
        if json_type_name(decoded) in types:
            return decoded, "decoded JSON text"
    scalar = _scalar_coercion(value, types)
    if scalar is not None:
        return scalar
    return value, ""


def _coerce_members(
    value: dict[str, Any],
    schema: dict[str, Any],
    root: dict[str, Any],
    coercions: list[Coercion],
    path: str,
) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    extra = schema.get("additionalProperties")
    result: dict[str, Any] = {}
    for key, item in value.items():
        sub = props.get(key)
        if sub is not None:
            sub = deref_schema(sub, root)
            if item is None and key not in required and not _allows_null(sub, root):
                # strict exports make optional arguments nullable: null means "use default"
                coercions.append(
                    Coercion(
                        path=join_path(path, key),
                        kind="null means default",
                        original=None,
                        value="(default)",
                    )
                )
                continue
            result[key] = coerce_to_schema(item, sub, root, coercions, join_path(path, key))
        elif isinstance(extra, dict):
            result[key] = coerce_to_schema(item, extra, root, coercions, join_path(path, key))
        else:
            result[key] = item
    return result


def _coerce_items(
    value: list[Any],
    schema: dict[str, Any],
    root: dict[str, Any],
    coercions: list[Coercion],
    path: str,
) -> list[Any]:
    items = schema.get("items")
    if isinstance(items, dict):
        return [
            coerce_to_schema(v, items, root, coercions, join_path(path, i))
            for i, v in enumerate(value)
        ]
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        return [
            coerce_to_schema(v, prefix[i], root, coercions, join_path(path, i))
            if i < len(prefix) and isinstance(prefix[i], dict)
            else v
            for i, v in enumerate(value)
        ]
    return value


# ---------------------------------------------------------------------------------------------


def _has_numeric_enum(schema: Any) -> bool:
    """Whether an ``enum``/``const`` anywhere holds numbers (which ``True`` would equal)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            enum = node.get("enum")
            values: list[Any] = list(enum) if isinstance(enum, list) else []
            if "const" in node:
                values = [*values, node["const"]]
            if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _allows_non_finite(model: type[BaseModel] | None) -> bool:
    """Whether a field of ``model`` explicitly accepts NaN/Infinity (``allow_inf_nan=True``)."""
    if model is None:
        return False
    stack: list[Any] = [getattr(model, "__pydantic_core_schema__", None)]
    seen = 0
    while stack and seen < 10_000:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if node.get("allow_inf_nan") is True:
                return True
            stack.extend(v for k, v in node.items() if k not in ("cls", "metadata"))
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


def _reads_lossily(model: type[BaseModel] | None) -> bool:
    """Whether reading into ``model`` could drop or merge values: a set, a dict whose keys are
    not strings, or a nested model that ignores unknown names, anywhere in its fields."""
    if model is None:
        return False
    root = getattr(model, "__pydantic_core_schema__", None)
    stack: list[Any] = [root.get("schema") if isinstance(root, dict) else None]
    seen = 0
    while stack and seen < 10_000:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if _lossy_node(node):
                return True
            stack.extend(v for k, v in node.items() if k not in ("cls", "metadata"))
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


def _lossy_node(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind in ("set", "frozenset"):
        return True
    keys = node.get("keys_schema")
    if kind == "dict" and isinstance(keys, dict) and keys.get("type") not in ("str", None):
        return True
    config = node.get("config")
    extra = config.get("extra_fields_behavior") if isinstance(config, dict) else None
    return kind == "model" and extra not in ("forbid", "allow")


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
        self.schema = schema if model is not None else honour_nullable(schema)
        self._model = model
        self._field_names = field_names
        self._forbid_extra = forbid_extra
        self._known = frozenset((schema.get("properties") or {}).keys())
        self._fast: SchemaValidator | None = None
        self._reference: Any = None
        # pydantic's literal and enum checks let True stand for 1: confirm with jsonschema
        self._numeric_enum = _has_numeric_enum(schema)
        # NaN/Infinity are not JSON: refused unless a field of the function says otherwise
        self._non_finite_ok = _allows_non_finite(model)
        self._lossy = _reads_lossily(model)
        if model is None:
            self._fast = compile_json_schema(self.schema)
            if self._fast is None:
                self._reference = self._reference_validator()

    def _reference_validator(self) -> Any:
        import jsonschema

        if self._reference is not None:
            return self._reference
        cls = jsonschema.validators.validator_for(
            self.schema, default=jsonschema.Draft202012Validator
        )
        try:
            cls.check_schema(self.schema)
        except jsonschema.SchemaError as exc:
            raise ToolDefinitionError(
                f"tool {self.tool_name!r}: invalid JSON Schema: {exc.message}"
            ) from exc
        self._reference = reference_validator(self.schema)
        return self._reference

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

    def _schema_problems(self, data: Any) -> list[tuple[str, str]]:
        reference = self._reference_validator()
        errors = sorted(reference.iter_errors(data), key=lambda e: str(list(e.absolute_path)))
        return jsonschema_problems(errors, self.schema) if errors else []

    def validate(self, arguments: Any) -> ValidationReport:
        """Validate (and safely coerce) ``arguments``; raises :class:`ToolArgumentError`."""
        try:
            data, coercions = parse_arguments(arguments, self.tool_name)
            try:
                non_finite, loose_number = screen_arguments(data)
            except ArgumentRefused as refused:
                raise argument_error(self.tool_name, [(refused.path, refused.text)]) from None
            if loose_number and self._numeric_enum:
                problems = [
                    p
                    for p in self._schema_problems(data)
                    if p[1].startswith("expected one of") and "got boolean" in p[1]
                ]  # only the booleans standing for numbers; the rest is validated below
                if problems:
                    raise argument_error(self.tool_name, problems)
            if non_finite and not self._non_finite_ok:
                raise argument_error(self.tool_name, self._non_finite_problems(data))
            if self._model is not None:
                # pydantic's literals take True and 2.0 for 1 and 2 without a word: such
                # values go through the coercion step, which reports "2.0 -> 2"
                direct = not (loose_number and self._numeric_enum)
                return self._validate_model(data, coercions, non_finite, direct=direct)
            return self._validate_schema(data, coercions)
        except ToolUseError:
            raise
        except Exception as exc:  # never a raw ValueError/RecursionError from hostile input
            raise argument_error(
                self.tool_name, [("", f"arguments could not be validated ({type(exc).__name__})")]
            ) from exc

    def _non_finite_problems(self, data: Any) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        stack: list[tuple[Any, str]] = [(data, "")]
        while stack:
            value, path = stack.pop()
            if isinstance(value, float) and not math.isfinite(value):
                problems.append(
                    (path, f"expected a finite number, got {short_value(value)} (not JSON)")
                )
            elif isinstance(value, Mapping):
                stack.extend((v, join_path(path, k)) for k, v in value.items())
            elif isinstance(value, (list, tuple)):
                stack.extend((v, join_path(path, i)) for i, v in enumerate(value))
        return sorted(problems)

    def _validate_schema(self, data: dict[str, Any], coercions: list[Coercion]) -> ValidationReport:
        if self._fast is not None:
            try:
                return ValidationReport(
                    arguments=self._fast.validate_python(data), coercions=tuple(coercions)
                )
            except ValidationError:
                pass
        elif not any(True for _ in self._reference.iter_errors(data)):
            # JSON Schema counts 7.0 as an integer; a function tool gets 7, so this does too
            normal = coerce_to_schema(data, self.schema, self.schema, coercions)
            return ValidationReport(arguments=normal, coercions=tuple(coercions))
        coerced = coerce_to_schema(data, self.schema, self.schema, coercions)
        if self._fast is not None:
            try:
                out = self._fast.validate_python(coerced)
                return ValidationReport(arguments=out, coercions=tuple(coercions))
            except ValidationError:
                pass  # confirm with the reference validator, which also words the errors
        problems = self._schema_problems(coerced)
        if not problems:
            return ValidationReport(arguments=coerced, coercions=tuple(coercions))
        if not any("unknown argument" in t for _, t in problems):
            problems += [p for p in self._unknown_names(coerced) if p[0] not in dict(problems)]
        raise argument_error(self.tool_name, problems)

    def _validate_model(
        self,
        data: dict[str, Any],
        coercions: list[Coercion],
        non_finite: bool,
        *,
        direct: bool = True,
    ) -> ValidationReport:
        assert self._model is not None
        validator = self._model.__pydantic_validator__
        if self._forbid_extra:
            unknown = self._unknown_names(data)
            if unknown:
                raise argument_error(self.tool_name, unknown)
        if direct:
            try:
                instance = validator.validate_python(data, strict=True)
            except ValidationError:
                pass
            else:
                return self._read_report(data, instance, coercions)
        coerced = coerce_to_schema(data, self.schema, self.schema, coercions)
        try:
            # strict JSON semantics: what JSON cannot hold (dates, UUIDs, enums, tuples) is
            # read from its JSON form, and nothing else is converted
            text = None if non_finite else json.dumps(coerced)
        except (TypeError, ValueError):
            text = None  # Python objects passed by a caller, not a model
        try:
            if text is not None:
                instance = validator.validate_json(text, strict=True)
            else:
                instance = validator.validate_python(coerced, strict=True)
        except ValidationError as exc:
            raise argument_error(
                self.tool_name, pydantic_problems(exc, coerced, self.schema)
            ) from None
        return self._read_report(coerced, instance, coercions)

    def _read_report(
        self, sent: dict[str, Any], instance: BaseModel, coercions: list[Coercion]
    ) -> ValidationReport:
        """The report for arguments read into the function's types; what the reading would
        lose (repeated set items, keys that become one) goes back to the model, what it
        changed (key text) is reported as coercions."""
        arguments = self._from_model(instance)
        if not self._lossy:
            return ValidationReport(arguments=arguments, coercions=tuple(coercions))
        problems, changes = lost_members(sent, arguments)
        if problems:
            raise argument_error(self.tool_name, problems)
        coercions.extend(
            Coercion(path=path, kind=kind, original=original, value=value)
            for path, kind, original, value in changes
        )
        return ValidationReport(arguments=arguments, coercions=tuple(coercions))
