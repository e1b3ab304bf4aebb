"""Evaluations: function-calling accuracy on real BFCL data, on a resumable run engine.

::

    from tooluse.evals import BFCLOptions, load_bfcl_categories, run_bfcl_job, select_entries
    entries = select_entries(load_bfcl_categories(["simple_python", "parallel"]), sample=20)
    summary = run_bfcl_job(entries, "local", BFCLOptions(), "runs/a")   # results.jsonl + summary

    from tooluse.evals import load_sample, run_bfcl                      # in-memory, small
    print(run_bfcl(backend, load_sample()).format_table())

BFCL lives in :mod:`tooluse.evals.bfcl`. The engine (:mod:`tooluse.evals.engine`) runs any
items locally or on Ray, with resume; :mod:`tooluse.evals.evaluation` plays environment
trajectories on it and sums them up (pass@k, rewards per name and type).
"""

from __future__ import annotations

from tooluse.evals.bfcl import (
    BFCL_CATEGORIES,
    SAMPLE_CATEGORIES,
    BFCLEntry,
    BFCLOptions,
    BFCLReport,
    BFCLScore,
    CategoryResult,
    CategoryScore,
    CheckResult,
    EntryOutcome,
    bfcl_score,
    check_entry,
    check_irrelevance,
    check_multiple,
    check_parallel,
    check_relevance,
    check_simple,
    decode_calls,
    decode_python_calls,
    load_bfcl_categories,
    load_bfcl_category,
    load_bfcl_entries,
    load_sample,
    run_bfcl,
    run_bfcl_job,
    score_entry,
    select_entries,
    standardize_string,
    tool_from_bfcl_function,
    tools_for_entry,
)
from tooluse.evals.engine import EngineError, EngineOptions, EngineRun, WorkItem, run_items
from tooluse.evals.evaluation import (
    EvaluationResult,
    format_summary,
    pass_at_k,
    pass_hat_k,
    run_evaluation,
    summarize,
)

__all__ = [
    "BFCL_CATEGORIES",
    "SAMPLE_CATEGORIES",
    "BFCLEntry",
    "BFCLOptions",
    "BFCLReport",
    "BFCLScore",
    "CategoryResult",
    "CategoryScore",
    "CheckResult",
    "EngineError",
    "EngineOptions",
    "EngineRun",
    "EntryOutcome",
    "EvaluationResult",
    "WorkItem",
    "check_entry",
    "check_irrelevance",
    "check_multiple",
    "check_parallel",
    "check_relevance",
    "check_simple",
    "decode_calls",
    "bfcl_score",
    "decode_python_calls",
    "format_summary",
    "load_bfcl_categories",
    "load_bfcl_category",
    "load_bfcl_entries",
    "load_sample",
    "pass_at_k",
    "pass_hat_k",
    "run_bfcl",
    "run_bfcl_job",
    "run_evaluation",
    "run_items",
    "score_entry",
    "select_entries",
    "standardize_string",
    "summarize",
    "tool_from_bfcl_function",
    "tools_for_entry",
]
