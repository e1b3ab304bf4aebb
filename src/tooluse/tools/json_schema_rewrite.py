"""Pure rewrites of JSON Schema documents: cleaning generated schemas and resolving ``$ref``.

Every function returns a new document and never changes its input.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

__all__ = [
    "SCHEMA_LIST_KEYWORDS",
    "SCHEMA_MAP_KEYWORDS",
    "SCHEMA_VALUE_KEYWORDS",
    "clean_schema",
    "honour_nullable",
    "inline_refs",
    "recursive_definitions",
    "resolve_ref",
    "subschemas",
]

# Keywords whose value is a schema, a list of schemas, or a name -> schema mapping.
SCHEMA_VALUE_KEYWORDS = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
SCHEMA_LIST_KEYWORDS = ("anyOf", "oneOf", "allOf", "prefixItems")
SCHEMA_MAP_KEYWORDS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
)


def subschemas(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Direct sub-schemas of ``schema`` as (keyword path, sub-schema) pairs."""
    for key in SCHEMA_VALUE_KEYWORDS:
        value = schema.get(key)
        if isinstance(value, dict):
            yield key, value
        elif key == "items" and isinstance(value, list):  # draft-4 tuple form
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    yield f"{key}[{i}]", item
    for key in SCHEMA_LIST_KEYWORDS:
        value = schema.get(key)
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    yield f"{key}[{i}]", item
    for key in SCHEMA_MAP_KEYWORDS:
        value = schema.get(key)
        if isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict):
                    yield f"{key}.{name}", item


def _map_schema(schema: dict[str, Any], fn: Any) -> dict[str, Any]:
    """Apply ``fn`` to every sub-schema (bottom-up), rebuilding containers."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in SCHEMA_VALUE_KEYWORDS and isinstance(value, dict):
            out[key] = fn(_map_schema(value, fn))
        elif (
            key in SCHEMA_VALUE_KEYWORDS
            and key == "items"
            and isinstance(value, list)
            or key in SCHEMA_LIST_KEYWORDS
            and isinstance(value, list)
        ):
            out[key] = [fn(_map_schema(v, fn)) if isinstance(v, dict) else v for v in value]
        elif key in SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            out[key] = {
                k: fn(_map_schema(v, fn)) if isinstance(v, dict) else v for k, v in value.items()
            }
        else:
            out[key] = copy.deepcopy(value)
    return out


def _drop_title(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema.get("title"), str):
        schema = {k: v for k, v in schema.items() if k != "title"}
    return schema


def resolve_ref(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    """The schema a local ``$ref`` (``#/...``) points to, or ``None``."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def _refs_in(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in schema.values():
            yield from _refs_in(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs_in(value)


def recursive_definitions(root: dict[str, Any]) -> set[str]:
    """The ``$ref`` targets that can reach themselves (recursive models)."""
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        for name, value in (root.get(key) or {}).items():
            defs[f"#/{key}/{name}"] = value
    graph = {ref: set(_refs_in(value)) for ref, value in defs.items()}
    recursive: set[str] = set()
    for start in graph:
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            ref = stack.pop()
            if ref == start:
                recursive.add(start)
                break
            if ref in seen:
                continue
            seen.add(ref)
            stack.extend(graph.get(ref, ()))
    return recursive


def inline_refs(root: dict[str, Any], *, keep: set[str] | None = None) -> dict[str, Any]:
    """Replace local ``$ref`` by the schema they point to, except those in ``keep``.

    Sibling keywords of a ``$ref`` (``description``, ``default``) win over the target's.
    Definitions still referenced afterwards stay in ``$defs``; the others are removed.
    """
    keep = keep or set()

    def expand(node: Any, depth: int) -> Any:
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in keep and depth < 64:
            target = resolve_ref(root, ref)
            if target is not None:
                merged = {k: v for k, v in target.items() if k not in ("$defs", "definitions")}
                merged.update({k: v for k, v in node.items() if k != "$ref"})
                return expand(merged, depth + 1)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "definitions"):
                continue
            if key in SCHEMA_VALUE_KEYWORDS and isinstance(value, dict):
                out[key] = expand(value, depth)
            elif (key in SCHEMA_LIST_KEYWORDS or key == "items") and isinstance(value, list):
                out[key] = [expand(v, depth) for v in value]
            elif key in SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
                out[key] = {k: expand(v, depth) for k, v in value.items()}
            else:
                out[key] = value
        return out

    out = expand({k: v for k, v in root.items() if k not in ("$defs", "definitions")}, 0)
    expanded = {
        f"#/{key}/{name}": (key, name, expand(value, 0))
        for key in ("$defs", "definitions")
        for name, value in (root.get(key) or {}).items()
        if isinstance(value, dict)
    }
    used: set[str] = set()
    pending = set(_refs_in(out))
    while pending:  # definitions still in use may refer to other definitions
        ref = pending.pop()
        if ref in used or ref not in expanded:
            continue
        used.add(ref)
        pending.update(_refs_in(expanded[ref][2]))
    for ref in sorted(used):
        key, name, value = expanded[ref]
        out.setdefault(key, {})[name] = value
    return copy.deepcopy(out)


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A generated schema made tidy for models: no titles, non-recursive ``$ref`` inlined."""
    untitled = _drop_title(_map_schema(schema, _drop_title))
    return inline_refs(untitled, keep=recursive_definitions(untitled))


def _nullable_node(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("nullable") is not True:
        return schema
    out = {k: v for k, v in schema.items() if k != "nullable"}
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"] if kind != "null" else kind
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    elif isinstance(kind, list):
        out["type"] = kind if "null" in kind else [*kind, "null"]
    elif kind is None and out:
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def honour_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI's ``nullable: true`` (Gemini, older OpenAPI tools) as JSON Schema's ``null`` type.

    JSON Schema validators ignore ``nullable``; a tool written for OpenAPI means it.
    """
    if '"nullable": true' not in _compact(schema):
        return schema
    return _nullable_node(_map_schema(schema, _nullable_node))


def _compact(schema: dict[str, Any]) -> str:
    import json

    try:
        return json.dumps(schema, default=str)
    except (TypeError, ValueError):
        return '"nullable": true'
