"""JSON Schema to GBNF (llama.cpp grammar) compiler, and the tool-call grammar built from it.

The compiler covers the JSON Schema subset that tool definitions use: objects with required and
optional properties, enums, ``const``, strings, numbers, integers, booleans, ``null``, arrays
(``items``, ``minItems``/``maxItems``), nested objects, ``anyOf``/``oneOf``, type lists
(nullable), OpenAPI's ``nullable: true``, local ``$ref`` into ``$defs``/``definitions``
(recursion included) and single-item ``allOf``. Annotations (``title``, ``description``,
``example(s)``, ``deprecated``, ``$comment``, ``readOnly``/``writeOnly``, BFCL's ``optional``,
``x-...`` extensions) constrain nothing and are ignored.

Keywords that only narrow values (``pattern``, ``minimum``, ``format``...) cannot all be
expressed in a grammar. With ``strict=False`` (the default) they are left out: the grammar then
accepts a superset and the arguments are still validated against the full schema after
generation. With ``strict=True`` they raise :class:`~tooluse.errors.GrammarError`. Keywords that
change the structure (``not``, ``if``, ``patternProperties``...) always raise ``GrammarError``
naming the keyword and where it was found.

Output JSON is canonical: no whitespace except one space after ``:`` and ``,``. Fixing the
layout leaves the model no room to loop on whitespace and makes most punctuation a forced token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.errors import GrammarError

__all__ = ["GrammarBuilder", "minimal_instance", "schema_to_gbnf"]

# Keywords with no effect on which JSON texts are valid.
ANNOTATION_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$defs",
        "definitions",
        "discriminator",
        "contentMediaType",
        "contentEncoding",
        "example",  # OpenAPI's single example
        "optional",  # BFCL marks optional arguments this way; 'required' is what counts
        "externalDocs",
        "xml",
        "$anchor",
        "$dynamicAnchor",
        "$vocabulary",
    }
)
# Keywords the compiler turns into grammar ('nullable' is OpenAPI's "or null").
HANDLED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "minLength",
        "maxLength",
        "minimum",
        "exclusiveMinimum",
        "format",
        "nullable",
    }
)
# Keywords that only narrow values; left to validation unless strict.
NARROWING_KEYWORDS = frozenset(
    {
        "pattern",
        "maximum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "contains",
        "minContains",
        "maxContains",
        "propertyNames",
    }
)
# Repetition bounds above this are not spelled out in the grammar (llama.cpp expands them).
MAX_SPELLED_REPEAT = 64

PRIMITIVE_RULES: dict[str, str] = {
    "value": "object | array | string | number | boolean | null",
    "object": '"{" ( string ": " value ( ", " string ": " value )* )? "}"',
    "array": '"[" ( value ( ", " value )* )? "]"',
    "string": '"\\"" char* "\\""',
    "char": '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" [0-9a-fA-F]{4} )',
    "integer": '"-"? uint',
    "uint": '"0" | [1-9] [0-9]{0,15}',
    "number": '"-"? unumber',
    "unumber": 'uint ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?',
    "boolean": '"true" | "false"',
    "null": '"null"',
}
VALUE_HEAD_RULE = (
    '[^"\\\\\\x7F\\x00-\\x20,\\[\\]{}] | "\\\\" ( ["\\\\/bfnrt] | "u" [0-9a-fA-F]{4} )'
)
# Dependencies between the primitive rules, so only what is used gets emitted.
PRIMITIVE_DEPS: dict[str, tuple[str, ...]] = {
    "value": ("object", "array", "string", "number", "boolean", "null"),
    "object": ("string", "value"),
    "array": ("value",),
    "string": ("char",),
    "integer": ("uint",),
    "number": ("unumber",),
    "unumber": ("uint",),
}
FORMAT_RULES: dict[str, str] = {
    "date": '"\\"" [0-9]{4} "-" [0-9]{2} "-" [0-9]{2} "\\""',
    "time": '"\\"" [0-9]{2} ":" [0-9]{2} ":" [0-9]{2} ( "." [0-9]{1,6} )? ( "Z" | [-+] [0-9]{2} ":" [0-9]{2} )? "\\""',
    "date-time": '"\\"" [0-9]{4} "-" [0-9]{2} "-" [0-9]{2} "T" [0-9]{2} ":" [0-9]{2} ":" [0-9]{2} ( "." [0-9]{1,6} )? ( "Z" | [-+] [0-9]{2} ":" [0-9]{2} )? "\\""',
    "uuid": '"\\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\\""',
}


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def json_literal(value: Any) -> str:
    """A JSON value as the GBNF literal of its canonical text."""
    return gbnf_literal(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


def rule_name(hint: str) -> str:
    """A valid GBNF rule name derived from ``hint``."""
    name = re.sub(r"[^a-zA-Z0-9-]+", "-", hint).strip("-").lower()
    return name or "r"


class GrammarBuilder:
    """Accumulates GBNF rules; :meth:`add_schema` compiles one schema and returns its rule name.

    One builder can hold several schemas (one per tool) that share the primitive rules.
    """

    def __init__(
        self,
        *,
        strict: bool = False,
        max_string_length: int | None = None,
        plain_string_start: bool = False,
    ) -> None:
        self.strict = strict
        # a cap for strings without maxLength: a small model can loop inside a string forever
        self.max_string_length = max_string_length
        # capped strings are not empty and do not start with whitespace, a comma or a closing
        # bracket: a small model that wants to end the call early otherwise writes "" or
        # "}}]</tool_call> ..." as the value
        self.plain_string_start = plain_string_start
        self._value_head: str | None = None
        self._rules: dict[str, str] = {}
        self._primitives: set[str] = set()
        self._refs: dict[tuple[int, str], str] = {}

    # -- public -------------------------------------------------------------------------------

    def add_rule(self, name_hint: str, body: str) -> str:
        """Add a rule under a fresh name made from ``name_hint``; returns the name."""
        base = rule_name(name_hint)
        name, n = base, 1
        while name in self._rules or name in PRIMITIVE_RULES:
            n += 1
            name = f"{base}-{n}"
        self._rules[name] = body
        return name

    def set_root(self, body: str) -> None:
        self._rules["root"] = body

    def add_schema(self, schema: Mapping[str, Any], name_hint: str = "schema") -> str:
        """Compile ``schema``; returns the rule that matches exactly its JSON texts."""
        if not isinstance(schema, Mapping):
            raise GrammarError(f"a schema must be an object, got {type(schema).__name__}")
        expr = self._compile(schema, schema, name_hint, "#")
        if re.fullmatch(r"[a-z0-9-]+", expr):
            return expr
        return self.add_rule(name_hint, expr)

    def render(self) -> str:
        """The whole grammar as GBNF text (``root`` first)."""
        needed: set[str] = set()
        todo = list(self._primitives)
        while todo:
            name = todo.pop()
            if name not in needed:
                needed.add(name)
                todo.extend(PRIMITIVE_DEPS.get(name, ()))
        lines = []
        if "root" in self._rules:
            lines.append(f"root ::= {self._rules['root']}")
        lines += [f"{k} ::= {v}" for k, v in self._rules.items() if k != "root"]
        lines += [f"{k} ::= {PRIMITIVE_RULES[k]}" for k in PRIMITIVE_RULES if k in needed]
        return "\n".join(lines) + "\n"

    # -- compilation --------------------------------------------------------------------------

    def _primitive(self, name: str) -> str:
        self._primitives.add(name)
        return name

    def _fail(self, keyword: str, path: str) -> GrammarError:
        return GrammarError(
            f"the grammar compiler cannot express the JSON Schema keyword {keyword!r} (at {path})"
        )

    def _check_keywords(self, schema: Mapping[str, Any], path: str) -> None:
        for key in schema:
            if key in ANNOTATION_KEYWORDS or key in HANDLED_KEYWORDS:
                continue
            if key in NARROWING_KEYWORDS and not self.strict:
                continue
            if key.startswith("x-"):
                continue
            raise self._fail(key, path)

    def _compile(self, schema: Any, root: Mapping[str, Any], hint: str, path: str) -> str:
        if schema is True or schema == {}:
            return self._primitive("value")
        if schema is False:
            raise GrammarError(f"schema at {path} is false: no value is allowed")
        if not isinstance(schema, Mapping):
            raise GrammarError(f"schema at {path} must be an object, got {type(schema).__name__}")
        self._check_keywords(schema, path)
        if schema.get("nullable") is True:
            inner = {k: v for k, v in schema.items() if k != "nullable"}
            if not inner:
                return self._primitive("value")
            value = self._compile(inner, root, hint, path)
            return f"( {value} | {self._primitive('null')} )"
        if "$ref" in schema:
            return self._ref(schema["$ref"], root, path)
        if "const" in schema:
            return json_literal(schema["const"])
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise GrammarError(f"'enum' at {path} must be a non-empty list")
            return "( " + " | ".join(json_literal(v) for v in values) + " )"
        combined = self._combination(schema, root, hint, path)
        if combined is not None:
            return combined
        kind = schema.get("type")
        if kind is None:
            kind = _infer_type(schema)
        if isinstance(kind, list):
            if not kind:
                raise GrammarError(f"'type' at {path} is an empty list")
            alts = [self._typed(schema, t, root, hint, path) for t in kind]
            return "( " + " | ".join(alts) + " )"
        return self._typed(schema, kind, root, hint, path)

    def _combination(
        self, schema: Mapping[str, Any], root: Mapping[str, Any], hint: str, path: str
    ) -> str | None:
        """The rule of an ``anyOf``/``oneOf``/single ``allOf`` schema; ``None`` for other schemas."""
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = schema[key]
                if not isinstance(options, list) or not options:
                    raise GrammarError(f"{key!r} at {path} must be a non-empty list")
                base = {k: v for k, v in schema.items() if k != key}
                alts = [
                    self._compile(_merge(base, option), root, f"{hint}-{i}", f"{path}/{key}/{i}")
                    for i, option in enumerate(options)
                ]
                return "( " + " | ".join(alts) + " )"
        if "allOf" in schema:
            parts = schema["allOf"]
            if not isinstance(parts, list) or len(parts) != 1:
                raise self._fail("allOf", path)  # only the single-schema wrapper is supported
            base = {k: v for k, v in schema.items() if k != "allOf"}
            return self._compile(_merge(base, parts[0]), root, hint, f"{path}/allOf/0")
        return None

    def _typed(
        self, schema: Mapping[str, Any], kind: Any, root: Mapping[str, Any], hint: str, path: str
    ) -> str:
        if kind == "object":
            return self._object(schema, root, hint, path)
        if kind == "array":
            return self._array(schema, root, hint, path)
        if kind == "string":
            return self._string(schema, path)
        if kind in ("integer", "number"):
            minimum = schema.get("minimum", schema.get("exclusiveMinimum"))
            unsigned = isinstance(minimum, (int, float)) and minimum >= 0
            if kind == "integer":
                return self._primitive("uint") if unsigned else self._primitive("integer")
            return self._primitive("unumber") if unsigned else self._primitive("number")
        if kind == "boolean":
            return self._primitive("boolean")
        if kind == "null":
            return self._primitive("null")
        if kind == "any":
            return self._primitive("value")
        raise GrammarError(f"unknown JSON Schema type {kind!r} at {path}")

    def _string(self, schema: Mapping[str, Any], path: str) -> str:
        fmt = schema.get("format")
        if fmt is not None:
            if fmt in FORMAT_RULES:
                return self.add_rule(f"format-{fmt}", FORMAT_RULES[fmt])
            if self.strict:
                raise self._fail(f"format: {fmt}", path)
        low = schema.get("minLength", 0)
        high = schema.get("maxLength", self.max_string_length)
        if low == 0 and high is None:
            return self._primitive("string")
        self._primitive("char")
        if high is not None and high > MAX_SPELLED_REPEAT and "maxLength" in schema:
            if self.strict:
                raise self._fail("maxLength", path)
            high = None
        if low > MAX_SPELLED_REPEAT:
            raise self._fail("minLength", path)
        if self.plain_string_start and low == 0 and high is not None and high > 0:
            if self._value_head is None:
                self._value_head = self.add_rule("value-head", VALUE_HEAD_RULE)
            rest = f"char{{0,{high - 1}}}"
            return f'"\\"" {self._value_head} {rest} "\\""'
        rep = f"{{{low},{'' if high is None else high}}}"
        return f'"\\"" char{rep} "\\""'

    def _array(
        self, schema: Mapping[str, Any], root: Mapping[str, Any], hint: str, path: str
    ) -> str:
        items = schema.get("items", True)
        if isinstance(items, list):
            raise self._fail("items (tuple form)", path)
        item = self._compile(items, root, f"{hint}-item", f"{path}/items")
        if not re.fullmatch(r"[a-z0-9-]+", item):
            item = self.add_rule(f"{hint}-item", item)
        low = int(schema.get("minItems", 0))
        high = schema.get("maxItems")
        if high is not None and int(high) > MAX_SPELLED_REPEAT:
            if self.strict:
                raise self._fail("maxItems", path)
            high = None
        if low > MAX_SPELLED_REPEAT:
            raise self._fail("minItems", path)
        if high is not None and int(high) == 0:
            return '"[]"'
        rest_low = max(low - 1, 0)
        rest = (
            f'( ", " {item} )*'
            if high is None
            else f'( ", " {item} ){{{rest_low},{int(high) - 1}}}'
        )
        if rest_low and high is None:
            rest = f'( ", " {item} ){{{rest_low},}}'
        body = f"{item} {rest}"
        return f'"[" {body} "]"' if low > 0 else f'"[" ( {body} )? "]"'

    def _object(
        self, schema: Mapping[str, Any], root: Mapping[str, Any], hint: str, path: str
    ) -> str:
        props = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        missing = required - set(props)
        extra = schema.get("additionalProperties", not props)
        if not props:
            if extra is False:
                return '"{}"'
            if extra is True or extra == {}:
                return self._primitive("object")
            value = self._compile(extra, root, f"{hint}-value", f"{path}/additionalProperties")
            self._primitive("string")
            return f'"{{" ( string ": " {value} ( ", " string ": " {value} )* )? "}}"'
        if missing:
            raise GrammarError(
                f"required properties {sorted(missing)} at {path} are not listed in 'properties'"
            )
        # Extra keys beyond 'properties' are never generated: a model does not need them and
        # allowing them would let it invent arguments.
        pairs: list[tuple[str, bool]] = []
        for key, sub in props.items():
            value = self._compile(sub, root, f"{hint}-{key}", f"{path}/properties/{key}")
            pairs.append(
                (
                    f'{gbnf_literal(json.dumps(key, ensure_ascii=False))} ": " {value}',
                    key in required,
                )
            )
        # F(i): no pair emitted yet, pairs i.. remain; G(i): at least one emitted (comma first).
        # Linear in the number of properties, whatever mix of required and optional.
        n = len(pairs)
        g_names = [self.add_rule(f"{hint}-rest{i}", "") for i in range(n + 1)]
        f_names = [self.add_rule(f"{hint}-from{i}", "") for i in range(n + 1)]
        for i in range(n, -1, -1):
            if i == n:
                self._rules[g_names[i]] = '""'
                self._rules[f_names[i]] = '""'
                continue
            kv, req = pairs[i]
            if req:
                self._rules[g_names[i]] = f'", " {kv} {g_names[i + 1]}'
                self._rules[f_names[i]] = f"{kv} {g_names[i + 1]}"
            else:
                self._rules[g_names[i]] = f'( ", " {kv} )? {g_names[i + 1]}'
                self._rules[f_names[i]] = f"{kv} {g_names[i + 1]} | {f_names[i + 1]}"
        return f'"{{" {f_names[0]} "}}"'

    def _ref(self, ref: Any, root: Mapping[str, Any], path: str) -> str:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise GrammarError(f"only local '$ref' (starting with '#') is supported, got {ref!r}")
        key = (id(root), ref)
        if key in self._refs:
            return self._refs[key]
        target: Any = root
        for part in ref.lstrip("#").strip("/").split("/") if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                raise GrammarError(f"'$ref' {ref!r} at {path} points nowhere")
            target = target[part]
        name = self.add_rule(f"ref-{ref.rsplit('/', 1)[-1]}", '""')
        self._refs[key] = name  # registered before compiling, so recursion ends here
        self._rules[name] = self._compile(target, root, name, ref)
        return name


def _merge(base: Mapping[str, Any], option: Any) -> Any:
    """``option`` with the sibling keywords of an ``anyOf``/``allOf`` (type, annotations...)."""
    if not isinstance(option, Mapping) or not base:
        return option
    kept = {k: v for k, v in base.items() if k not in ANNOTATION_KEYWORDS}
    if "type" in kept and ("$ref" in option or "type" in option or "enum" in option):
        kept.pop("type")
    return {**kept, **option}


def _infer_type(schema: Mapping[str, Any]) -> str:
    if "properties" in schema or "additionalProperties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "minItems" in schema or "maxItems" in schema:
        return "array"
    if "minLength" in schema or "maxLength" in schema or "format" in schema:
        return "string"
    return "any"


def schema_to_gbnf(schema: Mapping[str, Any], *, strict: bool = False) -> str:
    """A complete GBNF grammar whose ``root`` matches exactly the JSON texts of ``schema``."""
    builder = GrammarBuilder(strict=strict)
    builder.set_root(builder.add_schema(schema, "value-root"))
    return builder.render()


def tool_call_rules(builder: GrammarBuilder, tools: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Add one rule per tool matching ``{"name": "<tool>", "arguments": {...}}``; returns the rule
    matching any one of them."""
    if not tools:
        raise GrammarError("a tool-call grammar needs at least one tool")
    alts = []
    for name, schema in tools:
        args = builder.add_schema(schema, f"args-{name}")
        head = gbnf_literal('{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": ')
        alts.append(builder.add_rule(f"call-{name}", f'{head} {args} "}}"'))
    return builder.add_rule("call", " | ".join(alts))


