"""The example tools of ``tooluse demo``: weather (made-up but stable), time and a calculator.

``get_time`` and ``calculate`` are real; ``get_weather`` returns invented weather derived from
the city name, so the demo runs offline and gives the same answer every time.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import operator
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Literal

from tooluse.messages import ToolCall
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "calculate",
    "demo_tools",
    "expression_check",
    "expression_in",
    "get_time",
    "get_weather",
]

CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "foggy", "snowy")


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: City name, e.g. Paris.
        unit: Temperature unit.
    """
    digest = hashlib.sha256(city.strip().lower().encode("utf-8")).digest()
    celsius = digest[0] % 35 - 5
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    conditions = CONDITIONS[digest[1] % len(CONDITIONS)]
    # A sentence rather than JSON: a 135M model repeats a sentence into its answer far more
    # reliably than it reads fields out of an object.
    symbol = "°C" if unit == "celsius" else "°F"
    return f"In {city} the temperature is {temperature} {symbol} and it is {conditions}."


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


_EXPRESSION = re.compile(r"[\d(][\d\s()+\-*/.%^]*[\d)]")


def expression_in(text: str) -> str | None:
    """The longest arithmetic expression written in ``text`` (it must hold an operator)."""
    found = [m.group(0).strip() for m in _EXPRESSION.finditer(text)]
    found = [f for f in found if re.search(r"\d\s*[-+*/%^]\s*[\d(]", f)]
    return max(found, key=len) if found else None


def _value(expression: str) -> Any:
    try:
        return calculate(expression)
    except (ValueError, ZeroDivisionError, TypeError):
        return None


def expression_check(question: str) -> Callable[[ToolCall], ToolCall | None]:
    """A ``before_tool_call`` hook for ``calculate``: when the question writes an expression and
    the model's expression uses the same numbers but computes another value (the 135M model
    drops brackets: ``12 * (3 + 4)`` becomes ``12 * 3 + 4``), the call is corrected to the
    question's expression. The correction is recorded in the call's id-keyed ``corrections``
    (the demo prints it), so nothing is hidden."""
    wanted = expression_in(question)

    def check(call: ToolCall) -> ToolCall | None:
        if call.name != "calculate" or wanted is None:
            return None
        written = str(call.arguments.get("expression", ""))
        numbers = re.findall(r"\d+(?:\.\d+)?", written)
        if numbers != re.findall(r"\d+(?:\.\d+)?", wanted):
            return None
        if _value(written) == _value(wanted):
            return None
        check.corrections[call.id] = (written, wanted)  # type: ignore[attr-defined]
        return dataclasses.replace(call, arguments={**call.arguments, "expression": wanted})

    check.corrections = {}  # type: ignore[attr-defined]
    return check


def demo_tools() -> list[ToolDefinition]:
    """Definitions of the three demo tools (with their functions attached)."""
    return [
        ToolDefinition.from_callable(get_weather),
        ToolDefinition.from_callable(get_time, name="get_time"),
        ToolDefinition.from_callable(calculate),
    ]
