"""The compiled grammars run in llama.cpp's own grammar engine, over SmolLM2's vocabulary:
every text that matches the schema is accepted, texts that break it are rejected."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tooluse.errors import GrammarError
from tooluse.local.grammar import schema_to_gbnf
from tooluse.local.sampling import GrammarSampler

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 0},
    },
    "required": ["city"],
    "additionalProperties": False,
}
NESTED = {
    "type": "object",
    "properties": {
        "user": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": ["integer", "null"]}},
            "required": ["name", "age"],
        },
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "score": {"anyOf": [{"type": "number"}, {"type": "boolean"}]},
        "kind": {"const": "v1"},
    },
    "required": ["user", "kind"],
}
CASES = [
    (WEATHER, {"city": "Paris"}, True),
    (WEATHER, {"city": "Paris", "unit": "celsius"}, True),
    (WEATHER, {"city": "Paris", "days": 3}, True),
    (WEATHER, {"city": "Paris", "unit": "fahrenheit", "days": 0}, True),
    (WEATHER, {"city": 'Say "hi"\n', "unit": "celsius"}, True),
    (WEATHER, {}, False),
    (WEATHER, {"city": "Paris", "unit": "kelvin"}, False),
    (WEATHER, {"city": "Paris", "days": -1}, False),
    (WEATHER, {"city": "Paris", "extra": 1}, False),
    (WEATHER, {"city": 3}, False),
    (NESTED, {"user": {"name": "a", "age": None}, "kind": "v1"}, True),
    (NESTED, {"user": {"name": "a", "age": 7}, "tags": ["x", "y"], "kind": "v1"}, True),
    (NESTED, {"user": {"name": "a", "age": 7}, "score": 2.5e3, "kind": "v1"}, True),
    (NESTED, {"user": {"name": "a", "age": 7}, "score": False, "kind": "v1"}, True),
    (NESTED, {"user": {"name": "a", "age": 7}, "tags": [], "kind": "v1"}, True),
    (NESTED, {"user": {"name": "a"}, "kind": "v1"}, False),
    (NESTED, {"user": {"name": "a", "age": 1}, "tags": ["1", "2", "3", "4"], "kind": "v1"}, False),
    (NESTED, {"user": {"name": "a", "age": 1}, "kind": "v2"}, False),
    (NESTED, {"user": {"name": "a", "age": 1}, "score": "high", "kind": "v1"}, False),
]


@pytest.mark.parametrize(("schema", "value", "valid"), CASES)
def test_grammar_agrees_with_jsonschema(backend, schema, value, valid):
    # the expectation itself is checked against jsonschema, so the table cannot drift
    assert jsonschema.Draft202012Validator(schema).is_valid(value) is valid
    grammar = GrammarSampler(backend.llm, schema_to_gbnf(schema))
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    tokens = backend.loop.tokenize(text)
    assert grammar.matches(tokens, backend.loop.eos) is valid
    grammar.close()


def test_unparseable_grammar_text_is_a_grammar_error(backend):
    with pytest.raises(GrammarError, match="could not parse"):
        GrammarSampler(backend.llm, "root ::= ( unbalanced\n")
