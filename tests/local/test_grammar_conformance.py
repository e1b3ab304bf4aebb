"""The grammar compiler against what a model may write: checked with a GBNF recognizer.

Annotation keywords (OpenAPI, BFCL) must not make the compiler fail, ``nullable`` must allow
``null``, and no optional property may be forced to appear (issue 16's mutant: "the grammar
compiler forcing the first optional property to appear").
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

from tooluse.local.grammar import schema_to_gbnf

sys.path.insert(0, str(Path(__file__).parent))
from gbnf_match import accepts  # noqa: E402


def canonical(value: object) -> str:
    return json.dumps(value, separators=(", ", ": "))


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("example", "Paris"),
        ("examples", ["Paris", "Rome"]),
        ("title", "City"),
        ("deprecated", True),
        ("$comment", "internal"),
        ("readOnly", False),
        ("writeOnly", False),
        ("optional", True),
        ("x-order", 3),
        ("externalDocs", {"url": "https://example.com"}),
    ],
)
def test_annotation_keywords_are_ignored(keyword, value):
    plain = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    annotated = {
        "type": "object",
        "properties": {"city": {"type": "string", keyword: value}},
        "required": ["city"],
        keyword: value,
    }
    assert schema_to_gbnf(annotated) == schema_to_gbnf(plain)
    assert accepts(schema_to_gbnf(annotated), '{"city": "Paris"}')


def test_openapi_nullable_allows_null_and_still_the_type():
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "nullable": True}},
        "required": ["n"],
    }
    gbnf = schema_to_gbnf(schema)
    assert accepts(gbnf, '{"n": null}')
    assert accepts(gbnf, '{"n": 12}')
    assert not accepts(gbnf, '{"n": "12"}')
    without = schema_to_gbnf(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    assert not accepts(without, '{"n": null}')
    # nullable: false changes nothing
    schema["properties"]["n"]["nullable"] = False
    assert not accepts(schema_to_gbnf(schema), '{"n": null}')


def test_optional_first_property_is_not_forced():
    schema = {
        "type": "object",
        "properties": {"unit": {"type": "string"}, "city": {"type": "string"}},
        "required": ["city"],
    }
    gbnf = schema_to_gbnf(schema)
    assert accepts(gbnf, '{"city": "Oslo"}')
    assert accepts(gbnf, '{"unit": "C", "city": "Oslo"}')
    assert not accepts(gbnf, '{"unit": "C"}')
    assert not accepts(gbnf, "{}")


def test_every_subset_of_optional_properties_is_accepted():
    props = {
        "a": {"type": "integer"},
        "b": {"type": "string"},
        "c": {"type": "boolean"},
        "d": {"type": "integer"},
    }
    values = {"a": 1, "b": "x", "c": True, "d": -4}
    required = {"b"}
    gbnf = schema_to_gbnf({"type": "object", "properties": props, "required": sorted(required)})
    for size in range(len(props) + 1):
        for chosen in itertools.combinations(props, size):
            text = canonical({k: values[k] for k in chosen})
            assert accepts(gbnf, text) == required.issubset(chosen), text


def test_all_optional_object_accepts_the_empty_object():
    gbnf = schema_to_gbnf(
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    )
    assert accepts(gbnf, "{}")
    assert accepts(gbnf, '{"b": 2}')
    assert not accepts(gbnf, '{"b": 2, "a": 1}')  # declared order only
