"""The example tools of ``tooluse demo``: weather (made-up but stable), time and a calculator.

``get_time`` and ``calculate`` are real; ``get_weather`` returns invented weather derived from
the city name, so the demo runs offline and gives the same answer every time.
"""

from __future__ import annotations

import ast
import hashlib
import operator
from datetime import datetime, timezone
from typing import Any, Literal

from tooluse.tools.definition import ToolDefinition

__all__ = ["calculate", "demo_tools", "get_time", "get_weather"]

CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "foggy", "snowy")


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Get the current weather for a city.

    Args:
        city: City name, e.g. Paris.
        unit: Temperature unit.
    """
    digest = hashlib.sha256(city.strip().lower().encode("utf-8")).digest()
    celsius = digest[0] % 35 - 5
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return {
        "city": city,
        "temperature": temperature,
        "unit": unit,
        "conditions": CONDITIONS[digest[1] % len(CONDITIONS)],
    }


def get_time(timezone_name: str = "UTC") -> str:
    """Get the current local time in a timezone.

    Args:
        timezone_name: IANA timezone name, e.g. Europe/Paris or America/New_York.
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        zone: Any = ZoneInfo(timezone_name) if timezone_name.upper() != "UTC" else timezone.utc
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown timezone {timezone_name!r}; use an IANA name") from exc
    return datetime.now(zone).strftime(f"%Y-%m-%d %H:%M ({timezone_name})")


_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def calculate(expression: str) -> float | int:
    """Evaluate an arithmetic expression with + - * / // % ** and parentheses.

    Args:
        expression: The expression, e.g. 2 * (3 + 4).
    """
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    return _evaluate(tree.body)


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"unsupported element in expression: {ast.dump(node)[:60]}")


def demo_tools() -> list[ToolDefinition]:
    """Definitions of the three demo tools (with their functions attached)."""
    return [
        ToolDefinition.from_callable(get_weather),
        ToolDefinition.from_callable(get_time, name="get_time"),
        ToolDefinition.from_callable(calculate),
    ]
