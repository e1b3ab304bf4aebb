"""A BFCL evaluation as engine work: one JSON record per entry, a summary per run directory.

::

    from tooluse.evals.bfcl.job import BFCLOptions, run_bfcl_job
    entries = select_entries(load_bfcl_categories(["simple_python", "parallel"]), sample=20)
    summary = run_bfcl_job(entries, "local", BFCLOptions(), "runs/smollm2")

``run_bfcl_job`` writes ``results.jsonl`` (one line per entry as it finishes: id, category,
model, options, prompt, tools offered, raw output, ``decoded`` in BFCL's
``[{"func": {"arg": value}}]`` shape or null when the output could not be decoded, expected
answer, ``valid``, ``error_type``, ``error``, latency, tokens) and ``summary.json``
(per-category accuracy with counts, error types, items/min). Running it again on the same
directory resumes (see :mod:`tooluse.evals.engine`). The model is loaded once per worker.

Each entry is scored by :func:`tooluse.evals.bfcl.scorer.score_bfcl_entry` (its prompt styles
are described there).
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from tooluse.evals.bfcl.checker import checker_kind
from tooluse.evals.bfcl.data import BFCLEntry
from tooluse.evals.bfcl.format_sensitivity import format_sensitivity_summary
from tooluse.evals.bfcl.overall import bfcl_score, category_results
from tooluse.evals.bfcl.scorer import (
    BFCL_SYSTEM_PROMPT,
    BFCLOptions,
    bfcl_system_prompt,
    decode_python_calls,
    few_shot_prompt,
    record_head,
    score_bfcl_entry,
)
from tooluse.evals.engine import EngineError, WorkItem, read_results, run_items
from tooluse.providers.base import Backend
from tooluse.providers.model_registry import load_model

__all__ = [
    "BFCL_SYSTEM_PROMPT",
    "BFCLOptions",
    "bfcl_system_prompt",
    "decode_python_calls",
    "few_shot_prompt",
    "entry_from_payload",
    "entry_payload",
    "load_backend",
    "make_bfcl_worker",
    "run_bfcl_job",
    "score_bfcl_entry",
    "summarize_records",
]

#: The old name of :func:`tooluse.providers.load_model`, which this module's workers use.
load_backend = load_model


# -- entries as engine payloads ----------------------------------------------------------------


def entry_payload(entry: BFCLEntry) -> dict[str, Any]:
    """An entry as JSON-able data (the engine's item payload)."""
    return {
        "id": entry.id,
        "category": entry.category,
        "question": [list(turn) for turn in entry.question],
        "functions": list(entry.functions),
        "ground_truth": list(entry.ground_truth),
    }


def entry_from_payload(data: Mapping[str, Any]) -> BFCLEntry:
    return BFCLEntry(
        id=str(data["id"]),
        category=str(data["category"]),
        question=tuple(tuple(turn) for turn in data.get("question") or ()),
        functions=tuple(data.get("functions") or ()),
        ground_truth=tuple(data.get("ground_truth") or ()),
    )


class _BFCLWorker:
    """Scores one entry per call (an engine worker); ``concurrency`` is how many entries it
    takes at once (a batched local model decodes them together)."""

    def __init__(self, model: str, backend: Backend, options: BFCLOptions) -> None:
        self.model = model
        self.backend = backend
        self.options = options
        self.parser = None
        if options.format is not None:
            from tooluse.formats import get_parser

            self.parser = get_parser(options.format)
        self.concurrency = int(getattr(backend, "batch_size", 1) or 1)

    def __call__(self, item: WorkItem) -> dict[str, Any]:
        entry = entry_from_payload(item.payload)
        return score_bfcl_entry(
            self.backend, entry, self.options, parser=self.parser, model=self.model
        )


def _bfcl_worker(
    model: str, options: Mapping[str, Any], backend_factory: Callable[[str], Backend] | None
) -> _BFCLWorker:
    chosen = BFCLOptions.from_dict(options)
    backend = (backend_factory or load_model)(model)
    if hasattr(backend, "constrain"):
        backend.constrain = chosen.constrained
    return _BFCLWorker(model, backend, chosen)


def make_bfcl_worker(
    model: str,
    options: BFCLOptions,
    backend_factory: Callable[[str], Backend] | None = None,
) -> Callable[[], Callable[[WorkItem], dict[str, Any]]]:
    """The engine's worker factory (picklable): loads the model once per worker.

    ``backend_factory(model)`` replaces :func:`~tooluse.providers.load_model` (a module-level
    function, so that it pickles for Ray)."""
    return functools.partial(_bfcl_worker, model, options.to_dict(), backend_factory)


# -- summary -----------------------------------------------------------------------------------


def summarize_records(
    records: Sequence[Mapping[str, Any]],
    *,
    model: str,
    options: BFCLOptions,
    items_per_minute: float | None = None,
    seconds: float | None = None,
) -> dict[str, Any]:
    """Per-category accuracy with counts, BFCL v4's overall score of those categories
    (``bfcl_score``: groups, missing and partial categories; see
    :mod:`tooluse.evals.bfcl.overall`), format_sensitivity's figures apart from it (``None``
    without such entries), error types, failures and speed."""
    categories: dict[str, dict[str, Any]] = {}
    for record in records:
        score = categories.setdefault(record["category"], {"correct": 0, "total": 0})
        score["total"] += 1
        score["correct"] += bool(record.get("valid"))
    for score in categories.values():
        score["accuracy"] = score["correct"] / score["total"] if score["total"] else 0.0
    calls = [
        s["accuracy"]
        for c, s in categories.items()
        if checker_kind(c) not in ("irrelevance", "relevance")
    ]
    latencies = [float(r.get("latency") or 0.0) for r in records]
    correct = sum(bool(r.get("valid")) for r in records)
    return {
        "model": model,
        "options": options.to_dict(),
        "correct": correct,
        "total": len(records),
        "accuracy": correct / len(records) if records else 0.0,
        "ast_mean": sum(calls) / len(calls) if calls else None,
        "categories": categories,
        "bfcl_score": bfcl_score(category_results(records)).to_dict(),
        "format_sensitivity": format_sensitivity_summary(records),
        "error_types": dict(
            Counter(r.get("error_type") or "" for r in records if not r.get("valid"))
        ),
        "unconvertible": [r["id"] for r in records if r.get("error_type") == "convert_error"],
        "errors": [
            {"id": r.get("id", r.get("key")), "error": r["error"]}
            for r in records
            if r.get("error")
        ],
        "items_per_minute": items_per_minute,
        "seconds": seconds,
        "mean_latency": sum(latencies) / len(latencies) if latencies else None,
    }


def run_bfcl_job(  # noqa: PLR0913 - the job's options, keyword-only
    entries: Sequence[BFCLEntry],
    model: str,
    options: BFCLOptions,
    out_dir: str | Path,
    *,
    engine: Literal["local", "ray"] = "local",
    concurrency: int = 1,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    item_timeout: float | None = None,
    backend_factory: Callable[[str], Backend] | None = None,
) -> dict[str, Any]:
    """Score ``model`` on ``entries`` into ``out_dir`` (resuming what is there) and return
    the summary, also written as ``summary.json``."""
    if not entries:
        raise ValueError("no BFCL entries to run")
    directory = Path(out_dir)
    if directory.exists() and not directory.is_dir():
        raise EngineError(f"{directory} is not a directory")
    results = directory / "results.jsonl"
    existing = read_results(results)
    for row in existing.values():
        if row.get("options") not in (None, options.to_dict()) or row.get("model") not in (
            None,
            model,
        ):
            raise EngineError(
                f"{directory} holds results of another model or other options "
                f"({row.get('model')}, {row.get('options')}); use another --out"
            )
    items = [WorkItem(key=e.id, payload=entry_payload(e)) for e in entries]
    run = run_items(
        items,
        make_bfcl_worker(model, options, backend_factory),
        results,
        engine=engine,
        concurrency=concurrency,
        workers=workers,
        ray_address=ray_address,
        progress=progress,
        description=f"BFCL {model}",
        score=lambda r: r.get("valid"),
        item_timeout=item_timeout,
        error_fields=lambda item: (
            record_head(entry_from_payload(item.payload), model, options)
            | {"tools": [], "raw": "", "decoded": None, "valid": False, "latency": None}
        ),
    )
    records = list(run.records)
    summary = summarize_records(
        records,
        model=model,
        options=options,
        items_per_minute=run.items_per_minute if run.ran else None,
        seconds=round(run.seconds, 3),
    )
    summary["ran"], summary["resumed"] = run.ran, run.skipped
    summary["phases"] = run.phases  # where the time went (model loads, Ray's start...)
    (directory / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary
