"""Evaluations: function-calling accuracy on real BFCL data, on a resumable run engine.

::

    from tooluse.evals import BFCLOptions, load_bfcl_categories, run_bfcl_job, select_entries
    entries = select_entries(load_bfcl_categories(["simple_python", "parallel"]), sample=20)
    summary = run_bfcl_job(entries, "local", BFCLOptions(), "runs/a")   # results.jsonl + summary

    from tooluse.evals import load_sample, run_bfcl                      # in-memory, small
    print(run_bfcl(backend, load_sample()).format_table())

The engine (:mod:`tooluse.evals.engine`) runs any items locally or on Ray, with resume.
"""

from __future__ import annotations

from tooluse.evals.bfcl_checker import (
    CheckResult,
    check_entry,
    check_irrelevance,
    check_multiple,
    check_parallel,
    check_relevance,
    check_simple,
    standardize_string,
)
from tooluse.evals.bfcl_data import (
    BFCL_CATEGORIES,
    SAMPLE_CATEGORIES,
    BFCLEntry,
    load_bfcl_categories,
    load_bfcl_category,
    load_bfcl_entries,
    load_sample,
    select_entries,
    tool_from_bfcl_function,
    tools_for_entry,
)
from tooluse.evals.bfcl_job import BFCLOptions, decode_python_calls, run_bfcl_job
from tooluse.evals.bfcl_runner import (
    BFCLReport,
    CategoryScore,
    EntryOutcome,
    decode_calls,
    run_bfcl,
    score_entry,
)
from tooluse.evals.engine import EngineError, EngineRun, WorkItem, run_items

__all__ = [
    "BFCL_CATEGORIES",
    "SAMPLE_CATEGORIES",
    "BFCLEntry",
    "BFCLOptions",
    "BFCLReport",
    "CategoryScore",
    "CheckResult",
    "EngineError",
    "EngineRun",
    "EntryOutcome",
    "WorkItem",
    "check_entry",
    "check_irrelevance",
    "check_multiple",
    "check_parallel",
    "check_relevance",
    "check_simple",
    "decode_calls",
    "decode_python_calls",
    "load_bfcl_categories",
    "load_bfcl_category",
    "load_bfcl_entries",
    "load_sample",
    "run_bfcl",
    "run_bfcl_job",
    "run_items",
    "score_entry",
    "select_entries",
    "standardize_string",
    "tool_from_bfcl_function",
    "tools_for_entry",
]
