"""``ToolSearch``: a large toolset offered through one ``search_tools`` tool.

::

    result = tooluse.run(backend, "Book a flight to Oslo", tools=ToolSearch(many_tools, top_k=5))

The model first sees only ``search_tools(query)`` (and the tools named in ``always``); the
tools its query matches (BM25 over names, descriptions and parameters, or any
:class:`~tooluse.retrieval.scorers.ToolScorer`) are listed in the answer and offered from the next
request on, so a request carries the schemas of a handful of tools, not of hundreds. Every
tool of the set still runs when called. A query that matches nothing is answered so.

Where the backend's provider searches tools itself (``ModelCapabilities.supports_tool_search``:
Claude 4.5 and later, OpenAI's gpt-5.4 and later on the Responses API), the run uses that search
instead: every tool but those in ``always`` is sent deferred (``SamplingParams.deferred_tools``)
and the provider finds and loads them; ``top_k`` is then the provider's. ``native=False`` keeps
``search_tools``, and so does a custom ``scorer``; ``native=True`` refuses a backend without one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tooluse.retrieval.scorers import BM25Scorer, ToolScorer, ranked_indices
from tooluse.tools.definition import ToolDefinition

__all__ = ["SEARCH_TOOL", "ToolSearch"]

SEARCH_TOOL = "search_tools"

_SEARCH = ToolDefinition.from_schema(
    SEARCH_TOOL,
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What the tool you need does, in a few words.",
            }
        },
        "required": ["query"],
    },
    description=(
        "Find the tools for a task among many. The tools found are listed and can be called "
        "from the next turn on; search again with other words if none fits."
    ),
)


class ToolSearch:
    """``tools`` behind one search tool; ``top_k`` tools are found per query; the tools named
    in ``always`` are offered from the start; ``native`` chooses the provider's own search
    (``None``: where the backend has one and no ``scorer`` is given)."""

    def __init__(
        self,
        tools: Iterable[Any],
        *,
        top_k: int = 5,
        scorer: ToolScorer | None = None,
        always: Iterable[str] = (),
        native: bool | None = None,
    ) -> None:
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        self.tools = tuple(tools)
        self.top_k = top_k
        self.scorer = scorer
        self.always = tuple(always)
        self.native = native
        self.search_tool = _SEARCH

    def uses_native(self, supported: bool) -> bool:
        """Whether a run on a backend that does (``supported``) or does not have the provider's
        own tool search uses it; ``native=True`` without one is an error."""
        if self.native is True and not supported:
            raise ValueError(
                "ToolSearch(native=True): this backend has no tool search of its own "
                "(ModelCapabilities.supports_tool_search is False)"
            )
        if self.native is None:
            return supported and self.scorer is None
        return self.native

    def search(self, query: str, definitions: Sequence[ToolDefinition]) -> list[ToolDefinition]:
        """The (at most ``top_k``) tools that match ``query``, best first; none when no word
        of the query occurs in any tool."""
        candidates = [d for d in definitions if d.name != SEARCH_TOOL]
        scores = (self.scorer or BM25Scorer()).score(query, candidates)
        return [candidates[i] for i in ranked_indices(scores)[: self.top_k] if scores[i] > 0]

    @staticmethod
    def answer(query: str, found: Sequence[ToolDefinition]) -> str:
        """What the model reads back."""
        if not found:
            return (
                f"no tool matches {query!r}; search again with other words "
                "(what the tool does, its subject)"
            )
        lines = [
            f"- {d.name}: {d.description.splitlines()[0] if d.description else ''}" for d in found
        ]
        return "These tools can be called now:\n" + "\n".join(lines)
