"""Compile a JSON Schema (a common subset) into a fast pydantic-core validator.

Raw-schema tools (hand-written, MCP) are validated against their JSON Schema. ``jsonschema`` is
the reference, but it walks the schema on every call; this module translates the keywords tool
schemas actually use into a pydantic-core ``SchemaValidator`` once per tool. Any keyword outside
the subset makes :func:`compile_json_schema` return ``None`` and the caller keeps ``jsonschema``,
so the fast path never accepts what the schema rejects.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_core import SchemaValidator, core_schema

__all__ = ["compile_json_schema"]

# Keywords that never change what validates (annotations).
_ANNOTATION_KEYWORDS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "$comment",
        "format",  # jsonschema does not assert formats by default either
        "readOnly",
        "writeOnly",
        "deprecated",
        "contentMediaType",
        "contentEncoding",
        "$schema",
        "$id",
        "nullable",  # OpenAPI annotation; never sent by JSON Schema validators
    }
)
_TYPE_KEYWORDS = {
    "string": {"minLength", "maxLength", "pattern"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "boolean": set(),
    "null": set(),
    "array": {"items", "minItems", "maxItems"},
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
    regex = re.compile(pattern)

    def check(value: str) -> str:
        if regex.search(value) is None:
            raise ValueError(f"string does not match pattern {pattern!r}")
        return value

    return check


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
        keys = set(schema) - _ANNOTATION_KEYWORDS
        if "$ref" in keys:
            if keys != {"$ref"}:
                raise _Unsupported("$ref with siblings")
            return self._ref(schema["$ref"])
        keys.discard("$defs")
        keys.discard("definitions")
        if "enum" in keys or "const" in keys:
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
            return core_schema.literal_schema(allowed)
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
        if not isinstance(types, list) or not types:
            raise _Unsupported("type")
        rest = keys - {"type"}
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
            out = core_schema.str_schema(
                min_length=schema.get("minLength"), max_length=schema.get("maxLength"), strict=True
            )
            if "pattern" in schema:
                return core_schema.no_info_after_validator_function(
                    _pattern_check(schema["pattern"]), out
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
            return core_schema.list_schema(
                self.compile(items),
                min_length=schema.get("minItems"),
                max_length=schema.get("maxItems"),
                strict=True,
            )
        # object
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
