"""Hostile arguments and schemas (issue 14, item 4): only ``ToolArgumentError`` at call time,
``ToolDefinitionError`` with the schema path at definition time, bounded time and message size."""

from __future__ import annotations

import json

import pytest

from tooluse import ToolArgumentError, ToolDefinition, ToolDefinitionError
from tooluse.tools.schema_safety import REGEX_ENGINE, compile_pattern


def lists(n: int) -> object:
    value: object = []
    for _ in range(n):
        value = [value]
    return value


def take(items: list, n: int = 0) -> str:
    """Take items."""
    return "ok"


ANY = ToolDefinition.from_schema("anything", {"type": "object", "properties": {"items": {}}})
TYPED = ToolDefinition.from_callable(take)
NUMBER = ToolDefinition.from_schema(
    "number", {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
)
TOOLS = pytest.mark.parametrize("tool", [ANY, TYPED], ids=["raw-schema", "callable"])


def refused(tool: ToolDefinition, arguments: object) -> str:
    with pytest.raises(ToolArgumentError) as info:
        tool.validate_arguments(arguments)
    return info.value.model_message


@TOOLS
def test_100k_nesting_is_refused_as_data_and_as_text(tool):
    assert "nested deeper than 64 levels" in refused(tool, {"items": lists(100_000)})
    text = '{"items": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "nested too deeply" in refused(tool, text)


def test_5000_digit_integers_are_refused_not_a_value_error():
    assert "integer too large" in refused(TYPED, {"items": [], "n": 10**5000})
    assert "integer too large" in refused(TYPED, '{"items": [], "n": ' + "9" * 5000 + "}")
    assert "expected integer" in refused(TYPED, {"items": [], "n": "9" * 5000})
    assert "integer too large" in refused(ANY, {"items": [10**5000]})


@pytest.mark.parametrize("tool", [NUMBER, TYPED], ids=["raw-schema", "callable"])
@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_for_numbers(tool, text):
    key = "x" if tool is NUMBER else "items"
    msg = refused(tool, f'{{"{key}": {text}}}')
    assert f"got {text}" in msg
    msg = refused(tool, {key: float(text.replace("Infinity", "inf"))})
    assert "got" in msg and "null" not in msg


def test_non_finite_allowed_where_the_function_type_allows_it():
    from typing import Annotated

    from pydantic import Field

    def scale(x: Annotated[float, Field(allow_inf_nan=True)]) -> float:
        """Scale."""
        return x

    tool = ToolDefinition.from_callable(scale)
    assert tool.validate_arguments('{"x": Infinity}')["x"] == float("inf")


@TOOLS
def test_non_string_keys_are_refused_without_internal_reprs(tool):
    msg = refused(tool, {"items": [{1: "a"}]})
    assert "items[0]: object keys must be strings" in msg
    assert "<" not in msg and "object at 0x" not in msg
    assert "object keys must be strings" in refused(tool, {3: "x"})


def test_catastrophic_pattern_is_linear_time():
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    tool = ToolDefinition.from_schema("p", schema)
    assert "does not match" in refused(tool, {"s": "a" * 40 + "!"})
    # the reference (jsonschema) path uses the same engine
    schema["properties"]["t"] = {"not": {"type": "null"}}
    tool = ToolDefinition.from_schema("p2", schema)
    assert tool.validator._fast is None
    assert "does not match" in refused(tool, {"s": "a" * 40 + "!"})
    assert tool.validate_arguments({"s": "aaaa"}) == {"s": "aaaa"}
    assert REGEX_ENGINE == "re2"


def test_patterns_re2_cannot_run_fall_back_only_when_bounded():
    assert compile_pattern(r"^(?=x)x+$")("xxx")  # lookahead: Python's re, no nested quantifier
    with pytest.raises(ToolDefinitionError, match=r"#/properties/s: pattern .*exponential"):
        ToolDefinition.from_schema(
            "p",
            {
                "type": "object",
                "properties": {"s": {"type": "string", "pattern": r"^(?=a)(a+)+\1$"}},
            },
        )


@pytest.mark.parametrize(
    ("schema", "where", "what"),
    [
        (
            {"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}},
            "#/properties/x",
            "dangling",
        ),
        (
            {
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/A"}},
                "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"allOf": [{"$ref": "#/$defs/A"}]}},
            },
            "#/",
            "cycle",
        ),
        (
            {"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}},
            "#/properties/x",
            "does not point inside",
        ),
    ],
)
def test_bad_refs_are_refused_at_definition_time_with_their_path(schema, where, what):
    with pytest.raises(ToolDefinitionError) as info:
        ToolDefinition.from_schema("bad", schema)
    assert where in str(info.value) and what in str(info.value)


def test_recursive_models_are_fine():
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    tool = ToolDefinition.from_schema("tree", schema)
    value = {"tree": {"kids": [{"kids": []}, {"kids": [{"kids": []}]}]}}
    assert tool.validate_arguments(value) == value


def test_deep_schemas_are_refused_at_definition_time():
    inner: dict = {"type": "string"}
    for _ in range(10_000):
        inner = {"type": "array", "items": inner}
    with pytest.raises(ToolDefinitionError, match="nested deeper than 64 levels"):
        ToolDefinition.from_schema("deep", {"type": "object", "properties": {"x": inner}})


def test_messages_stay_bounded_for_huge_enums_and_values():
    values = [f"value-{i}" for i in range(50_000)]
    tool = ToolDefinition.from_schema(
        "big", {"type": "object", "properties": {"x": {"enum": values}}, "required": ["x"]}
    )
    with pytest.raises(ToolArgumentError) as info:
        tool.validate_arguments({"x": "nope" * 50_000})
    err = info.value
    assert len(err.model_message) < 1_000 and len(str(err)) < 1_000
    assert "(50000 values in all)" in err.model_message
    assert json.dumps(err.errors)  # still plain data


def test_many_problems_and_long_names_stay_bounded():
    schema = {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(500)},
        "additionalProperties": False,
    }
    tool = ToolDefinition.from_schema("many", schema)
    arguments = {**{f"p{i}": "x" * 1000 for i in range(500)}, "k" * 10_000: 1}
    with pytest.raises(ToolArgumentError) as info:
        tool.validate_arguments(arguments)
    assert len(info.value.model_message) <= 4_000 and len(str(info.value)) <= 4_000
