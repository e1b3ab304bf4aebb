"""BFCL: its data, its AST checker, the one single-turn scorer, the engine job and the
executable multi-turn environment with its rewards.

::

    from tooluse.evals.bfcl import BFCLOptions, load_bfcl_categories, run_bfcl_job
    summary = run_bfcl_job(load_bfcl_categories(["simple_python"]), "local", BFCLOptions(), "runs/a")

- :mod:`~tooluse.evals.bfcl.data`: entries (question, function docs, ground truth) and tools;
- :mod:`~tooluse.evals.bfcl.checker`: BFCL's AST checker, with
  :mod:`~tooluse.evals.bfcl.java_js` for the Java and JavaScript entries;
- :mod:`~tooluse.evals.bfcl.overall`: BFCL v4's overall score from per-category results;
- :mod:`~tooluse.evals.bfcl.scorer`: one entry, one model turn, one result record;
- :mod:`~tooluse.evals.bfcl.job` (resumable runs on the engine) and
  :mod:`~tooluse.evals.bfcl.runner` (in memory, a report);
- :mod:`~tooluse.evals.bfcl.world`, :mod:`~tooluse.evals.bfcl.multi_turn` and
  :mod:`~tooluse.evals.bfcl.rewards`: the multi-turn environment, offered by name by
  :data:`tooluse.envs.environment_registry` (``bfcl:multi_turn_base`` ...);
- :mod:`~tooluse.evals.bfcl.agentic`, :mod:`~tooluse.evals.bfcl.memory` and
  :mod:`~tooluse.evals.bfcl.web_search`: the agentic categories as environments
  (``bfcl:memory_kv``, ``bfcl:web_search_base`` ...), scored on the final reply.
"""

from __future__ import annotations

from tooluse.evals.bfcl.agentic import AGENTIC_CATEGORIES, check_agentic_answer
from tooluse.evals.bfcl.checker import (
    CheckResult,
    check_entry,
    check_irrelevance,
    check_multiple,
    check_parallel,
    check_relevance,
    check_simple,
    standardize_string,
)
from tooluse.evals.bfcl.data import (
    BFCL_CATEGORIES,
    CATEGORY_COLLECTIONS,
    LANGUAGE_CATEGORIES,
    PYTHON_CATEGORIES,
    SAMPLE_CATEGORIES,
    BFCLEntry,
    expand_categories,
    load_bfcl_categories,
    load_bfcl_category,
    load_bfcl_entries,
    load_sample,
    select_entries,
    tool_from_bfcl_function,
    tools_for_entry,
)
from tooluse.evals.bfcl.java_js import convert_java_value, convert_js_value, language_of
from tooluse.evals.bfcl.job import make_bfcl_worker, run_bfcl_job, summarize_records
from tooluse.evals.bfcl.memory import BFCLMemoryEnvironment
from tooluse.evals.bfcl.multi_turn import BFCLMultiTurnEnvironment, default_bfcl_rewards
from tooluse.evals.bfcl.overall import (
    BFCLScore,
    CategoryResult,
    GroupScore,
    bfcl_score,
    category_results,
    format_bfcl_score,
)
from tooluse.evals.bfcl.rewards import BFCLResponseReward, BFCLStateReward
from tooluse.evals.bfcl.runner import (
    BFCLReport,
    CategoryScore,
    EntryOutcome,
    decode_calls,
    run_bfcl,
    score_entry,
)
from tooluse.evals.bfcl.scorer import BFCLOptions, decode_python_calls, score_bfcl_entry
from tooluse.evals.bfcl.web_search import BFCLWebSearchEnvironment, SerpAPISearch

__all__ = [
    "AGENTIC_CATEGORIES",
    "BFCL_CATEGORIES",
    "CATEGORY_COLLECTIONS",
    "LANGUAGE_CATEGORIES",
    "PYTHON_CATEGORIES",
    "SAMPLE_CATEGORIES",
    "BFCLEntry",
    "BFCLMemoryEnvironment",
    "BFCLMultiTurnEnvironment",
    "BFCLOptions",
    "BFCLReport",
    "BFCLResponseReward",
    "BFCLScore",
    "BFCLStateReward",
    "CategoryResult",
    "BFCLWebSearchEnvironment",
    "CategoryScore",
    "CheckResult",
    "SerpAPISearch",
    "EntryOutcome",
    "GroupScore",
    "bfcl_score",
    "category_results",
    "convert_java_value",
    "convert_js_value",
    "expand_categories",
    "format_bfcl_score",
    "language_of",
    "check_agentic_answer",
    "check_entry",
    "check_irrelevance",
    "check_multiple",
    "check_parallel",
    "check_relevance",
    "check_simple",
    "decode_calls",
    "decode_python_calls",
    "default_bfcl_rewards",
    "load_bfcl_categories",
    "load_bfcl_category",
    "load_bfcl_entries",
    "load_sample",
    "make_bfcl_worker",
    "run_bfcl",
    "run_bfcl_job",
    "score_bfcl_entry",
    "score_entry",
    "select_entries",
    "standardize_string",
    "summarize_records",
    "tool_from_bfcl_function",
    "tools_for_entry",
]
