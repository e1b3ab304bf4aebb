"""Tool retrieval: offer the model only the ``K`` tools most relevant to the request.

::

    result = tooluse.run(backend, "Book a flight to Oslo", tools=many_tools, tools_top_k=5)
    top = select_tools(definitions, "Book a flight to Oslo", k=5)         # BM25 by default
    top = select_tools(definitions, query, k=5, scorer=my_embedding_scorer)

Small models and call grammars get slower and worse as the toolset grows; a lexical scorer
(BM25 over each tool's name, description and parameter names and descriptions) picks the
likely ones first. Any object with ``score(query, tools) -> list[float]`` can replace it:
:class:`~tooluse.retrieval.embedding.EmbeddingScorer` (sentence embeddings, the ``embeddings``
extra), or :class:`RankFusionScorer` over both, which ranks a question's own function in the
top 5 more often than either alone (``benchmarks/bench_tool_search.py``). Ties keep the
tools' original order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from tooluse.messages import ChatMessage
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "BM25Scorer",
    "RankFusionScorer",
    "ToolScorer",
    "latest_request_text",
    "ranked_indices",
    "select_tools",
    "tool_text",
]

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@runtime_checkable
class ToolScorer(Protocol):
    """Scores tools against a request: higher is more relevant, one score per tool."""

    def score(self, query: str, tools: Sequence[ToolDefinition]) -> list[float]: ...


def _tokens(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", text).replace("_", " ").lower())


def _schema_words(schema: Any, depth: int = 0) -> list[str]:
    if depth > 4 or not isinstance(schema, Mapping):
        return []
    words: list[str] = []
    for name, sub in (schema.get("properties") or {}).items():
        words.append(str(name))
        if isinstance(sub, Mapping):
            words.append(str(sub.get("description", "")))
            words.extend(str(v) for v in sub.get("enum") or () if isinstance(v, str))
            words.extend(_schema_words(sub, depth + 1))
            words.extend(_schema_words(sub.get("items"), depth + 1))
    return words


def tool_text(tool: ToolDefinition) -> str:
    """What retrieval reads of a tool: name, description, parameter names and descriptions."""
    return " ".join([tool.name, tool.description, *_schema_words(tool.parameters_schema)])


class BM25Scorer:
    """Okapi BM25 over :func:`tool_text` (the tools are the documents of one query)."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, name_weight: int = 2) -> None:
        self.k1 = k1
        self.b = b
        self.name_weight = name_weight  # the name's words count this many times

    def _document(self, tool: ToolDefinition) -> list[str]:
        return _tokens(tool.name) * (self.name_weight - 1) + _tokens(tool_text(tool))

    def score(self, query: str, tools: Sequence[ToolDefinition]) -> list[float]:
        documents = [Counter(self._document(t)) for t in tools]
        if not documents:
            return []
        lengths = [sum(d.values()) for d in documents]
        average = sum(lengths) / len(lengths) or 1.0
        terms = set(_tokens(query))
        frequency = {t: sum(1 for d in documents if t in d) for t in terms}
        total = len(documents)
        scores = []
        for document, length in zip(documents, lengths, strict=True):
            value = 0.0
            for term in terms:
                tf = document.get(term, 0)
                if not tf:
                    continue
                idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                norm = tf + self.k1 * (1 - self.b + self.b * length / average)
                value += idf * tf * (self.k1 + 1) / norm
            scores.append(value)
        return scores


def ranked_indices(scores: Sequence[float]) -> list[int]:
    """Indices from the highest score to the lowest; ties keep their original order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


class RankFusionScorer:
    """Reciprocal rank fusion of several scorers: each tool scores the sum over scorers of
    ``1 / (k + rank)`` (rank 1 is a scorer's best), so scorers on different scales (BM25's
    unbounded sums, cosine similarities) combine without weights to tune. ``k=60`` is the
    customary constant; ties keep the tools' order within each scorer's ranking."""

    def __init__(self, *scorers: ToolScorer, k: float = 60.0) -> None:
        if not scorers:
            raise ValueError("RankFusionScorer needs at least one scorer")
        self.scorers = scorers
        self.k = k

    def score(self, query: str, tools: Sequence[ToolDefinition]) -> list[float]:
        fused = [0.0] * len(tools)
        for scorer in self.scorers:
            for rank, index in enumerate(ranked_indices(scorer.score(query, tools)), start=1):
                fused[index] += 1.0 / (self.k + rank)
        return fused


def select_tools(
    tools: Sequence[ToolDefinition],
    query: str,
    k: int,
    *,
    scorer: ToolScorer | None = None,
) -> tuple[ToolDefinition, ...]:
    """The ``k`` tools that score highest for ``query``, in their original order."""
    if k < 1:
        raise ValueError("tools_top_k must be at least 1")
    tools = tuple(tools)
    if len(tools) <= k:
        return tools
    scores = (scorer or BM25Scorer()).score(query, tools)
    if len(scores) != len(tools):
        raise ValueError(f"the tool scorer gave {len(scores)} scores for {len(tools)} tools")
    ranked = ranked_indices(scores)[:k]
    return tuple(tools[i] for i in sorted(ranked))


def latest_request_text(history: Sequence[ChatMessage]) -> str:
    """The text retrieval ranks against: the last user message (plus the system message,
    which often says what the conversation is about)."""
    user = next((m.content for m in reversed(history) if m.role == "user"), "")
    system = next((m.content for m in history if m.role == "system"), "")
    return f"{user}\n{system}" if system and not user else user
