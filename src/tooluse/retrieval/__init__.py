"""Which tools the model is offered: scorers that rank tools against the request
(``scorers``: BM25, rank fusion, the ``ToolScorer`` protocol), sentence embeddings
(``embedding``, the ``embeddings`` extra, imported only when asked for) and ``ToolSearch``
(``tool_search``: the model searches the tools itself).

This package offers what the module ``tooluse.retrieval`` offered.
"""

from __future__ import annotations

from tooluse.retrieval.scorers import (
    BM25Scorer,
    RankFusionScorer,
    ToolScorer,
    latest_request_text,
    ranked_indices,
    select_tools,
    tool_text,
)

__all__ = [
    "BM25Scorer",
    "RankFusionScorer",
    "ToolScorer",
    "latest_request_text",
    "ranked_indices",
    "select_tools",
    "tool_text",
]
