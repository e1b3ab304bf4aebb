"""Provider schema exports: shapes, strict mode, Gemini subset, drop reports, round trips."""

from __future__ import annotations

from typing import Any, Literal, Optional

import jsonschema
import pytest
from pydantic import BaseModel, Field

from tooluse import ToolArgumentError, ToolDefinition, ToolParameter, ToolParameterType
from tooluse.tools.schema_export import GEMINI_ALLOWED_KEYWORDS, STRICT_ALLOWED_KEYWORDS


class Address(BaseModel):
    street: str
    zip_code: str = Field(pattern=r"^\d{5}$")


class TreeNode(BaseModel):
    value: int
    children: list[TreeNode] = []


def ship(
    customer: str,
    address: Address,
    priority: Literal["low", "high"] = "low",
    quantity: int = Field(1, ge=1, le=99),
    note: Optional[str] = None,
    gift: bool = False,
) -> str:
    """Ship an order.

    Args:
        customer: who receives it
        address: where to send it
        priority: how fast
        quantity: how many
        note: free text
        gift: wrap it
    """
    return customer


def count_tree(tree: TreeNode) -> int:
    """Count nodes."""
    return 1


def tag_counts(counts: dict[str, int]) -> int:
    """Sum counts."""
    return sum(counts.values())


SHIP = ToolDefinition.from_callable(ship)


def _walk(schema: Any):
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                for sub in value.values():
                    yield from _walk(sub)
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                yield from _walk(value)
            elif key == "anyOf":
                for sub in value:
                    yield from _walk(sub)


def test_provider_shapes():
    assert SHIP.to_openai_schema()["type"] == "function"
    assert SHIP.to_openai_schema()["function"]["parameters"] == SHIP.parameters_schema
    assert "strict" not in SHIP.to_openai_schema()["function"]
    resp = SHIP.to_openai_responses_schema()
    assert resp["type"] == "function" and resp["name"] == "ship" and resp["strict"] is False
    assert SHIP.to_anthropic_schema()["input_schema"] == SHIP.parameters_schema
    assert SHIP.to_bedrock_schema()["toolSpec"]["inputSchema"]["json"] == SHIP.parameters_schema
    mcp = SHIP.to_mcp_schema()
    assert mcp["inputSchema"] == SHIP.parameters_schema and mcp["name"] == "ship"
    gemini = SHIP.to_gemini_schema()
    assert gemini["name"] == "ship" and gemini["parameters"]["type"] == "object"


def test_llenvs_manual_definition_exports():
    weather = ToolDefinition(
        name="get_weather",
        description="Get the current weather for a city",
        parameters=(
            ToolParameter(name="city", type=ToolParameterType.STRING, description="The city name"),
            ToolParameter(
                name="units",
                type=ToolParameterType.STRING,
                description="Temperature units",
                required=False,
                enum=("celsius", "fahrenheit"),
            ),
        ),
    )
    assert weather.to_openai_schema() == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name"},
                    "units": {
                        "type": "string",
                        "enum": ["celsius", "fahrenheit"],
                        "description": "Temperature units",
                    },
                },
                "required": ["city"],
            },
        },
    }
    assert weather.to_anthropic_schema()["input_schema"]["required"] == ["city"]


def test_no_argument_tool_exports():
    def today() -> str:
        """Get today's date in YYYY-MM-DD."""
        return "2025-12-25"

    t = ToolDefinition.from_callable(today)
    assert t.to_openai_schema()["function"] == {
        "name": "today",
        "description": "Get today's date in YYYY-MM-DD.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    }
    assert "parameters" not in t.to_gemini_schema()


def test_strict_mode_keeps_optional_meaning():
    export = SHIP.export("openai", strict=True)
    assert export.strict and export.schema["function"]["strict"] is True
    params = export.schema["function"]["parameters"]
    for node in _walk(params):
        assert set(node) <= STRICT_ALLOWED_KEYWORDS, set(node) - STRICT_ALLOWED_KEYWORDS
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert set(node["required"]) == set(node["properties"])
    # optional became nullable; the default is mentioned for the model
    assert params["properties"]["gift"]["type"] == ["boolean", "null"]
    assert "default: false" in params["properties"]["gift"]["description"]
    rewritten = {c.path for c in export.changes if c.keyword == "required"}
    assert "/properties/gift" in rewritten and "/properties/customer" not in rewritten
    # a null from the model restores the default
    args = {"customer": "ada", "address": {"street": "x", "zip_code": "75001"}, "priority": None,
            "quantity": None, "note": None, "gift": None}  # fmt: skip
    jsonschema.validate(args, params)
    assert SHIP.validate_arguments(args) == {
        "customer": "ada",
        "address": Address(street="x", zip_code="75001"),
        "priority": "low",
        "quantity": 1,
        "note": None,
        "gift": False,
    }


def test_strict_falls_back_for_free_form_mappings_and_reports_why():
    t = ToolDefinition.from_callable(tag_counts)
    export = t.export("openai", strict=True)
    assert export.strict is False
    assert export.schema["function"]["strict"] is False
    assert export.schema["function"]["parameters"]["properties"]["counts"][
        "additionalProperties"
    ] == {"type": "integer"}
    assert any(c.keyword == "strict" and "free-form" in c.detail for c in export.dropped)


def test_strict_drops_unsupported_keywords_and_reports_them():
    t = ToolDefinition.from_schema(
        "name_it",
        {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 3, "format": "hostname"}},
            "required": ["name"],
        },
    )
    export = t.export("anthropic", strict=True)
    prop = export.schema["input_schema"]["properties"]["name"]
    assert "minLength" not in prop and prop["format"] == "hostname"
    assert "minLength: 3" in prop["description"]
    assert [c.keyword for c in export.dropped] == ["minLength"]
    # the dropped constraint is still enforced on the way back
    with pytest.raises(ToolArgumentError, match="name"):
        t.validate_arguments({"name": "ab"})


