"""Argument validation speed: tooluse validators vs ``jsonschema`` on the same schemas.

For each typical tool schema (a function tool, a raw JSON Schema tool, a structured-output
tool with ten fields, a nested one) both sides validate the same valid arguments:

- baseline: ``jsonschema``'s validator for the tool's exported schema, built once, then
  ``validator.validate(arguments)`` per call (its fastest documented use);
- tooluse: ``ToolDefinition.validate_arguments(arguments)`` (validator compiled once per tool).

Figures are calls per second (best of several rounds) and the speed-up ratio.
"""

from __future__ import annotations

import time
from typing import Any, Literal, Optional

import jsonschema
from pydantic import BaseModel

from tooluse import ToolDefinition

ROUNDS = 5
TARGET_SECONDS = 0.25  # per round and side


def get_weather(
    city: str, units: Literal["celsius", "fahrenheit"] = "celsius", days: int = 1
) -> str:
    """Get the weather.

    Args:
        city: The city name.
        units: Temperature units.
        days: How many days of forecast.
    """
    return city


def Movie(  # noqa: PLR0913 -- the signature is the record's ten fields
    title: str,
    rating_value: float,
    rating_count: str,
    desc: str,
    genre: str,
    duration: str,
    publish_date: str,
    stars: str,
    director: str,
    writer: str,
) -> None:
    """Extracted information for a movie."""


class LineItem(BaseModel):
    sku: str
    quantity: int
    price: float


class Address(BaseModel):
    street: str
    city: str
    country: str = "FR"


def place_order(
    customer: str, items: list[LineItem], address: Address, note: Optional[str] = None
) -> str:
    """Place an order."""
    return customer


RAW_TEMPERATURE = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City, State, Country"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location"],
}

CASES: list[tuple[str, ToolDefinition, dict[str, Any]]] = [
    (
        "function (3 params)",
        ToolDefinition.from_callable(get_weather),
        {"city": "Paris", "units": "fahrenheit", "days": 3},
    ),
    (
        "raw JSON Schema",
        ToolDefinition.from_schema("get_current_temperature", RAW_TEMPERATURE),
        {"location": "Paris, Ile-de-France, France", "unit": "celsius"},
    ),
    (
        "Movie (10 strings)",
        ToolDefinition.from_callable(Movie),
        {
            "title": "Avatar: Fire and Ash",
            "rating_value": 7.5,
            "rating_count": "46K",
            "desc": "Jake and Neytiri's family grapples with grief.",
            "genre": "Action, Adventure",
            "duration": "3h 17m",
            "publish_date": "December 19, 2025",
            "stars": "Sam Worthington, Zoe Saldana",
            "director": "James Cameron",
            "writer": "James Cameron, Rick Jaffa, Amanda Silver",
        },
    ),
    (
        "nested models",
        ToolDefinition.from_callable(place_order),
        {
            "customer": "ada",
            "items": [
                {"sku": "A1", "quantity": 2, "price": 9.5},
                {"sku": "B7", "quantity": 1, "price": 120.0},
            ],
            "address": {"street": "1 rue de la Paix", "city": "Paris"},
        },
    ),
]


def _rate(fn: Any, arguments: dict[str, Any]) -> float:
    """Calls per second, best of ROUNDS rounds of about TARGET_SECONDS each."""
    n = 100
    while True:  # calibrate the batch size
        started = time.perf_counter()
        for _ in range(n):
            fn(arguments)
        elapsed = time.perf_counter() - started
        if elapsed >= TARGET_SECONDS / 4:
            break
        n *= 4
    batch = max(1, int(n * TARGET_SECONDS / elapsed))
    best = 0.0
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(batch):
            fn(arguments)
        best = max(best, batch / (time.perf_counter() - started))
    return best


def main() -> dict:
    rows = []
    for label, definition, arguments in CASES:
        schema = definition.parameters_schema
        reference = jsonschema.validators.validator_for(schema)(schema)
        reference.validate(arguments)  # same arguments are valid for both
        definition.validate_arguments(arguments)
        baseline = _rate(reference.validate, arguments)
        ours = _rate(definition.validate_arguments, arguments)
        rows.append(
            {
                "case": label,
                "jsonschema_calls_per_s": round(baseline),
                "tooluse_calls_per_s": round(ours),
                "speedup": round(ours / baseline, 2),
            }
        )
    print(f"{'case':<22} {'jsonschema/s':>14} {'tooluse/s':>12} {'speed-up':>9}")
    for r in rows:
        print(
            f"{r['case']:<22} {r['jsonschema_calls_per_s']:>14,} {r['tooluse_calls_per_s']:>12,} "
            f"{r['speedup']:>8.1f}x"
        )
    speedups = [r["speedup"] for r in rows]
    geo = 1.0
    for s in speedups:
        geo *= s
    geo **= 1 / len(speedups)
    print(f"geometric mean speed-up: {geo:.1f}x (target >= 3x)")
    return {"cases": rows, "geomean_speedup": round(geo, 2), "min_speedup": min(speedups)}


if __name__ == "__main__":
    main()
