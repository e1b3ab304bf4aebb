"""Argument validation: parsing, safe coercions (reported), model-facing errors, raw schemas."""

from __future__ import annotations

import json
from typing import Literal, Optional

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tooluse import ToolArgumentError, ToolCall, ToolDefinition, ToolParameter, ToolParameterType
from tooluse.tools.argument_validation import ArgumentValidator
from tooluse.tools.json_schema_compile import compile_json_schema


def book(
    city: str,
    nights: int = 1,
    units: Literal["celsius", "fahrenheit"] = "celsius",
    tags: Optional[list[str]] = None,
    breakfast: bool = False,
) -> dict:
    """Book a room."""
    return {"city": city, "nights": nights, "units": units, "tags": tags, "breakfast": breakfast}


TOOL = ToolDefinition.from_callable(book)

RAW = ToolDefinition.from_schema(
    "get_current_temperature",
    {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 10},
            "coords": {"type": "array", "items": {"type": "number"}},
            "filters": {
                "type": "object",
                "properties": {"max": {"type": "number"}},
                "additionalProperties": False,
            },
        },
        "required": ["location"],
        "additionalProperties": False,
    },
)


@pytest.mark.parametrize("raw", [None, "", "null", "  ", "{}", {}])
def test_empty_arguments_mean_no_arguments(raw):
    def today() -> str:
        """Today."""
        return "2025-12-25"

    tool = ToolDefinition.from_callable(today)
    assert tool.validate_arguments(raw) == {}


def test_dict_and_json_text_validate_the_same():
    a = TOOL.validate_arguments({"city": "Paris", "nights": 2})
    b = TOOL.validate_arguments('{"city": "Paris", "nights": 2}')
    assert (
        a
        == b
        == {
            "city": "Paris",
            "nights": 2,
            "units": "celsius",
            "tags": None,
            "breakfast": False,
        }
    )


def test_double_encoded_json_is_decoded_and_reported():
    text = json.dumps(json.dumps({"city": "Rome"}))
    report = TOOL.validate_arguments_report(text)
    assert report.arguments["city"] == "Rome"
    assert [c.kind for c in report.coercions] == ["decoded double-encoded JSON"]


def test_safe_coercions_are_applied_and_reported():
    report = TOOL.validate_arguments_report(
        {"city": "Oslo", "nights": "3", "breakfast": "true", "tags": "quiet", "units": "Celsius"}
    )
    assert report.arguments["nights"] == 3
    assert report.arguments["breakfast"] is True
    assert report.arguments["tags"] == ["quiet"]
    assert report.arguments["units"] == "celsius"
    kinds = {c.path: c.kind for c in report.coercions}
    assert kinds == {
        "nights": "string to integer",
        "breakfast": "string to boolean",
        "tags": "wrapped a single value in a list",
        "units": "matched enum value ignoring case",
    }
    assert 'nights: string to integer ("3" -> 3)' in [str(c) for c in report.coercions]


def test_no_coercion_reported_for_clean_arguments():
    assert TOOL.validate_arguments_report({"city": "Oslo", "nights": 2}).coercions == ()


class Filter(BaseModel):
    max_price: int


def test_json_text_for_an_object_parameter():
    def search(query: str, filter: Filter) -> str:
        """Search."""
        return query

    tool = ToolDefinition.from_callable(search)
    report = tool.validate_arguments_report({"query": "x", "filter": '{"max_price": "10"}'})
    assert report.arguments["filter"] == Filter(max_price=10)
    assert {c.kind for c in report.coercions} == {"decoded JSON text", "string to integer"}


def test_null_for_optional_argument_restores_the_default():
    report = TOOL.validate_arguments_report({"city": "Oslo", "nights": None, "units": None})
    assert report.arguments["nights"] == 1 and report.arguments["units"] == "celsius"
    assert {c.kind for c in report.coercions} == {"null means default"}
    # an argument whose type allows null keeps the null
    assert TOOL.validate_arguments({"city": "Oslo", "tags": None})["tags"] is None


def test_error_message_names_path_expected_and_received():
    with pytest.raises(ToolArgumentError) as info:
        TOOL.validate_arguments({"city": "Oslo", "nights": "many", "units": "kelvin"})
    err = info.value
    assert err.tool_name == "book"
    msg = err.model_message
    assert 'nights: expected integer, got string "many"' in msg
    assert 'units: expected one of "celsius", "fahrenheit", got string "kelvin"' in msg
    assert {e["path"] for e in err.errors} == {"nights", "units"}


def test_unknown_argument_gets_did_you_mean():
    with pytest.raises(ToolArgumentError) as info:
        TOOL.validate_arguments({"citty": "Oslo"})
    msg = info.value.model_message
    assert 'citty: unknown argument; did you mean "city"?' in msg
    assert "city: missing required argument" in msg


def test_not_an_object_and_invalid_json():
    with pytest.raises(ToolArgumentError, match="must be a JSON object, got array"):
        TOOL.validate_arguments("[1, 2]")
    with pytest.raises(ToolArgumentError, match="not valid JSON"):
        TOOL.validate_arguments('{"city": "Oslo"')


