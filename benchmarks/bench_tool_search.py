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


def toolset() -> tuple[list[Any], list[Any]]:
    """500 distinct tools (functions of several categories) and the questions asked."""
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
    asked = random.Random(0).sample(load_bfcl_category("simple_python"), QUESTIONS)
    wanted = {tool_from_bfcl_function(e.functions[0]).name for e in asked}
    chosen = [t for t in tools.values() if t.name in wanted]
    chosen += [t for t in tools.values() if t.name not in wanted][: TOOLSET - len(chosen)]
    return chosen, asked


def first_call(result: Any) -> str | None:
    return next((t.name for t in result.trail if t.name != "search_tools"), None)


def prompt_tokens(backend: Any, entry: Any, offered: list[Any]) -> int:
    return backend.count_tokens(backend.render(entry.messages(), offered))


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
    for key, value in figures.items():
        print(f"{key:28} {value:.3f}" if isinstance(value, float) else f"{key:28} {value}")
    backend.close()
    return figures


if __name__ == "__main__":
    main()
