"""Compile a JSON Schema (a common subset) into a fast pydantic-core validator.

Raw-schema tools (hand-written, MCP) are validated against their JSON Schema. ``jsonschema`` is
the reference, but it walks the schema on every call; this module translates the keywords tool
schemas actually use into a pydantic-core ``SchemaValidator`` once per tool. Any keyword outside
the subset makes :func:`compile_json_schema` return ``None`` and the caller keeps ``jsonschema``,
so the fast path never accepts what the schema rejects.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic_core import SchemaValidator, core_schema

from tooluse.tools.schema_safety import compile_pattern

__all__ = ["FORMAT_CHECKS", "compile_json_schema", "format_ok"]

# Keywords that never change what validates (annotations).
_ANNOTATION_KEYWORDS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "$comment",
        "format",  # asserted only for the formats in FORMAT_CHECKS (see _typed)
        "readOnly",
        "writeOnly",
        "deprecated",
        "contentMediaType",
        "contentEncoding",
        "$schema",
        "$id",
        "nullable",  # rewritten into the type before compiling (json_schema_rewrite)
        "example",  # OpenAPI
        "optional",  # BFCL's marker; 'required' is what counts
        "externalDocs",
    }
)
_TYPE_KEYWORDS = {
    "string": {"minLength", "maxLength", "pattern"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "boolean": set(),
    "null": set(),
    "array": {"items", "minItems", "maxItems", "prefixItems"},
    "object": {"properties", "required", "additionalProperties"},
}


class _Unsupported(Exception):
    """The schema uses a keyword outside the compiled subset."""


def compile_json_schema(schema: dict[str, Any]) -> SchemaValidator | None:
    """A strict pydantic-core validator equivalent to ``schema``, or ``None`` if out of subset."""
    compiler = _Compiler(schema)
    try:
        compiled = compiler.compile(schema)
        if compiler.definitions:
            compiled = core_schema.definitions_schema(compiled, list(compiler.definitions.values()))
        return SchemaValidator(compiled)
    except (_Unsupported, RecursionError):
        return None
    except Exception:  # a pydantic-core build error: stay on the reference validator
        return None


def _pattern_check(pattern: str) -> Any:
    search = compile_pattern(pattern)  # linear time: patterns may come from any MCP server

    def check(value: str) -> str:
        if not search(value):
            raise ValueError(f"string does not match pattern {pattern!r}")
        return value

    return check


def _string_parser(schema: Any) -> Callable[[str], bool]:
    validator = SchemaValidator(schema)

    def ok(text: str) -> bool:
        try:
            validator.validate_strings(text, strict=True)  # type: ignore[arg-type]
        except Exception:
            return False
        return True

    return ok


# The formats a function tool's own types give (datetime, date, time, timedelta, UUID),
# checked the way those types parse them, so a raw-schema tool and a function tool with the
# same schema accept the same strings.
FORMAT_CHECKS: dict[str, Callable[[str], bool]] = {
    "date-time": _string_parser(core_schema.datetime_schema()),
    "date": _string_parser(core_schema.date_schema()),
    "time": _string_parser(core_schema.time_schema()),
    "duration": _string_parser(core_schema.timedelta_schema()),
    "uuid": _string_parser(core_schema.uuid_schema()),
}


def format_ok(fmt: Any, value: Any) -> bool:
    """Whether ``value`` satisfies the string ``format`` (unchecked formats always do)."""
    check = FORMAT_CHECKS.get(fmt) if isinstance(fmt, str) else None
    return check is None or not isinstance(value, str) or check(value)


def _format_check(fmt: str) -> Any:
    check = FORMAT_CHECKS[fmt]

    def run(value: str) -> str:
        if not check(value):
            raise ValueError(f"string is not a valid {fmt}")
        return value

    return run


def _enum_values(values: list[Any]) -> list[Any]:
    # pydantic literals compare with ==, so True would match 1: only unambiguous scalars
    kinds = {type(v) for v in values}
    if kinds <= {str} or kinds <= {int} or kinds <= {type(None), str}:
        return list(values)
    raise _Unsupported("enum")


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.definitions: dict[str, Any] = {}

    def compile(self, schema: Any) -> Any:
        if schema is True or schema == {}:
            return core_schema.any_schema()
        if not isinstance(schema, dict):
            raise _Unsupported("boolean schema")
        keys = {k for k in schema if not k.startswith("x-")} - _ANNOTATION_KEYWORDS
        if schema.get("format") in FORMAT_CHECKS and schema.get("type") != "string":
            raise _Unsupported("format outside a string schema")
        if "$ref" in keys:
            if keys != {"$ref"}:
                raise _Unsupported("$ref with siblings")
            return self._ref(schema["$ref"])
        keys.discard("$defs")
        keys.discard("definitions")
        if "enum" in keys or "const" in keys:
            return self._enum(schema, keys)
        if "anyOf" in keys:
            if keys != {"anyOf"}:
                raise _Unsupported("anyOf with siblings")
            choices = [self.compile(s) for s in schema["anyOf"]]
            return core_schema.union_schema(choices, mode="smart")
        if "type" not in keys:
            if keys:
                raise _Unsupported(f"untyped schema with {sorted(keys)}")
            return core_schema.any_schema()
        types = schema["type"]
        if isinstance(types, str):
            return self._typed(types, schema, keys - {"type"})
        return self._type_union(types, schema, keys - {"type"})

    def _enum(self, schema: dict[str, Any], keys: set[str]) -> Any:
        """``enum``/``const`` (with an optional ``type`` that narrows the values)."""
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        if not isinstance(values, list) or not values or keys - {"enum", "const", "type"}:
            raise _Unsupported("enum")
        allowed = _enum_values(values)
        types = schema.get("type")
        if types is not None:
            types = [types] if isinstance(types, str) else types
            allowed = [v for v in allowed if _json_type_matches(v, types)]
            if not allowed:
                raise _Unsupported("empty enum")
        literal = core_schema.literal_schema(allowed)
        if any(isinstance(v, int) for v in allowed):
            # a literal compares with ==: True and 2.0 would pass for 1 and 2
            return core_schema.no_info_before_validator_function(_exact_number, literal)
        return literal

    def _type_union(self, types: Any, schema: dict[str, Any], rest: set[str]) -> Any:
        """A list ``type``: one branch per type, each with its own type's keywords."""
        if not isinstance(types, list) or not types:
            raise _Unsupported("type")
        branches = [self._typed(t, schema, rest & _TYPE_KEYWORDS.get(t, set())) for t in types]
        if rest - set().union(*(_TYPE_KEYWORDS.get(t, set()) for t in types)):
            raise _Unsupported("keywords of another type")
        return core_schema.union_schema(branches, mode="smart")

    def _ref(self, ref: str) -> Any:
        match = re.fullmatch(r"#/(\$defs|definitions)/([^/]+)", ref)
        if match is None:
            raise _Unsupported("non-local $ref")
        if ref not in self.definitions:
            target = self.root.get(match.group(1), {}).get(match.group(2))
            if not isinstance(target, dict):
                raise _Unsupported("dangling $ref")
            self.definitions[ref] = None  # placeholder breaks recursion
            self.definitions[ref] = {**self.compile(target), "ref": ref}
        return core_schema.definition_reference_schema(ref)

    def _typed(self, kind: str, schema: dict[str, Any], keys: set[str]) -> Any:
        allowed = _TYPE_KEYWORDS.get(kind)
        if allowed is None or keys - allowed:
            raise _Unsupported(f"{kind}: {sorted(keys - (allowed or set()))}")
        if kind == "string":
            out: Any = core_schema.str_schema(
                min_length=schema.get("minLength"), max_length=schema.get("maxLength"), strict=True
            )
            if "pattern" in schema:
                out = core_schema.no_info_after_validator_function(
                    _pattern_check(schema["pattern"]), out
                )
            if schema.get("format") in FORMAT_CHECKS:
                out = core_schema.no_info_after_validator_function(
                    _format_check(schema["format"]), out
                )
            return out
        if kind in ("integer", "number"):
            bounds = {
                "ge": schema.get("minimum"),
                "le": schema.get("maximum"),
                "gt": schema.get("exclusiveMinimum"),
                "lt": schema.get("exclusiveMaximum"),
                "multiple_of": schema.get("multipleOf"),
            }
            if any(isinstance(v, bool) for v in bounds.values()):
                raise _Unsupported("draft-4 exclusive bounds")
            integer = core_schema.int_schema(strict=True, **bounds)
            if kind == "integer":
                return integer
            # an integer stays an integer (a float validator would turn 3 into 3.0)
            floating = core_schema.float_schema(strict=True, allow_inf_nan=False, **bounds)
            return core_schema.union_schema([integer, floating], mode="left_to_right")
        if kind == "boolean":
            return core_schema.bool_schema(strict=True)
        if kind == "null":
            return core_schema.none_schema()
        if kind == "array":
            items = schema.get("items", True)
            if isinstance(items, list):
                raise _Unsupported("tuple items")
            if "prefixItems" in schema:
                return self._tuple(schema, items)
            return core_schema.list_schema(
                self.compile(items),
                min_length=schema.get("minItems"),
                max_length=schema.get("maxItems"),
                strict=True,
            )
        return self._object(schema)

    def _tuple(self, schema: dict[str, Any], items: Any) -> Any:
        """``prefixItems`` when every position must be present (else JSON Schema allows a
        shorter array, which a tuple validator would refuse: left to the reference)."""
        prefix = schema["prefixItems"]
        low = schema.get("minItems", 0)
        if not isinstance(prefix, list) or not prefix or not isinstance(low, int):
            raise _Unsupported("prefixItems")
        if low < len(prefix):
            raise _Unsupported("prefixItems with optional positions")
        positions = [self.compile(p) for p in prefix]
        variadic = None
        if items is not False:
            positions.append(self.compile(items))
            variadic = len(prefix)
        # lists come in (JSON arrays); the tuple validator reads them, the result is a list again
        tuple_schema = core_schema.tuple_schema(
            positions,
            variadic_item_index=variadic,
            min_length=low,
            max_length=schema.get("maxItems"),
        )
        checked = core_schema.chain_schema(
            [core_schema.list_schema(core_schema.any_schema(), strict=True), tuple_schema]
        )
        return core_schema.no_info_after_validator_function(_as_list, checked)

    def _object(self, schema: dict[str, Any]) -> Any:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        extra = schema.get("additionalProperties", True)
        if not isinstance(props, dict) or required - set(props) and extra is False:
            raise _Unsupported("required names outside properties")
        if required - set(props):
            raise _Unsupported("required names outside properties")
        fields = {
            name: core_schema.typed_dict_field(self.compile(sub), required=name in required)
            for name, sub in props.items()
        }
        if extra is False:
            return core_schema.typed_dict_schema(fields, extra_behavior="forbid", strict=True)
        extras = None if extra is True or extra == {} else self.compile(extra)
        return core_schema.typed_dict_schema(
            fields, extra_behavior="allow", extras_schema=extras, strict=True
        )


def _exact_number(value: Any) -> Any:
    if isinstance(value, (bool, float)):
        raise ValueError("not one of the enum values")
    return value


def _as_list(value: Any) -> list[Any]:
    return list(value)


def _json_type_matches(value: Any, types: list[str]) -> bool:
    for t in types:
        if t == "string" and isinstance(value, str):
            return True
        if t == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if t == "null" and value is None:
            return True
        if t == "boolean" and isinstance(value, bool):
            return True
    return False
