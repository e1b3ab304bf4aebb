"""Tests aimed at mutants of argument validation and schema export that slipped through."""

from __future__ import annotations

import dataclasses

import pytest

from tooluse.tools.argument_validation import Coercion, coerce_to_schema
from tooluse.tools.schema_export import to_strict_schema

MIXED = {
    "type": "object",
    "properties": {
        "a": {"type": ["string", "null"]},
        "n": {"type": "null"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "pair": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "integer"}],
            "items": False,
        },
    },
    "required": ["tags", "pair"],
}


def test_coercion_records_are_frozen():
    record = Coercion(path="x", kind="k", original="1", value=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.value = 2  # type: ignore[misc]


def test_strict_export_keeps_nullable_optionals_as_they_are():
    out, _ = to_strict_schema(MIXED)
    props = out["properties"]
    # Already nullable: neither wrapped in anyOf nor given a second "null".
    assert props["a"] == {"type": ["string", "null"]}
    assert props["n"] == {"type": "null"}
    assert out["required"] == ["a", "n", "tags", "pair"]


def test_strict_export_keeps_array_items_and_folds_tuples():
    out, changes = to_strict_schema(MIXED)
    props = out["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    # The closed tuple's "items": false must not override the folded position type.
    assert props["pair"] == {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 2,
        "maxItems": 2,
    }
    assert any(c.keyword == "prefixItems" and c.path == "/properties/pair" for c in changes)


def test_object_typed_schema_without_properties_coerces_its_values():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    coercions: list[Coercion] = []
    value = coerce_to_schema({"a": "5"}, schema, schema, coercions)
    assert value == {"a": 5}
    assert [c.path for c in coercions] == ["a"]


def test_json_text_is_screened_before_it_replaces_a_string():
    from tooluse.tools.schema_safety import MAX_ARGUMENT_DEPTH

    deep = "[" * (MAX_ARGUMENT_DEPTH + 5) + "]" * (MAX_ARGUMENT_DEPTH + 5)
    schema = {"type": "array"}
    coercions: list[Coercion] = []
    # too deep to be an argument: never decoded (only wrapped as the text it was)
    assert coerce_to_schema(deep, schema, schema, coercions) == [deep]
    assert [c.kind for c in coercions] == ["wrapped a single value in a list"]
    assert coerce_to_schema("[[1]]", schema, schema, []) == [[1]]
