"""Large toolsets: 500 tools from BFCL's function docs, the embedded model picking the right one
(about 3 minutes on the 2-core machine; `python benchmarks/run_all.py tool_search` runs it alone).

Each of N questions of BFCL's simple_python category is asked with the 500 tools (its own
function among them) offered three ways, on the embedded SmolLM2 model:

- all: every schema in every request (the baseline; 500 schemas do not fit the model's context,
  which this measures in tokens rather than assumes);
- top_k: ``tools_top_k=5``, the 5 tools BM25 ranks highest for the question;
- search: ``ToolSearch(tools, top_k=5)``, one ``search_tools`` tool first, then what it found.

Every mode asks with ``tool_choice="required"`` and at most 2 tool rounds (a search, then the
call). Figures: the right-tool rate (the first call of a real tool names the entry's function),
the prompt tokens of the first request, and their ratios to the baseline measured in this run.

Retrieval alone (no model), on every simple_python question among every distinct function of
four categories: how often the question's own function is ranked first and in the top 5 by
BM25 (the default scorer, the baseline), by ``EmbeddingScorer`` (all-MiniLM-L6-v2) and by
``RankFusionScorer`` over both, with their rates over BM25's.
"""

from __future__ import annotations

import random
from typing import Any

from tooluse import ToolSearch, run
from tooluse.errors import ContextLengthError
from tooluse.evals.bfcl.data import load_bfcl_category, tool_from_bfcl_function
from tooluse.local import LlamaCppBackend

QUESTIONS = 8
TOOLSET = 500


def distinct_tools() -> dict[str, Any]:
    """Every distinct function of four BFCL categories, as tools by name."""
    entries = load_bfcl_category("simple_python")
    for extra in ("multiple", "live_simple", "live_multiple"):
        entries += load_bfcl_category(extra)
    tools: dict[str, Any] = {}
    for entry in entries:
        for doc in entry.functions:
            try:
                tool = tool_from_bfcl_function(doc)
            except ValueError:
                continue
            tools.setdefault(tool.name, tool)
    return tools


def toolset() -> tuple[list[Any], list[Any]]:
    """500 distinct tools (functions of several categories) and the questions asked."""
    tools = distinct_tools()
    asked = random.Random(0).sample(load_bfcl_category("simple_python"), QUESTIONS)
    wanted = {tool_from_bfcl_function(e.functions[0]).name for e in asked}
    chosen = [t for t in tools.values() if t.name in wanted]
    chosen += [t for t in tools.values() if t.name not in wanted][: TOOLSET - len(chosen)]
    return chosen, asked


def first_call(result: Any) -> str | None:
    return next((t.name for t in result.trail if t.name != "search_tools"), None)


def prompt_tokens(backend: Any, entry: Any, offered: list[Any]) -> int:
    return backend.count_tokens(backend.render(entry.messages(), offered))


def retrieval_rates(scorer: Any, tools: list[Any], asked: list[Any]) -> tuple[float, float]:
    """How often each question's own function ranks first, and in the top 5, under ``scorer``."""
    from tooluse.retrieval import latest_request_text, ranked_indices

    first = top5 = 0
    for entry in asked:
        scores = scorer.score(latest_request_text(entry.messages()), tools)
        want = tool_from_bfcl_function(entry.functions[0]).name
        names = [tools[i].name for i in ranked_indices(scores)[:5]]
        first += names[0] == want
        top5 += want in names
    return first / len(asked), top5 / len(asked)


def retrieval_figures() -> dict[str, Any]:
    """BM25 against the embedding scorer over every distinct function (see the docstring)."""
    from tooluse.retrieval import BM25Scorer, RankFusionScorer
    from tooluse.retrieval.embedding import EmbeddingScorer

    tools = list(distinct_tools().values())
    names = {tool.name for tool in tools}
    asked = [
        e
        for e in load_bfcl_category("simple_python")
        if tool_from_bfcl_function(e.functions[0]).name in names
    ]
    figures: dict[str, Any] = {"retrieval_tools": len(tools), "retrieval_questions": len(asked)}
    embedding = EmbeddingScorer()
    scorers = {
        "bm25": BM25Scorer(),
        "embedding": embedding,
        "fusion": RankFusionScorer(BM25Scorer(), embedding),
    }
    for label, scorer in scorers.items():
        first, top5 = retrieval_rates(scorer, tools, asked)
        figures[f"{label}_top1_rate"], figures[f"{label}_top5_rate"] = first, top5
    for label in ("embedding", "fusion"):
        for k in ("top1", "top5"):
            figures[f"{label}_{k}_over_bm25"] = (
                figures[f"{label}_{k}_rate"] / figures[f"bm25_{k}_rate"]
            )
    return figures


def main() -> dict[str, Any]:
    tools, asked = toolset()
    backend = LlamaCppBackend.default(n_ctx=8192)
    figures: dict[str, Any] = {"tools": len(tools), "questions": len(asked)}
    modes: dict[str, dict[str, Any]] = {
        "all": {"tools": tools},
        "top_k": {"tools": tools, "tools_top_k": 5},
        "search": {"tools": ToolSearch(tools, top_k=5)},
    }
    for mode, options in modes.items():
        right = 0
        for entry in asked:
            try:
                result = run(
                    backend, entry.messages(), max_tool_iters=2, tool_choice="required", **options
                )
            except ContextLengthError:
                continue
            want = tool_from_bfcl_function(entry.functions[0]).name
            right += first_call(result) == want
        figures[f"{mode}_right_tool_rate"] = right / len(asked)
    entry = asked[0]
    from tooluse.retrieval import select_tools

    figures["all_prompt_tokens"] = prompt_tokens(backend, entry, tools)
    top = list(select_tools(tools, entry.messages()[-1].content, 5))
    figures["top_k_prompt_tokens"] = prompt_tokens(backend, entry, top)
    figures["search_prompt_tokens"] = prompt_tokens(backend, entry, [ToolSearch(tools).search_tool])
    base = figures["all_prompt_tokens"]
    for mode in ("top_k", "search"):
        figures[f"{mode}_tokens_over_all"] = figures[f"{mode}_prompt_tokens"] / base
    figures.update(retrieval_figures())
    for key, value in figures.items():
        print(f"{key:28} {value:.3f}" if isinstance(value, float) else f"{key:28} {value}")
    backend.close()
    return figures


if __name__ == "__main__":
    main()
