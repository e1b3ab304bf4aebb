"""Provider schemas of a tool, with a report of every constraint an export dropped or changed.

Exports are pure functions of a :class:`~tooluse.tools.definition.ToolDefinition`. The
neutral argument schema is never changed: validation always checks the full neutral schema, so
a constraint a provider cannot express (reported in :attr:`SchemaExport.changes` and mentioned
in the description for the model) is still enforced when the arguments come back.

Strict mode (OpenAI structured outputs; also used for Anthropic and Bedrock ``strict``) makes
every property required and every object closed, and keeps optional parameters optional in
meaning: an optional parameter becomes required-but-nullable, and a ``null`` from the model
restores the default at validation.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Protocol

from tooluse.errors import SchemaExportError
from tooluse.tools.json_schema_rewrite import (
    SCHEMA_LIST_KEYWORDS,
    inline_refs,
    recursive_definitions,
    resolve_ref,
)

__all__ = [
    "PROVIDERS",
    "ExportableTool",
    "SchemaChange",
    "SchemaExport",
    "export_tool",
    "to_gemini_parameters",
    "to_strict_schema",
]

PROVIDERS = ("openai", "openai_responses", "anthropic", "gemini", "bedrock", "mcp")


class ExportableTool(Protocol):
    """What an export reads of a tool (a :class:`~tooluse.tools.definition.ToolDefinition`)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters_schema(self) -> dict[str, Any]: ...

    @property
    def output_schema(self) -> dict[str, Any] | None: ...

    @property
    def annotations(self) -> dict[str, Any]: ...

    @property
    def _cache(self) -> dict[str, Any]: ...  # a tool's exports are kept with it


# OpenAI structured outputs: keywords accepted in strict mode (besides structure).
_STRICT_ALLOWED = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
        "const", "description", "$ref", "$defs", "definitions", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minItems", "maxItems", "title",
    }
)  # fmt: skip
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Gemini ``parameters`` (OpenAPI 3.0 subset).
_GEMINI_ALLOWED = frozenset(
    {
        "type", "format", "description", "nullable", "enum", "maxItems", "minItems",
        "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
        "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
        "maximum", "title",
    }
)  # fmt: skip
_GEMINI_FORMATS = {
    "string": {"enum", "date-time"},
    "number": {"float", "double"},
    "integer": {"int32", "int64"},
}
GEMINI_MAX_DEPTH = 4  # how many times a recursive model is unrolled before it is cut


@dataclass(frozen=True, kw_only=True)
class SchemaChange:
    """One thing an export dropped or rewrote (``path`` is a JSON pointer-like location)."""

    path: str
    keyword: str
    action: str  # "dropped" | "rewritten" | "added"
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.keyword} {self.action}" + (
            f" ({self.detail})" if self.detail else ""
        )


@dataclass(frozen=True, kw_only=True)
class SchemaExport:
    """A provider tool schema and what the export changed."""

    provider: str
    schema: dict[str, Any]
    strict: bool = False
    changes: tuple[SchemaChange, ...] = ()

    @property
    def dropped(self) -> tuple[SchemaChange, ...]:
        """The constraints the provider schema no longer expresses."""
        return tuple(c for c in self.changes if c.action == "dropped")


class _NotStrict(Exception):
    pass