def test_error_list_is_bounded():
    schema = {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(20)},
        "required": [f"p{i}" for i in range(20)],
    }
    tool = ToolDefinition.from_schema("many", schema)
    with pytest.raises(ToolArgumentError) as info:
        tool.validate_arguments({})
    assert "and 12 more problems" in info.value.model_message
    assert len(info.value.errors) == 20


def test_tool_call_input_uses_raw_text_when_undecodable():
    call = ToolCall(id="c1", name="book", arguments={}, raw_arguments='{"city": "Oslo", nights: 2}')
    with pytest.raises(ToolArgumentError, match="not valid JSON"):
        TOOL.validate_arguments(call)
    ok = ToolCall(id="c2", name="book", arguments={"city": "Oslo"})
    assert TOOL.validate_arguments(ok)["city"] == "Oslo"


# ----------------------------------------------------------------- raw JSON Schema tools


def test_raw_schema_tool_is_validated_and_uses_the_compiled_path():
    assert RAW.validator._fast is not None
    assert RAW.validate_arguments({"location": "Paris", "days": 3}) == {
        "location": "Paris",
        "days": 3,
    }
    with pytest.raises(ToolArgumentError) as info:
        RAW.validate_arguments({"location": "Paris", "days": 11, "unti": "celsius"})
    msg = info.value.model_message
    assert "days:" in msg and "10" in msg
    assert 'unti: unknown argument; did you mean "unit"?' in msg


def test_raw_schema_coercions():
    report = RAW.validate_arguments_report(
        {"location": "Paris", "days": "2", "coords": "[1.5, 2]", "filters": '{"max": "3.5"}'}
    )
    assert report.arguments == {
        "location": "Paris",
        "days": 2,
        "coords": [1.5, 2],
        "filters": {"max": 3.5},
    }
    assert len(report.coercions) == 4  # days, coords, filters, filters.max


def test_raw_schema_outside_the_compiled_subset_uses_jsonschema():
    schema = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}},
        "required": ["ids"],
    }
    tool = ToolDefinition.from_schema("dedupe", schema)
    assert tool.validator._fast is None
    assert tool.validate_arguments({"ids": [1, 2]}) == {"ids": [1, 2]}
    with pytest.raises(ToolArgumentError, match="items must be unique; repeated: 1"):
        tool.validate_arguments({"ids": [1, 1]})
    assert tool.validate_arguments({"ids": ["3"]}) == {"ids": [3]}


def test_invalid_raw_schema_is_a_definition_error():
    from tooluse import ToolDefinitionError

    tool = ToolDefinition.from_schema("bad", {"type": "object", "properties": {"a": {"type": 5}}})
    with pytest.raises(ToolDefinitionError, match="invalid JSON Schema"):
        tool.validate_arguments({})


def test_llenvs_manual_definition_validates_required_and_enum():
    weather = ToolDefinition(
        name="get_weather",
        description="Get the current weather for a city",
        parameters=(
            ToolParameter(name="city", type=ToolParameterType.STRING, description="The city name"),
            ToolParameter(
                name="units",
                type=ToolParameterType.STRING,
                required=False,
                enum=("celsius", "fahrenheit"),
            ),
        ),
    )
    assert weather.validate_arguments({"city": "Paris"}) == {"city": "Paris"}
    with pytest.raises(ToolArgumentError, match="missing required"):
        weather.validate_arguments({"units": "celsius"})
    with pytest.raises(ToolArgumentError, match='one of "celsius", "fahrenheit"'):
        weather.validate_arguments({"city": "Paris", "units": "K"})


def test_validator_is_built_once_per_tool():
    tool = ToolDefinition.from_callable(book)
    assert tool.validator is tool.validator


# ----------------------------------------------------------------- compiled == jsonschema

_SCHEMAS = [
    RAW.parameters_schema,
    {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "c": {"type": "number", "exclusiveMinimum": 0},
            "d": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 4},
            "e": {"$ref": "#/$defs/E"},
            "f": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
            },
        },
        "$defs": {
            "E": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        },
    },
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-20, 20)
    | st.floats(-20, 20, allow_nan=False)
    | st.sampled_from(["", "abc", "celsius", "ABCDE", "1", "Paris"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["x", "max", "y"]), children, max_size=2)
    ),
    max_leaves=6,
)
arguments = st.dictionaries(
    st.sampled_from(
        ["location", "unit", "days", "coords", "filters", "a", "b", "c", "d", "e", "f", "zz"]
    ),
    json_values,
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(arguments)
def test_compiled_validator_agrees_with_jsonschema(data):
    for schema in _SCHEMAS:
        compiled = compile_json_schema(schema)
        assert compiled is not None
        try:
            compiled.validate_python(data)
            fast_ok = True
        except Exception:
            fast_ok = False
        reference_ok = jsonschema.Draft202012Validator(schema).is_valid(data)
        # the fast path must never accept what the schema rejects
        assert not (fast_ok and not reference_ok), (schema, data)
        validator = ArgumentValidator(tool_name="t", schema=schema)
        try:
            out = validator.validate(data).arguments
        except Exception:
            assert not reference_ok or not fast_ok
        else:
            assert jsonschema.Draft202012Validator(schema).is_valid(out), (schema, data, out)