def test_gemini_subset():
    export = SHIP.export("gemini")
    params = export.schema["parameters"]
    for node in _walk(params):
        assert set(node) <= GEMINI_ALLOWED_KEYWORDS, set(node) - GEMINI_ALLOWED_KEYWORDS
        assert "anyOf" not in node or all(b.get("type") != "null" for b in node["anyOf"])
    assert params["properties"]["note"] == {
        "type": "string",
        "description": "free text",
        "default": None,
        "nullable": True,
    }
    # integer bounds survive, additionalProperties does not need reporting (closed by default)
    assert params["properties"]["quantity"]["minimum"] == 1
    int_enum = ToolDefinition.from_schema(
        "pick", {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2, 3]}}}
    ).export("gemini")
    n = int_enum.schema["parameters"]["properties"]["n"]
    assert "enum" not in n and "allowed values: 1, 2, 3" in n["description"]
    assert [c.keyword for c in int_enum.dropped] == ["enum"]


def test_gemini_cuts_recursive_models_and_reports_the_cut():
    export = ToolDefinition.from_callable(count_tree).export("gemini")
    assert "$ref" not in str(export.schema) and "$defs" not in str(export.schema)
    assert any(c.keyword == "$ref" and "recursion" in c.detail for c in export.dropped)
    depth, node = 0, export.schema["parameters"]["properties"]["tree"]
    while "properties" in node:
        node = node["properties"]["children"]["items"]
        depth += 1
    assert depth >= 2


def test_unknown_provider():
    from tooluse import SchemaExportError

    with pytest.raises(SchemaExportError, match="unknown provider"):
        SHIP.export("cohere-v9")


def _openapi_to_json_schema(schema: Any) -> Any:
    """Gemini's OpenAPI subset as JSON Schema (``nullable: true`` -> a ``null`` type)."""
    if isinstance(schema, list):
        return [_openapi_to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _openapi_to_json_schema(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable") is True and isinstance(schema.get("type"), str):
        out["type"] = [schema["type"], "null"]
    if "properties" in schema:  # property names are data, not schemas
        out["properties"] = {k: _openapi_to_json_schema(v) for k, v in schema["properties"].items()}
    return out


def _exported_parameters(provider: str, strict: bool) -> dict[str, Any]:
    schema = SHIP.export(provider, strict=strict).schema
    if provider == "openai":
        return schema["function"]["parameters"]  # type: ignore[no-any-return]
    if provider == "openai_responses":
        return schema["parameters"]  # type: ignore[no-any-return]
    if provider == "anthropic":
        return schema["input_schema"]  # type: ignore[no-any-return]
    if provider == "bedrock":
        return schema["toolSpec"]["inputSchema"]["json"]  # type: ignore[no-any-return]
    if provider == "mcp":
        return schema["inputSchema"]  # type: ignore[no-any-return]
    return _openapi_to_json_schema(schema["parameters"])  # type: ignore[no-any-return]


ROUND_TRIP_EXPORTS = [
    *[
        (p, s)
        for p in ("openai", "openai_responses", "anthropic", "bedrock")
        for s in (False, True)
    ],
    ("gemini", False),
    ("mcp", False),
]

FULL_SAMPLE = {
    "customer": "a",
    "address": {"street": "s", "zip_code": "12345"},
    "priority": "high",
    "quantity": 5,
    "note": "hi",
    "gift": True,
}
NULL_SAMPLE = {
    "customer": "b",
    "address": {"street": "t", "zip_code": "54321"},
    "priority": None,
    "quantity": None,
    "note": None,
    "gift": None,
}
MINIMAL_SAMPLE = {"customer": "c", "address": {"street": "u", "zip_code": "00000"}}


@pytest.mark.parametrize(("provider", "strict"), ROUND_TRIP_EXPORTS)
def test_round_trip_exported_schema_and_validation_agree(provider, strict):
    params = _exported_parameters(provider, strict)
    jsonschema.Draft202012Validator.check_schema(params)
    exported = jsonschema.Draft202012Validator(params)
    is_strict = SHIP.export(provider, strict=strict).strict
    # A complete call is valid for every export, and the strict exports accept null for
    # every optional argument (null means "use the default").
    assert exported.is_valid(FULL_SAMPLE)
    assert exported.is_valid(NULL_SAMPLE) == is_strict
    for sample in (FULL_SAMPLE, NULL_SAMPLE, MINIMAL_SAMPLE):
        if exported.is_valid(sample):
            arguments = SHIP.validate_arguments(sample)  # accepted by the export => by us
            if sample is NULL_SAMPLE:
                assert (arguments["priority"], arguments["quantity"], arguments["gift"]) == (
                    "low",
                    1,
                    False,
                )
        report = SHIP.validate_arguments_report(sample)
        if not report.coercions and not is_strict:
            # accepted by us as sent => accepted by the export (strict ones demand every key)
            assert exported.is_valid(sample), sample
    for bad in (
        {**FULL_SAMPLE, "priority": "urgent"},
        {**FULL_SAMPLE, "quantity": 100},
        {**FULL_SAMPLE, "address": {"street": "s", "zip_code": "1234"}},
        {"address": {"street": "s", "zip_code": "12345"}},
    ):
        assert not exported.is_valid(bad), bad
        with pytest.raises(ToolArgumentError):
            SHIP.validate_arguments(bad)


def test_exports_are_cached_but_callers_cannot_corrupt_them():
    first = SHIP.to_openai_schema()
    first["function"]["name"] = "changed"
    assert SHIP.to_openai_schema()["function"]["name"] == "ship"
