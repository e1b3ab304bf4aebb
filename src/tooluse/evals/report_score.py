"""BFCL v4's overall score in reports: one per run, or several runs scored as one results set.

A full BFCL evaluation is several runs of one model: ``tooluse eval bfcl`` for the single-turn
categories, ``tooluse eval env bfcl:multi_turn_base`` (and the other three) for the multi-turn
ones. Scored together (``combine``), their categories must not overlap: a category in two runs
is an error, not an average. The numbers are :func:`tooluse.evals.bfcl.overall.bfcl_score`'s.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.evals.bfcl.overall import (
    CATEGORY_SIZES,
    GROUP_WEIGHTS,
    BFCLScore,
    bfcl_score,
    category_results,
)

__all__ = ["has_bfcl_categories", "score_markdown_rows", "score_of_runs", "score_table_html"]

#: ``(run name, its result records)``: what the score reads of a run.
NamedRecords = tuple[str, Sequence[Mapping[str, Any]]]


def _scored_records(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One attempt per entry, as BFCL has: the first sample of multi-sample runs."""
    return [r for r in records if not r.get("sample")]


def has_bfcl_categories(runs: Sequence[NamedRecords]) -> bool:
    """Whether any run holds a category of BFCL v4 (else the report shows no score)."""
    return any(str(r.get("category")) in CATEGORY_SIZES for _, records in runs for r in records)


def score_of_runs(runs: Sequence[NamedRecords]) -> BFCLScore:
    """The score of several runs as one results set; ``ValueError`` names a category found in
    two of them."""
    owner: dict[str, str] = {}
    records: list[Mapping[str, Any]] = []
    for name, run_records in runs:
        for category in {str(r.get("category")) for r in run_records}:
            if category in owner:
                raise ValueError(
                    f"category {category!r} is in two runs ({owner[category]} and {name}); "
                    "runs scored together must hold different categories"
                )
            owner[category] = name
        records.extend(_scored_records(run_records))
    return bfcl_score(category_results(records))


def _rows(runs: Sequence[NamedRecords], combine: bool) -> list[tuple[str, BFCLScore]]:
    if combine:
        return [("all runs together", score_of_runs(runs))]
    return [(name, score_of_runs([(name, records)])) for name, records in runs]


def _missing_text(score: BFCLScore) -> str:
    if not score.missing:
        return "none"
    return f"{len(score.missing)}: " + ", ".join(score.missing)


def score_table_html(runs: Sequence[NamedRecords], *, combine: bool = False) -> str:
    """The report's score table: overall, the five groups and relevance, what is missing."""
    e = html.escape
    head = "".join(f"<th>{e(name)} ({weight})</th>" for name, weight in GROUP_WEIGHTS.items())
    lines = [
        '<table class="runs" id="bfcl-score"><tr><th>run</th><th>overall</th>'
        f"{head}<th>relevance</th><th>not run (counted as 0)</th><th>partial</th></tr>"
    ]
    for name, score in _rows(runs, combine):
        groups = "".join(f"<td>{g.accuracy:.1%}</td>" for g in score.groups)
        relevance = f"{score.relevance:.1%}" if score.relevance is not None else "-"
        lines.append(
            f"<tr><td>{e(name)}</td><td><b>{score.overall:.1%}</b></td>{groups}"
            f"<td>{relevance}</td><td>{e(_missing_text(score))}</td>"
            f"<td>{e(', '.join(score.partial) or 'none')}</td></tr>"
        )
    lines.append("</table>")
    return "".join(lines)


def score_markdown_rows(runs: Sequence[NamedRecords], *, combine: bool = False) -> list[str]:
    """Markdown rows: the overall score, each group and how many categories were not run; one
    cell per run, then one for all runs together when ``combine``."""
    scores = [score for _, score in _rows(runs, combine=False)]
    if combine:
        scores.append(score_of_runs(runs))

    def row(label: str, values: Sequence[str]) -> str:
        return f"| {label} | " + " | ".join(values) + " |"

    lines = [row("**BFCL v4 overall**", [f"{s.overall:.1%}" for s in scores])]
    for index, name in enumerate(GROUP_WEIGHTS):
        values = [f"{s.groups[index].accuracy:.1%}" for s in scores]
        lines.append(row(f"BFCL {name} ({GROUP_WEIGHTS[name]})", values))
    lines.append(row("BFCL categories not run", [str(len(s.missing)) for s in scores]))
    return lines