def _json(value: Any) -> str:
    """A value as the model reads it: JSON, never a Python repr."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(str(value))


def _note(schema: dict[str, Any], text: str) -> None:
    """Mention a dropped constraint in the description, so the model still sees it."""
    desc = schema.get("description", "")
    schema["description"] = f"{desc} ({text})" if desc else f"({text})"


def _allows_null(schema: dict[str, Any]) -> bool:
    t = schema.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    return any(isinstance(b, dict) and _allows_null(b) for b in schema.get("anyOf", []))


def _strict_node(node: dict[str, Any], path: str, changes: list[SchemaChange]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "oneOf":
            changes.append(
                SchemaChange(path=path, keyword="oneOf", action="rewritten", detail="as anyOf")
            )
            key = "anyOf"
        if not _strict_rewritten(out, key, value, node, path, changes):
            _strict_kept(out, key, value, path, changes)
    if "$ref" in out and len(set(out) - {"description", "title"}) > 1:
        raise _NotStrict(f"{path or '/'}: $ref with sibling keywords")
    if out.get("type") == "object" or "properties" in node:
        _strict_object(out, node, path, changes)
    return out


def _strict_rewritten(
    out: dict[str, Any],
    key: str,
    value: Any,
    node: dict[str, Any],
    path: str,
    changes: list[SchemaChange],
) -> bool:
    """Rewrite or drop a keyword strict mode does not take as is; whether ``key`` was one."""
    if (
        key == "allOf"
        and isinstance(value, list)
        and len(value) == 1
        and isinstance(value[0], dict)
    ):
        out.update(_strict_node(value[0], path, changes))
        return True
    if key == "format" and value not in _STRICT_FORMATS:
        changes.append(
            SchemaChange(path=path, keyword="format", action="dropped", detail=str(value))
        )
        _note(out, f"format: {value}")
        return True
    if key == "default":
        return True  # handled by the parent (optional -> nullable)
    if key == "prefixItems" and isinstance(value, list):
        out["items"] = _strict_tuple_items(value, node, path, changes)
        if value:
            out["minItems"] = node.get("minItems", len(value))
            if node.get("items") is False or "maxItems" in node or "items" not in node:
                out["maxItems"] = node.get("maxItems", len(value))
        return True
    if key == "items" and "prefixItems" in node:
        return True  # folded into the tuple rewrite above
    if key not in _STRICT_ALLOWED:
        changes.append(
            SchemaChange(path=path, keyword=key, action="dropped", detail=repr(value)[:80])
        )
        if not isinstance(value, (dict, list)):
            _note(out, f"{key}: {value}")
        return True
    return False


def _strict_kept(
    out: dict[str, Any], key: str, value: Any, path: str, changes: list[SchemaChange]
) -> None:
    """Copy an allowed keyword, its subschemas made strict (properties: see _strict_object)."""
    if key in SCHEMA_LIST_KEYWORDS and isinstance(value, list):
        out[key] = [
            _strict_node(v, f"{path}/{key}/{i}", changes) if isinstance(v, dict) else v
            for i, v in enumerate(value)
        ]
    elif key == "items" and isinstance(value, dict):
        out[key] = _strict_node(value, f"{path}/items", changes)
    elif key in ("$defs", "definitions") and isinstance(value, dict):
        out[key] = {k: _strict_node(v, f"{path}/{key}/{k}", changes) for k, v in value.items()}
    elif key == "description" and "description" in out:
        out[key] = f"{value} {out[key]}"  # keep the notes on dropped keywords
    elif key != "properties":
        out[key] = copy.deepcopy(value)


def _strict_object(
    out: dict[str, Any], node: dict[str, Any], path: str, changes: list[SchemaChange]
) -> None:
    """Close an object: every property required (optional ones nullable), no extra keys."""
    props = node.get("properties") or {}
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        raise _NotStrict(f"{path or '/'}: a free-form mapping (additionalProperties schema)")
    if not props and extra is not False:
        raise _NotStrict(f"{path or '/'}: an object without declared properties")
    required = set(node.get("required") or ())
    new_props: dict[str, Any] = {}
    for name, sub in props.items():
        sub_path = f"{path}/properties/{name}"
        sub_out = _strict_node(sub, sub_path, changes)
        if name not in required:
            sub_out = _strict_optional(sub, sub_out, sub_path, changes)
        new_props[name] = sub_out
    out["properties"] = new_props
    out["required"] = list(props)
    if extra is not False:
        changes.append(
            SchemaChange(path=path, keyword="additionalProperties", action="added", detail="false")
        )
    out["additionalProperties"] = False
    out["type"] = "object"


def _strict_optional(
    sub: dict[str, Any], sub_out: dict[str, Any], path: str, changes: list[SchemaChange]
) -> dict[str, Any]:
    """An optional property as strict mode has it: required, but nullable (null = default)."""
    if not _allows_null(sub_out):
        if "$ref" in sub_out:
            sub_out = {"anyOf": [sub_out, {"type": "null"}]}
        elif isinstance(sub_out.get("type"), str) and "enum" not in sub_out:
            sub_out["type"] = [sub_out["type"], "null"]
        else:
            desc = sub_out.pop("description", None)
            sub_out = {"anyOf": [sub_out, {"type": "null"}]}
            if desc:
                sub_out["description"] = desc
    if "default" in sub:
        _note(sub_out, f"default: {_json(sub.get('default'))}; send null for the default")
    changes.append(
        SchemaChange(
            path=path,
            keyword="required",
            action="rewritten",
            detail="optional argument is required but nullable; null means default",
        )
    )
    return sub_out


def _strict_tuple_items(
    prefix: list[Any], node: dict[str, Any], path: str, changes: list[SchemaChange]
) -> dict[str, Any]:
    """A tuple's positions as one strict ``items`` schema (strict mode has no prefixItems).

    Same type everywhere: that type, with the length fixed by min/maxItems (lossless). Mixed
    types: ``anyOf`` the position types, the order said in the description; validation still
    checks each position against the neutral schema.
    """
    subs = [
        _strict_node(v, f"{path}/prefixItems/{i}", changes) if isinstance(v, dict) else {}
        for i, v in enumerate(prefix)
    ]
    distinct: list[dict[str, Any]] = []
    for sub in subs:
        if sub not in distinct:
            distinct.append(sub)
    if len(distinct) == 1:
        changes.append(
            SchemaChange(
                path=path,
                keyword="prefixItems",
                action="rewritten",
                detail=f"as items with exactly {len(prefix)} items",
            )
        )
        return distinct[0]
    order = ", ".join(str(s.get("type", "value")) for s in subs)
    changes.append(
        SchemaChange(
            path=path,
            keyword="prefixItems",
            action="rewritten",
            detail=f"as items anyOf the position types; order noted in the description: {order}",
        )
    )
    return {"anyOf": distinct, "description": f"items in this order: {order}"}


def to_strict_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], list[SchemaChange]]:
    """The OpenAI-strict form of an argument schema; raises ``SchemaExportError`` if impossible."""
    changes: list[SchemaChange] = []
    flat = inline_refs(schema, keep=recursive_definitions(schema))
    try:
        return _strict_node(flat, "", changes), changes
    except _NotStrict as exc:
        raise SchemaExportError(f"strict mode cannot express {exc}") from None


def _gemini_node(
    node: dict[str, Any], root: dict[str, Any], path: str, changes: list[SchemaChange], depth: int
) -> dict[str, Any]:
    if isinstance(node.get("$ref"), str):
        return _gemini_ref(node, root, path, changes, depth)
    node = dict(node)
    if "oneOf" in node:
        changes.append(
            SchemaChange(path=path, keyword="oneOf", action="rewritten", detail="as anyOf")
        )
        node["anyOf"] = node.pop("oneOf")
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "allOf" in node and isinstance(node["allOf"], list) and len(node["allOf"]) == 1:
        node = {**node.pop("allOf")[0], **node}
    nullable = _gemini_type_list(node)
    if isinstance(node.get("anyOf"), list):
        node, null_branch = _gemini_any_of(node, root, path, changes, depth)
        nullable = nullable or null_branch
    out: dict[str, Any] = {}
    for key, value in node.items():
        if not _gemini_subschema(out, key, value, node, root, path, changes, depth):
            _gemini_keyword(out, key, value, node, path, changes)
    if nullable:
        out["nullable"] = True
    return out


def _gemini_ref(
    node: dict[str, Any], root: dict[str, Any], path: str, changes: list[SchemaChange], depth: int
) -> dict[str, Any]:
    """A ``$ref`` inlined; a recursive model is unrolled ``GEMINI_MAX_DEPTH`` times, then cut."""
    if depth >= GEMINI_MAX_DEPTH:
        changes.append(
            SchemaChange(
                path=path,
                keyword="$ref",
                action="dropped",
                detail=f"recursion cut at depth {depth}",
            )
        )
        cut = {"type": "object"}
        _note(cut, "nested further levels omitted")
        return cut
    target = resolve_ref(root, node["$ref"]) or {}
    merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return _gemini_node(merged, root, path, changes, depth + 1)


def _gemini_type_list(node: dict[str, Any]) -> bool:
    """Rewrite a list ``type`` in place (one type, or ``anyOf`` the types); whether it held null."""
    types = node.get("type")
    if not isinstance(types, list):
        return False
    rest = [t for t in types if t != "null"]
    if len(rest) == 1:
        node["type"] = rest[0]
    elif rest:
        node.pop("type")
        node["anyOf"] = [{"type": t} for t in rest]
    else:
        node["type"] = "null"
    return "null" in types


def _gemini_any_of(
    node: dict[str, Any], root: dict[str, Any], path: str, changes: list[SchemaChange], depth: int
) -> tuple[dict[str, Any], bool]:
    """``anyOf`` without its null branch (Gemini says ``nullable``), merged into ``node`` when a
    single branch is left; the new node, and whether a null branch was there."""
    branches = [b for b in node["anyOf"] if isinstance(b, dict)]
    non_null = [b for b in branches if b.get("type") != "null"]
    nullable = len(non_null) < len(branches)
    if len(non_null) == 1:
        node.pop("anyOf")
        inner = _gemini_node(non_null[0], root, path, changes, depth)
        node = {
            **inner,
            **{k: v for k, v in node.items() if k not in inner or k == "description"},
        }
    else:
        node["anyOf"] = non_null
    return node, nullable


def _gemini_subschema(  # noqa: PLR0913 -- one node's walk state, passed down unchanged
    out: dict[str, Any],
    key: str,
    value: Any,
    node: dict[str, Any],
    root: dict[str, Any],
    path: str,
    changes: list[SchemaChange],
    depth: int,
) -> bool:
    """Convert a keyword holding subschemas; whether ``key`` was one."""
    if key == "properties" and isinstance(value, dict):
        out["properties"] = {
            k: _gemini_node(v, root, f"{path}/properties/{k}", changes, depth)
            for k, v in value.items()
        }
    elif key == "items" and isinstance(value, dict):
        out["items"] = _gemini_node(value, root, f"{path}/items", changes, depth)
    elif key == "anyOf":
        out["anyOf"] = [
            _gemini_node(v, root, f"{path}/anyOf/{i}", changes, depth) for i, v in enumerate(value)
        ]
    elif key == "prefixItems" and isinstance(value, list) and value:
        _gemini_prefix_items(out, value, root, path, changes, depth)
    elif key == "items" and "prefixItems" in node:
        pass  # folded into the tuple rewrite
    else:
        return False
    return True


def _gemini_prefix_items(
    out: dict[str, Any],
    prefix: list[Any],
    root: dict[str, Any],
    path: str,
    changes: list[SchemaChange],
    depth: int,
) -> None:
    """A tuple as ``items`` (Gemini has no prefixItems), its length fixed by min/maxItems."""
    subs = [
        _gemini_node(v, root, f"{path}/prefixItems/{i}", changes, depth)
        for i, v in enumerate(prefix)
        if isinstance(v, dict)
    ]
    distinct = [v for i, v in enumerate(subs) if v not in subs[:i]]
    out["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
    out.setdefault("minItems", len(prefix))
    out.setdefault("maxItems", len(prefix))
    order = ", ".join(str(v.get("type", "value")) for v in subs)
    if len(distinct) > 1:
        _note(out, f"items in this order: {order}")
    changes.append(SchemaChange(path=path, keyword="prefixItems", action="rewritten", detail=order))


def _gemini_keyword(
    out: dict[str, Any],
    key: str,
    value: Any,
    node: dict[str, Any],
    path: str,
    changes: list[SchemaChange],
) -> None:
    """Convert, copy or drop (noted in the description) a keyword without subschemas."""
    if key == "enum":
        _gemini_enum(out, value, path, changes)
    elif key == "format":
        t = node.get("type")
        if value in _GEMINI_FORMATS.get(t if isinstance(t, str) else "", set()):
            out["format"] = value
        else:
            changes.append(
                SchemaChange(path=path, keyword="format", action="dropped", detail=str(value))
            )
            _note(out, f"format: {value}")
    elif key in ("$defs", "definitions", "$schema", "$id"):
        return
    elif key == "examples" and isinstance(value, list) and value:
        out["example"] = value[0]
    elif key == "description" and "description" in out:
        out[key] = f"{value} {out[key]}"  # keep the notes on dropped keywords
    elif key not in _GEMINI_ALLOWED:
        if key == "additionalProperties" and value is False:
            return  # closing an object is the default reading for function arguments
        changes.append(
            SchemaChange(path=path, keyword=key, action="dropped", detail=repr(value)[:80])
        )
        if not isinstance(value, (dict, list)):
            _note(out, f"{key}: {value}")
    else:
        out[key] = copy.deepcopy(value)


def _gemini_enum(out: dict[str, Any], value: Any, path: str, changes: list[SchemaChange]) -> None:
    """Gemini enums hold strings only; other values are said in the description."""
    if all(isinstance(v, str) for v in value):
        out["enum"] = list(value)
        out.setdefault("type", "string")
    else:
        changes.append(
            SchemaChange(path=path, keyword="enum", action="dropped", detail="non-string values")
        )
        _note(out, "allowed values: " + ", ".join(_json(v) for v in value))


def to_gemini_parameters(schema: dict[str, Any]) -> tuple[dict[str, Any], list[SchemaChange]]:
    """The Gemini (OpenAPI subset) form of an argument schema, with the changes made."""
    changes: list[SchemaChange] = []
    return _gemini_node(schema, schema, "", changes, 0), changes


def export_tool(definition: ExportableTool, provider: str, *, strict: bool = False) -> SchemaExport:
    """Export ``definition`` for ``provider`` (one of :data:`PROVIDERS`)."""
    cache_key = f"export:{provider}:{strict}"
    cached = definition._cache.get(cache_key)
    if cached is not None:
        return copy.deepcopy(cached)  # type: ignore[no-any-return]
    result = _export(definition, provider, strict=strict)
    definition._cache[cache_key] = result
    return copy.deepcopy(result)


def _export_parameters(
    definition: ExportableTool, provider: str, *, strict: bool
) -> tuple[dict[str, Any], list[SchemaChange], bool]:
    """The argument schema to send (strict when asked and possible), its changes, and whether
    it is strict."""
    params = copy.deepcopy(definition.parameters_schema)
    if strict and provider in ("openai", "openai_responses", "anthropic", "bedrock"):
        try:
            strict_params, changes = to_strict_schema(params)
            return strict_params, changes, True
        except SchemaExportError as exc:
            # documented fallback: the tool is sent non-strict, and the report says why
            dropped = SchemaChange(path="", keyword="strict", action="dropped", detail=str(exc))
            return params, [dropped], False
    return params, [], False


def _export(definition: ExportableTool, provider: str, *, strict: bool) -> SchemaExport:
    params, changes, is_strict = _export_parameters(definition, provider, strict=strict)
    from tooluse.tools.tool_names import provider_tool_name

    name, description = provider_tool_name(definition.name, provider), definition.description
    if name != definition.name:
        changes = [
            *changes,
            SchemaChange(
                path="",
                keyword="name",
                action="rewritten",
                detail=f"{definition.name} -> {name} (the provider's name rule)",
            ),
        ]
    if provider == "openai":
        function: dict[str, Any] = {"name": name, "description": description, "parameters": params}
        if strict:
            function["strict"] = is_strict
        schema: dict[str, Any] = {"type": "function", "function": function}
    elif provider == "openai_responses":
        schema = {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": params,
            "strict": is_strict,
        }
    elif provider == "anthropic":
        schema = {"name": name, "description": description, "input_schema": params}
        if is_strict:
            schema["strict"] = True
    elif provider == "bedrock":
        spec: dict[str, Any] = {
            "name": name,
            "description": description or name,
            "inputSchema": {"json": params},
        }
        if is_strict:
            spec["strict"] = True
        schema = {"toolSpec": spec}
    elif provider == "gemini":
        gemini_params, gemini_changes = to_gemini_parameters(params)
        changes = [*changes, *gemini_changes]
        schema = {"name": name, "description": description}
        if gemini_params.get("properties"):
            schema["parameters"] = gemini_params
    elif provider == "mcp":
        schema = {"name": name, "description": description, "inputSchema": params}
        if definition.output_schema and definition.output_schema.get("type") == "object":
            schema["outputSchema"] = copy.deepcopy(definition.output_schema)
        if definition.annotations:
            schema["annotations"] = copy.deepcopy(definition.annotations)
    else:
        raise SchemaExportError(
            f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}"
        )
    return SchemaExport(provider=provider, schema=schema, strict=is_strict, changes=tuple(changes))


# keep the keyword tables importable for tests of the conformance rules
STRICT_ALLOWED_KEYWORDS = _STRICT_ALLOWED
GEMINI_ALLOWED_KEYWORDS = _GEMINI_ALLOWED
