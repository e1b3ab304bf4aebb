"""Tests aimed at grammar-compiler mutants that the other grammar tests let through: the
free-form value rules, string lengths, formats, a recursive root ``$ref`` and the shortest
instance used to size the closing reserve."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tooluse.local.grammar import minimal_instance, schema_to_gbnf

sys.path.insert(0, str(Path(__file__).parent))
from gbnf_match import accepts  # noqa: E402


def text(value: object) -> str:
    return json.dumps(value, separators=(", ", ": "))


def test_free_form_values_accept_objects_and_numbers():
    grammar = schema_to_gbnf({"type": "object", "properties": {"data": {}}, "required": ["data"]})
    assert accepts(grammar, text({"data": {"a": 1, "b": [True, None]}}))
    assert accepts(grammar, text({"data": -12.5e3}))
    assert accepts(grammar, text({"data": 0.25}))
    assert not accepts(grammar, '{"data": {"a" 1}}')
    assert not accepts(grammar, '{"data": 01}')


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date", "2024-01-31", "2024-1-31"),
        ("time", "12:30:00Z", "12:30"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    ],
)
def test_string_formats_are_enforced(fmt, good, bad):
    grammar = schema_to_gbnf({"type": "string", "format": fmt})
    assert accepts(grammar, text(good))
    assert not accepts(grammar, text(bad))


def test_string_length_bounds_are_enforced():
    grammar = schema_to_gbnf({"type": "string", "minLength": 2, "maxLength": 3})
    assert accepts(grammar, text("ab")) and accepts(grammar, text("abc"))
    assert not accepts(grammar, text("a"))
    assert not accepts(grammar, text("abcd"))


def test_recursive_root_reference_compiles_and_nests():
    schema = {
        "type": "object",
        "properties": {"v": {"type": "integer"}, "child": {"$ref": "#"}},
        "required": ["v"],
    }
    grammar = schema_to_gbnf(schema)
    assert accepts(grammar, text({"v": 1, "child": {"v": 2, "child": {"v": 3}}}))
    assert not accepts(grammar, text({"v": 1, "child": {}}))


def test_references_to_definitions_resolve_whatever_their_name():
    # names that end or start with the separators' neighbours: the path is split, not stripped
    schema = {
        "$defs": {"AxisX": {"enum": ["x", "y"]}, "XRay": {"type": "boolean"}},
        "type": "object",
        "properties": {"axis": {"$ref": "#/$defs/AxisX"}, "ray": {"$ref": "#/$defs/XRay"}},
        "required": ["axis", "ray"],
    }
    grammar = schema_to_gbnf(schema)
    assert accepts(grammar, text({"axis": "y", "ray": False}))
    assert not accepts(grammar, text({"axis": "z", "ray": False}))
    assert minimal_instance(schema) == {"axis": "x", "ray": True}


def test_minimal_instance_of_plain_types_and_references():
    assert minimal_instance({"type": "integer"}) == 0
    assert minimal_instance({"type": "string", "minLength": 2}) == "aa"
    assert minimal_instance({"type": "array", "items": {"type": "boolean"}, "minItems": 2}) == [
        True,
        True,
    ]
    schema = {
        "$defs": {
            "PX": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        },
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/PX"}, "q": {"type": "string"}},
        "required": ["p"],
    }
    assert minimal_instance(schema) == {"p": {"x": 0}}


def test_minimal_instance_picks_the_shortest_option():
    assert (
        minimal_instance({"anyOf": [{"type": "string", "minLength": 3}, {"type": "integer"}]}) == 0
    )
    assert minimal_instance({"allOf": [{"type": "string", "minLength": 1}]}) == "a"
    assert minimal_instance({"enum": ["long", "ab"]}) == "ab"


def test_annotations_do_not_change_the_grammar():
    for strict in (False, True):
        grammar = schema_to_gbnf({"type": "integer", "description": "a count"}, strict=strict)
        assert accepts(grammar, "3") and not accepts(grammar, '"3"')


def test_map_objects_check_their_values():
    grammar = schema_to_gbnf({"type": "object", "additionalProperties": {"type": "integer"}})
    assert accepts(grammar, text({"a": 1, "b": 2}))
    assert accepts(grammar, "{}")
    assert not accepts(grammar, text({"a": "x"}))


def test_untyped_schemas_infer_their_type():
    grammar = schema_to_gbnf({"minItems": 2})
    assert accepts(grammar, text([1, "a"]))
    assert not accepts(grammar, text([1]))
    assert minimal_instance({"minItems": 2}) == [None, None]
    items_only = schema_to_gbnf({"items": {"type": "integer"}})
    assert accepts(items_only, "[1, 2]") and not accepts(items_only, text(["a"]))
    at_most_one = schema_to_gbnf({"maxItems": 1})
    assert accepts(at_most_one, "[]") and not accepts(at_most_one, "[1, 2]")
    assert minimal_instance({"type": ["string", "null"]}) is None
    assert minimal_instance({"type": ["string", "integer"]}) == ""