def minimal_instance(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """The shortest JSON value that the call grammar of ``schema`` lets a model finish with.

    Used to size the closing reserve of a constrained call: from any point of a call, the
    remaining text is at most as long as the call written with these values. Follows the same
    rules as the compiler (required properties only, shortest enum/anyOf option, minItems).
    """
    root = schema if root is None else root
    if depth > 16 or schema is True or not isinstance(schema, Mapping) or not schema:
        return None
    if "$ref" in schema and isinstance(schema["$ref"], str):
        target: Any = root
        for part in schema["$ref"].lstrip("#").strip("/").split("/"):
            if part and isinstance(target, Mapping):
                target = target.get(part.replace("~1", "/").replace("~0", "~"), {})
        return minimal_instance(target, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return min(schema["enum"], key=lambda v: len(json.dumps(v, ensure_ascii=False)))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            base = {k: v for k, v in schema.items() if k != key}
            options = [minimal_instance(_merge(base, o), root, depth + 1) for o in schema[key]]
            return min(options, key=lambda v: len(json.dumps(v, ensure_ascii=False)))
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        base = {k: v for k, v in schema.items() if k != "allOf"}
        return minimal_instance(_merge(base, schema["allOf"][0]), root, depth + 1)
    return _minimal_typed(schema, root, depth)


def _minimal_typed(schema: Mapping[str, Any], root: Any, depth: int) -> Any:
    """:func:`minimal_instance` of a schema known by its type (no $ref, enum or combination)."""
    kind = schema.get("type", _infer_type(schema))
    if isinstance(kind, list):
        kind = "null" if "null" in kind else (kind[0] if kind else "any")
    if kind == "object":
        props = schema.get("properties") or {}
        return {
            key: minimal_instance(props.get(key, {}), root, depth + 1)
            for key in schema.get("required") or ()
        }
    if kind == "array":
        item = minimal_instance(schema.get("items", {}), root, depth + 1)
        return [item] * min(int(schema.get("minItems", 0)), MAX_SPELLED_REPEAT)
    if kind == "string":
        return "a" * min(int(schema.get("minLength", 0)), MAX_SPELLED_REPEAT)
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return True
    return None
