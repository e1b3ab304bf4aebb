"""Tool retrieval: BM25 over tools, pluggable scorers, ``tools_top_k`` in the loop."""

from __future__ import annotations

import pytest

from tooluse import ScriptedBackend, ToolCall, ToolDefinition, arun, run
from tooluse.retrieval import BM25Scorer, ToolScorer, select_tools


def make(name, description, **params):
    return ToolDefinition.from_schema(
        name,
        {
            "type": "object",
            "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
        },
        description=description,
    )


TOOLS = [
    make("get_weather", "Current weather for a city", city="City name"),
    make("book_flight", "Book a flight between two airports", origin="From", destination="To"),
    make("convert_currency", "Convert an amount between currencies", amount="Amount"),
    make("send_email", "Send an email message", to="Recipient", body="Text"),
    make("get_stock_price", "Latest stock price of a ticker", ticker="Ticker symbol"),
    make("translate_text", "Translate text into another language", text="Text", language="Lang"),
]


def test_bm25_ranks_the_matching_tool_first():
    scores = BM25Scorer().score("what's the weather like in Paris today?", TOOLS)
    assert max(range(len(TOOLS)), key=scores.__getitem__) == 0
    scores = BM25Scorer().score("I need a flight to Oslo from Berlin airport", TOOLS)
    assert max(range(len(TOOLS)), key=scores.__getitem__) == 1
    assert BM25Scorer().score("anything", []) == []


def test_select_tools_keeps_order_and_checks_k():
    top = select_tools(TOOLS, "stock price of AAPL, then email it", 2)
    assert [t.name for t in top] == ["send_email", "get_stock_price"]  # original order
    assert select_tools(TOOLS[:2], "x", 5) == tuple(TOOLS[:2])
    with pytest.raises(ValueError, match="at least 1"):
        select_tools(TOOLS, "x", 0)


def test_a_custom_scorer_replaces_bm25():
    class Last:
        def score(self, query, tools):
            return [float(i) for i in range(len(tools))]

    assert isinstance(Last(), ToolScorer)
    assert [t.name for t in select_tools(TOOLS, "weather", 1, scorer=Last())] == ["translate_text"]

    class Broken:
        def score(self, query, tools):
            return [1.0]

    with pytest.raises(ValueError, match="gave 1 scores for 6 tools"):
        select_tools(TOOLS, "weather", 2, scorer=Broken())


def weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: City name.
    """
    return f"sunny in {city}"


def stock(ticker: str) -> str:
    """Latest stock price of a ticker.

    Args:
        ticker: Ticker symbol.
    """
    return f"{ticker}: 100"


def email(to: str) -> str:
    """Send an email message.

    Args:
        to: Recipient.
    """
    return "sent"


def test_run_offers_only_the_top_k_tools_but_runs_any_called_tool():
    backend = ScriptedBackend([[ToolCall(name="stock", arguments={"ticker": "AAPL"})], "done"])
    result = run(
        backend, "How is the weather in Lima?", tools=[stock, weather, email], tools_top_k=1
    )
    assert [t.name for t in backend.requests[0].tools] == ["weather"]
    assert result.trail[0].name == "stock" and not result.trail[0].is_error
    with pytest.raises(ValueError, match="tools_top_k must be >= 1"):
        run(ScriptedBackend(["x"]), "hi", tools=[stock], tools_top_k=0)


async def test_arun_takes_tools_top_k_too():
    backend = ScriptedBackend(["fine"])
    await arun(backend, "send an email to Ada", tools=[stock, weather, email], tools_top_k=1)
    assert [t.name for t in backend.requests[0].tools] == ["email"]
