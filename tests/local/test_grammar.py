"""The JSON Schema -> GBNF compiler: structure of the output and its errors (no model needed)."""

from __future__ import annotations

import pytest

from tooluse.errors import GrammarError
from tooluse.local.grammar import GrammarBuilder, schema_to_gbnf, tool_call_rules


def rules(gbnf: str) -> dict[str, str]:
    out = {}
    for line in gbnf.strip().splitlines():
        name, _, body = line.partition(" ::= ")
        out[name] = body
    return out


def test_root_comes_first_and_only_used_primitives_are_emitted():
    gbnf = schema_to_gbnf({"type": "object", "properties": {"n": {"type": "integer"}}})
    names = list(rules(gbnf))
    assert names[0] == "root"
    assert "integer" in names and "uint" in names
    assert "string" not in names and "number" not in names and "value" not in names


def test_enum_and_const_become_json_literals():
    gbnf = schema_to_gbnf(
        {
            "type": "object",
            "properties": {"u": {"enum": ["celsius", 3, None]}, "k": {"const": {"a": [1]}}},
            "required": ["u", "k"],
        }
    )
    assert '"\\"celsius\\""' in gbnf
    assert '"3"' in gbnf and '"null"' in gbnf
    assert '"{\\"a\\": [1]}"' in gbnf


def test_minimum_zero_drops_the_sign():
    gbnf = schema_to_gbnf({"type": "integer", "minimum": 0})
    assert rules(gbnf)["root"] == "uint"


def test_nullable_type_list_is_an_alternation():
    gbnf = schema_to_gbnf({"type": ["string", "null"]})
    body = rules(gbnf)[rules(gbnf)["root"]]
    assert "string" in body and "null" in body and "|" in body


def test_recursive_ref_terminates_and_refers_to_itself():
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["value"],
            }
        },
        "$ref": "#/$defs/node",
    }
    gbnf = schema_to_gbnf(schema)
    ref_rules = [name for name in rules(gbnf) if name.startswith("ref-node")]
    assert ref_rules
    assert any(ref_rules[0] in body for name, body in rules(gbnf).items() if name != ref_rules[0])


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        ({"not": {"type": "string"}}, "not"),
        ({"type": "object", "patternProperties": {"^x": {}}}, "patternProperties"),
        ({"if": {"type": "string"}, "then": {}}, "if"),
        ({"allOf": [{"type": "string"}, {"minLength": 2}]}, "allOf"),
        ({"type": "array", "items": [{"type": "string"}]}, "items (tuple form)"),
    ],
)
def test_structural_keywords_raise_naming_the_keyword(schema, keyword):
    with pytest.raises(GrammarError, match=f"'{keyword}'" if "(" not in keyword else "tuple"):
        schema_to_gbnf(schema)


def test_narrowing_keywords_are_left_to_validation_unless_strict():
    schema = {"type": "string", "pattern": "^[a-z]+$"}
    assert rules(schema_to_gbnf(schema))["root"] == "string"
    with pytest.raises(GrammarError, match="'pattern'"):
        schema_to_gbnf(schema, strict=True)


def test_error_names_the_location():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"not": {}}}}},
    }
    with pytest.raises(GrammarError, match="#/properties/a/properties/b"):
        schema_to_gbnf(schema)


def test_unknown_type_and_bad_ref_are_clear():
    with pytest.raises(GrammarError, match="unknown JSON Schema type 'strng'"):
        schema_to_gbnf({"type": "strng"})
    with pytest.raises(GrammarError, match="points nowhere"):
        schema_to_gbnf({"$ref": "#/$defs/missing"})
    with pytest.raises(GrammarError, match="only local"):
        schema_to_gbnf({"$ref": "https://example.com/s.json"})


def test_required_property_missing_from_properties_is_an_error():
    with pytest.raises(GrammarError, match=r"\['b'\]"):
        schema_to_gbnf({"type": "object", "properties": {"a": {}}, "required": ["b"]})


def test_tool_call_rules_fix_the_name_and_need_a_tool():
    builder = GrammarBuilder()
    call = tool_call_rules(builder, [("get_time", {"type": "object", "properties": {}})])
    builder.set_root(call)
    gbnf = builder.render()
    assert '{\\"name\\": \\"get_time\\", \\"arguments\\": ' in gbnf
    with pytest.raises(GrammarError, match="at least one tool"):
        tool_call_rules(GrammarBuilder(), [])


def test_capped_call_strings_need_a_plain_first_character():
    builder = GrammarBuilder(max_string_length=10, plain_string_start=True)
    builder.set_root(builder.add_schema({"type": "string"}))
    gbnf = builder.render()
    assert 'schema ::= "\\"" value-head char{0,9} "\\""' in gbnf
    head = next(line for line in gbnf.splitlines() if line.startswith("value-head ::="))
    assert "\\x00-\\x20,\\[\\]{}" in head  # no whitespace, comma or bracket first
    # without the option (and without a cap) strings stay plain JSON strings
    assert "value-head" not in schema_to_gbnf({"type": "string"})
