"""Tools served by ``tooluse mcp serve`` in the tests: written with tooluse's ``@tool``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from tooluse.tools import ToolRegistry, tool

# A private registry: importing this module in a test must not add names to the global one.
_registry = ToolRegistry()


class Forecast(BaseModel):
    city: str
    celsius: float
    sky: Literal["clear", "cloudy"]


@tool(registry=_registry)
def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@tool(registry=_registry)
async def forecast(city: str, unit: Literal["C", "F"] = "C") -> Forecast:
    """A fixed forecast for a city.

    Args:
        city: City name.
        unit: Temperature unit.
    """
    return Forecast(city=city, celsius=20.0 if unit == "C" else 68.0, sky="clear")


@tool(registry=_registry)
def explode(message: str) -> str:
    """Always raises.

    Args:
        message: The error text.
    """
    raise RuntimeError(message)


def helper_not_a_tool() -> None:
    """Not decorated, so not served (the module has @tool functions)."""
