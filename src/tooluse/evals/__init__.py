"""Evaluations: BFCL-style function-calling accuracy on BFCL-format data.

::

    from tooluse.evals import load_sample, run_bfcl
    report = run_bfcl(backend, load_sample())
    print(report.format_table())
"""

from __future__ import annotations

from tooluse.evals.bfcl_checker import (
    CheckResult,
    check_entry,
    check_irrelevance,
    check_multiple,
    check_parallel,
    check_simple,
    standardize_string,
)
from tooluse.evals.bfcl_data import (
    SAMPLE_CATEGORIES,
    BFCLEntry,
    load_bfcl_entries,
    load_sample,
    tool_from_bfcl_function,
    tools_for_entry,
)
from tooluse.evals.bfcl_runner import (
    BFCLReport,
    CategoryScore,
    EntryOutcome,
    decode_calls,
    run_bfcl,
    score_entry,
)

__all__ = [
    "SAMPLE_CATEGORIES",
    "BFCLEntry",
    "BFCLReport",
    "CategoryScore",
    "CheckResult",
    "EntryOutcome",
    "check_entry",
    "check_irrelevance",
    "check_multiple",
    "check_parallel",
    "check_simple",
    "decode_calls",
    "load_bfcl_entries",
    "load_sample",
    "run_bfcl",
    "score_entry",
    "standardize_string",
    "tool_from_bfcl_function",
    "tools_for_entry",
]
