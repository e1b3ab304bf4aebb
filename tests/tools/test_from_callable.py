"""ToolDefinition.from_callable: signature + docstring -> schema, injected parameters, errors."""

from __future__ import annotations

import dataclasses
import enum
import warnings
from typing import Annotated, Any, Literal, Optional, TypedDict

import jsonschema
import pytest
from pydantic import BaseModel, Field

from tooluse import (
    Injected,
    ToolContext,
    ToolDefinition,
    ToolDefinitionError,
    ToolParameter,
    ToolParameterType,
)
from tooluse.tools import ToolDefinitionWarning, sanitize_tool_name


def get_weather(city: str, units: str = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
        units: Temperature units (celsius or fahrenheit).
    """
    return f"{city}:{units}"


def test_llenvs_seed_from_callable():
    tool = ToolDefinition.from_callable(get_weather)
    assert tool.name == "get_weather"
    assert tool.description == "Get the current weather for a city."
    city, units = tool.parameters
    assert (city.name, city.type, city.required, city.description) == (
        "city",
        ToolParameterType.STRING,
        True,
        "The city name.",
    )
    assert (units.name, units.type, units.required) == ("units", ToolParameterType.STRING, False)
    assert units.description == "Temperature units (celsius or fahrenheit)."
    schema = tool.parameters_schema
    assert schema["required"] == ["city"]
    assert schema["properties"]["units"]["default"] == "celsius"
    assert "title" not in schema and "title" not in schema["properties"]["city"]


def test_override_name_description_terminal():
    tool = ToolDefinition.from_callable(
        get_weather, name="submit", description="Submit it", is_terminal=True
    )
    assert (tool.name, tool.description, tool.is_terminal) == ("submit", "Submit it", True)


def test_basic_type_mapping():
    def f(a: str, b: int, c: float, d: bool, e: list, g: dict, h: list[int], i: dict[str, Any]):
        """F."""

    props = ToolDefinition.from_callable(f).parameters_schema["properties"]
    assert [props[k]["type"] for k in "abcdegh"] == [
        "string", "integer", "number", "boolean", "array", "object", "array"
    ]  # fmt: skip
    assert props["h"]["items"] == {"type": "integer"}
    assert props["i"]["type"] == "object"
    types = [p.type for p in ToolDefinition.from_callable(f).parameters]
    assert types[:6] == [
        ToolParameterType.STRING,
        ToolParameterType.INTEGER,
        ToolParameterType.NUMBER,
        ToolParameterType.BOOLEAN,
        ToolParameterType.ARRAY,
        ToolParameterType.OBJECT,
    ]


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    """A point."""

    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float
    label: str = ""


class Movie(TypedDict):
    title: str
    year: int


def test_rich_types_become_real_schemas():
    def f(
        mode: Literal["fast", "slow"],
        color: Color,
        point: Point,
        box: Box,
        movie: Movie,
        pair: tuple[int, str],
        maybe: Optional[int] = None,
        either: int | str = 1,
    ) -> None:
        """F."""

    schema = ToolDefinition.from_callable(f).parameters_schema
    props = schema["properties"]
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["color"]["enum"] == ["red", "blue"]
    assert props["point"]["type"] == "object"
    assert props["point"]["required"] == ["x"]
    assert props["box"]["properties"]["width"]["type"] == "number"
    assert props["movie"]["required"] == ["title", "year"]
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert {"type": "null"} in props["maybe"]["anyOf"]
    assert schema["required"] == ["mode", "color", "point", "box", "movie", "pair"]
    assert "$defs" not in schema  # non-recursive models are inlined
    jsonschema.Draft202012Validator.check_schema(schema)


def test_annotated_and_field_descriptions_and_constraints():
    def f(
        a: Annotated[int, "how many"],
        b: Annotated[int, Field(ge=1, description="at least one")],
        c: str = Field("x", description="a letter"),
    ) -> None:
        """F."""

    props = ToolDefinition.from_callable(f).parameters_schema["properties"]
    assert props["a"] == {"type": "integer", "description": "how many"}
    assert props["b"]["minimum"] == 1 and props["b"]["description"] == "at least one"
    assert props["c"]["description"] == "a letter" and props["c"]["default"] == "x"


@pytest.mark.parametrize(
    "doc",
    [
        "Sum two numbers.\n\nArgs:\n    a: first number\n    b: second number\n",
        "Sum two numbers.\n\nParameters\n----------\na : int\n    first number\nb : int\n    second number\n",
        "Sum two numbers.\n\n:param a: first number\n:param b: second number\n",
    ],
    ids=["google", "numpy", "rest"],
)
def test_docstring_styles(doc):
    def add(a: int, b: int) -> int:
        return a + b

    add.__doc__ = doc
    tool = ToolDefinition.from_callable(add)
    assert tool.description == "Sum two numbers."
    props = tool.parameters_schema["properties"]
    assert props["a"]["description"] == "first number"
    assert props["b"]["description"] == "second number"


def test_docstring_mismatch_warns_naming_parameters():
    def f(a: int, b: int) -> None:
        """F.

        Args:
            a: the a
            zz: not a parameter
        """

    with pytest.warns(ToolDefinitionWarning, match=r"zz.*\n?.*|b"):
        tool = ToolDefinition.from_callable(f)
    assert set(tool.parameters_schema["properties"]) == {"a", "b"}


def test_undocumented_function_does_not_warn():
    def f(a: int):
        return a

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool = ToolDefinition.from_callable(f)
    assert tool.description == ""


def test_unannotated_parameters_are_strings_or_default_type():
    def f(a, b=3, c=None):
        """F."""

    tool = ToolDefinition.from_callable(f)
    props = tool.parameters_schema["properties"]
    assert props["a"]["type"] == "string"
    assert props["b"]["type"] == "integer"
    assert props["c"]["type"] == "string"
    # the fallback accepts what the model sends instead of failing on an unknown type
    assert tool.validate_arguments({"a": 5})["a"] == 5


def test_var_args_and_kwargs_are_refused_at_definition_time():
    def f(*items: int) -> None: ...

    def g(**options: str) -> None: ...

    with pytest.raises(ToolDefinitionError, match=r"\*items"):
        ToolDefinition.from_callable(f)
    with pytest.raises(ToolDefinitionError, match=r"\*\*options"):
        ToolDefinition.from_callable(g)


def test_unsupported_annotation_is_a_clear_error():
    class Opaque:
        pass

    def f(x: Opaque) -> None: ...

    with pytest.raises(ToolDefinitionError, match="cannot be described"):
        ToolDefinition.from_callable(f)


def test_invalid_names_are_refused_with_a_suggestion():
    with pytest.raises(ToolDefinitionError, match="invalid tool name"):
        ToolDefinition.from_callable(lambda x: x)
    with pytest.raises(ToolDefinitionError, match="my_tool"):
        ToolDefinition(name="my tool!")
    with pytest.raises(ToolDefinitionError):
        ToolDefinition(name="a" * 65)
    assert sanitize_tool_name("web.search v2") == "web_search_v2"
    ToolDefinition.from_callable(lambda x: x, name="identity")


def test_duplicate_parameter_names_raise():
    with pytest.raises(ToolDefinitionError, match="duplicate"):
        ToolDefinition(name="t", parameters=(ToolParameter("a"), ToolParameter("a")))


def test_injected_parameters_are_hidden():
    class Db:
        pass

    def f(
        agent: Any,
        query: str,
        db: Injected[Db],
        ctx: ToolContext,
        context2: Annotated[ToolContext, "x"],
    ) -> str:
        """Search.

        Args:
            agent: provided automatically
            query: what to look for
        """
        return query

    tool = ToolDefinition.from_callable(f)
    assert list(tool.parameters_schema["properties"]) == ["query"]
    assert set(tool.injected) == {"agent", "db", "ctx", "context2"}


class Node(BaseModel):
    value: int
    children: list[Node] = []


def test_recursive_model_uses_defs_and_ref():
    def f(tree: Node) -> int:
        """Sum a tree."""
        return 0

    schema = ToolDefinition.from_callable(f).parameters_schema
    assert "Node" in schema["$defs"]
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/Node"}
    jsonschema.Draft202012Validator.check_schema(schema)


def test_async_function_and_output_schema():
    async def f(n: int) -> list[int]:
        """Count."""
        return list(range(n))

    tool = ToolDefinition.from_callable(f)
    assert tool.is_async
    assert tool.output_schema == {"type": "array", "items": {"type": "integer"}}


def test_callable_object_and_method():
    class Counter:
        def __call__(self, step: int = 1) -> int:
            """Advance the counter."""
            return step

        def reset(self, to: int) -> int:
            """Reset."""
            return to

    obj = Counter()
    t1 = ToolDefinition.from_callable(obj, name="counter")
    assert list(t1.parameters_schema["properties"]) == ["step"]
    assert t1.description == "Advance the counter."
    t2 = ToolDefinition.from_callable(obj.reset)
    assert t2.name == "reset" and t2.invoke({"to": "4"}) == 4


def test_parameter_names_that_shadow_model_attributes():
    def f(json: str, schema: int, model_config: str = "x") -> str:
        """F."""
        return f"{json}{schema}{model_config}"

    tool = ToolDefinition.from_callable(f)
    assert list(tool.parameters_schema["properties"]) == ["json", "schema", "model_config"]
    assert tool.invoke({"json": "a", "schema": 2}) == "a2x"
