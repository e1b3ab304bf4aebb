"""The reliability chart of the HTML report: pass^k against k for each run of an environment.

pass^k is the chance that all k tries of a task succeed (τ-bench's reliability figure), pass@k
that at least one does; both are the unbiased estimates of
:func:`tooluse.evals.pass_k.pass_figures` over each task's samples (a run with
``-k 4`` has four per task). A run that failed a task in some tries and not in others shows a
falling line; a line that stays flat means the tries agree.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.evals.pass_k import pass_figures

__all__ = ["pass_k_curves", "pass_k_section", "pass_k_svg"]

_PALETTE = ("#2f6db5", "#e07b24", "#3a9a5b", "#b8423c", "#7d5ba6", "#8c6d31")


def pass_k_curves(records: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """``{k: pass^k}`` for k = 1..(most samples of a task) over trajectory records (those
    with a ``task_index``; records of items that did not run are left out)."""
    outcomes: dict[Any, list[bool]] = {}
    for record in records:
        if record.get("task_index") is None or record.get("error"):
            continue
        outcomes.setdefault(record["task_index"], []).append(bool(record.get("valid")))
    if not outcomes:
        return {}
    _, hat = pass_figures(outcomes, max(len(s) for s in outcomes.values()))
    return {int(k): v for k, v in hat.items() if v is not None}


def pass_k_svg(curves: Sequence[tuple[str, Mapping[int, float]]], *, width: int = 760) -> str:
    """A line chart of pass^k (y, 0..1) against k (x), one line per named run."""
    height, left, right, top, bottom = 280, 50, 170, 20, 40
    most = max((max(c) for _, c in curves if c), default=1)
    span_x = max(1, most - 1)

    def x(k: int) -> float:
        return left + (k - 1) / span_x * (width - left - right)

    def y(value: float) -> float:
        return top + (1.0 - value) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="#ddd"/><text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="11" '
            f'text-anchor="end">{tick:.2f}</text>'
        )
    for k in range(1, most + 1):
        parts.append(
            f'<text x="{x(k):.1f}" y="{height - bottom + 16}" font-size="11" '
            f'text-anchor="middle">{k}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2:.1f}" y="{height - 6}" font-size="12" '
        'text-anchor="middle">k (tries, all of which must succeed)</text>'
    )
    for i, (name, curve) in enumerate(curves):
        color = _PALETTE[i % len(_PALETTE)]
        points = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in sorted(curve.items()))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>')
        for k, v in sorted(curve.items()):
            parts.append(
                f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="3" fill="{color}">'
                f"<title>{html.escape(name)}: pass^{k} = {v:.3f}</title></circle>"
            )
        parts.append(
            f'<text x="{width - right + 10}" y="{top + 14 + 16 * i}" font-size="12" '
            f'fill="{color}">{html.escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def pass_k_section(runs: Sequence[Any]) -> list[str]:
    """The report's pass^k section (HTML parts) for runs whose tasks have several samples;
    nothing when none has."""
    curves = [(run.name, pass_k_curves(run.records)) for run in runs]
    curves = [(name, curve) for name, curve in curves if len(curve) > 1]
    if not curves:
        return []
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td>"
        + "".join(f"<td>pass^{k} {v:.3f}</td>" for k, v in sorted(curve.items()))
        + "</tr>"
        for name, curve in curves
    )
    return [
        "<h2>Reliability: pass^k</h2>",
        "<p>The chance that all k tries of a task succeed, estimated from each task's samples "
        "and averaged over tasks.</p>",
        pass_k_svg(curves),
        f'<table class="runs">{rows}</table>',
    ]
