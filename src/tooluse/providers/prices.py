"""What a request to a hosted model cost: a dated price table (``data/prices.json``, USD per
million tokens, standard requests) and :func:`cost_of`, which the HTTP backends use to fill
``Usage.cost``. A model the table does not know has no cost (``None``), never a guess. Cached
prompt tokens are counted at the entry's ``cache_read`` / ``cache_write`` price when it has one,
else at its input price.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from tooluse.messages import Usage

__all__ = ["Price", "cost_of", "price_of", "prices_as_of", "register_price"]

# The Responses API and OpenAI-compatible names share OpenAI's prices.
_PROVIDER_TABLE = {"openai": "openai", "openai-responses": "openai"}
_REGISTERED: dict[tuple[str, str], Price] = {}


@dataclass(frozen=True, kw_only=True)
class Price:
    """USD per million input and output tokens, and prompt tokens read from / written to the
    provider's cache (``None``: at the input price)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    text = resources.files("tooluse.providers").joinpath("data/prices.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def prices_as_of() -> str:
    """When the table's prices were published (``YYYY-MM``)."""
    return str(_table()["as_of"])


def register_price(
    provider: str,
    model: str,
    *,
    input: float,
    output: float,
    cache_read: float | None = None,
    cache_write: float | None = None,
) -> None:
    """Use this price for ``model`` (and the dated versions it prefixes) from now on."""
    _REGISTERED[(provider, model)] = Price(
        input=input, output=output, cache_read=cache_read, cache_write=cache_write
    )


def _entry(data: dict[str, Any]) -> Price:
    def optional(key: str) -> float | None:
        return float(data[key]) if data.get(key) is not None else None

    return Price(
        input=float(data["input"]),
        output=float(data["output"]),
        cache_read=optional("cache_read"),
        cache_write=optional("cache_write"),
    )


def price_of(provider: str, model: str) -> Price | None:
    """The price of ``model``: an exact entry, else the longest entry its name starts with
    (``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``); ``None`` when the table has none."""
    table_name = _PROVIDER_TABLE.get(provider, provider)
    known: dict[str, Price] = {
        name: _entry(p) for name, p in _table()["prices"].get(table_name, {}).items()
    }
    known.update({m: p for (prov, m), p in _REGISTERED.items() if prov == provider})
    name = model.split("/")[-1]
    if name in known:
        return known[name]
    prefixes = [entry for entry in known if name.startswith(entry + "-")]
    return known[max(prefixes, key=len)] if prefixes else None


def cost_of(usage: Usage, provider: str, model: str) -> Usage:
    """``usage`` with its cost filled in when the model's price is known."""
    price = price_of(provider, model)
    if price is None:
        return usage
    read, written = usage.cache_read_tokens, usage.cache_write_tokens
    uncached = max(usage.input_tokens - read - written, 0)
    cost = (
        uncached * price.input
        + read * (price.input if price.cache_read is None else price.cache_read)
        + written * (price.input if price.cache_write is None else price.cache_write)
        + usage.output_tokens * price.output
    ) / 1_000_000
    return replace(usage, cost=round(cost, 10))
