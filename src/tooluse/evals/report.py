"""One self-contained HTML report of evaluation runs (no network: inline CSS, JS and SVG).

::

    runs = [load_run("runs/constrained"), load_run("runs/unconstrained")]
    html = render_report(runs, traces=[load_trace("run.json")])

A run is a directory written by ``tooluse eval bfcl --out DIR`` (``results.jsonl`` and
``summary.json``) or by ``tooluse eval env NAME --out DIR`` (``trajectories.jsonl``: each
trajectory is an item of its environment's category). Runs holding BFCL categories get BFCL
v4's overall score (:mod:`tooluse.evals.report_score`), per run or over all runs together. The page shows accuracy per category (bars, runs side by side), the error
types, pass^k against k for runs with several tries per task
(:mod:`tooluse.evals.report_passk`), the latency distribution, and a table of every item (prompt, tools offered, raw output,
decoded calls, expected answer, verdict) filtered by run, category, verdict and error type.
Traces (a saved ``RunResult`` or an environment trajectory) are shown as collapsible timelines
(:mod:`tooluse.evals.trace_view`).
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tooluse.evals.engine import read_results
from tooluse.evals.report_passk import pass_k_section
from tooluse.evals.report_score import (
    NamedRecords,
    has_bfcl_categories,
    score_markdown_rows,
    score_of_runs,
    score_table_html,
)
from tooluse.evals.trace_view import TRACE_CSS, Trace, render_trace

__all__ = ["RunData", "accuracy_svg", "load_run", "markdown_table", "render_report"]

PALETTE = ("#2f6db5", "#e07b24", "#3a9a5b", "#b8423c", "#7d5ba6", "#8c6d31")


@dataclass(frozen=True, kw_only=True)
class RunData:
    """One run directory: its records and summary."""

    name: str
    path: str
    records: tuple[dict[str, Any], ...]
    summary: dict[str, Any] = field(default_factory=dict)

    def categories(self) -> dict[str, tuple[int, int]]:
        """``{category: (correct, total)}`` in first-seen order."""
        out: dict[str, list[int]] = {}
        for record in self.records:
            score = out.setdefault(str(record.get("category", "?")), [0, 0])
            score[0] += bool(record.get("valid"))
            score[1] += 1
        return {k: (v[0], v[1]) for k, v in out.items()}


def _trajectory_record(key: str, row: dict[str, Any], environment: str) -> dict[str, Any]:
    """A trajectory as a result record: its environment (without ``bfcl:``) is the category,
    solved is right."""
    error = row.get("error")
    return {
        "key": key,
        "id": row.get("task_id", key),
        "category": str(row.get("environment") or environment).removeprefix("bfcl:"),
        "valid": bool(row.get("success")) and not error,
        "error_type": "error" if error else ("" if row.get("success") else "unsolved"),
        "error": error,
        "latency": row.get("seconds"),
        "prompt": [{"role": "user", "content": str(row.get("prompt", ""))}],
        "raw": str(row.get("answer") or ""),
        "decoded": None,
        "expected": row.get("reference"),
        "sample": row.get("sample", 0),
        "task_index": row.get("task_index"),
    }


def load_run(path: str | Path, name: str | None = None) -> RunData:
    """A run directory: ``results.jsonl`` (``tooluse eval bfcl``) or ``trajectories.jsonl``
    (``tooluse eval env``, each trajectory a record of its environment's category);
    ``summary.json`` optional."""
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a run directory")
    results = directory / "results.jsonl"
    trajectories = directory / "trajectories.jsonl"
    summary_path = directory / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    if results.is_file():
        records = tuple(read_results(results).values())
    elif trajectories.is_file():
        environment = str(summary.get("environment", ""))
        rows = read_results(trajectories).items()
        records = tuple(_trajectory_record(k, r, environment) for k, r in rows)
        results = trajectories
    else:
        raise FileNotFoundError(
            f"{directory} has no results.jsonl or trajectories.jsonl (not a finished or "
            "started run)"
        )
    if not records:
        raise ValueError(f"{results} holds no results")
    label = name or summary.get("model") and f"{directory.name} ({summary.get('model')})"
    return RunData(
        name=str(label or directory.name), path=str(directory), records=records, summary=summary
    )


# -- Markdown -----------------------------------------------------------------------------------


def _named(runs: Sequence[RunData]) -> list[NamedRecords]:
    return [(run.name, run.records) for run in runs]


def markdown_table(runs: Sequence[RunData], *, combine: bool = False) -> str:
    """Accuracy per category as a Markdown table, one column per run (for READMEs): each cell
    is ``65% (13/20)``; then all categories together, items per minute and, when the runs hold
    BFCL categories, BFCL v4's overall score and groups. ``combine`` adds a column scoring all
    runs as one results set (one model's categories spread over several runs)."""
    columns = list(runs)
    if combine:
        score_of_runs(_named(runs))  # overlapping categories: the error, before any output
        merged = tuple(r for run in runs for r in run.records)
        columns.append(RunData(name="all runs together", path="", records=merged))
    categories: list[str] = []
    for run in columns:
        categories.extend(c for c in run.categories() if c not in categories)
    lines = [
        "| category | " + " | ".join(run.name.replace("|", "/") for run in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]

    def cell(correct: int, total: int) -> str:
        return f"{correct / total:.0%} ({correct}/{total})" if total else "-"

    for category in categories:
        cells = [cell(*run.categories().get(category, (0, 0))) for run in columns]
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    totals = []
    for run in columns:
        scores = run.categories().values()
        totals.append(cell(sum(c for c, _ in scores), sum(t for _, t in scores)))
    lines.append("| **all** | " + " | ".join(totals) + " |")
    speeds = [run.summary.get("items_per_minute") for run in columns]
    if any(speed for speed in speeds):
        lines.append("| items/min | " + " | ".join(f"{s:.1f}" if s else "-" for s in speeds) + " |")
    if has_bfcl_categories(_named(runs)):
        lines.extend(score_markdown_rows(_named(runs), combine=combine))
    return "\n".join(lines) + "\n"


# -- SVG charts --------------------------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def accuracy_svg(runs: Sequence[RunData], *, width: int = 760) -> str:
    """Grouped bars: accuracy per category, one bar per run, labelled with the percentage."""
    categories: list[str] = []
    for run in runs:
        categories.extend(c for c in run.categories() if c not in categories)
    height, top, bottom, left = 300, 30, 70, 44
    plot_w = width - left - 10
    plot_h = height - top - bottom
    group = plot_w / max(1, len(categories))
    bar = min(38.0, (group - 10) / max(1, len(runs)))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="accuracy-chart" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="#fff"/>',
    ]
    for tick in range(0, 101, 25):
        y = top + plot_h * (1 - tick / 100)
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{tick}%</text>'
        )
    for ci, category in enumerate(categories):
        x0 = left + ci * group + (group - bar * len(runs)) / 2
        for ri, run in enumerate(runs):
            correct, total = run.categories().get(category, (0, 0))
            if not total:
                continue
            share = correct / total
            h = plot_h * share
            x = x0 + ri * bar
            color = PALETTE[ri % len(PALETTE)]
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar - 2:.1f}" '
                f'height="{h:.1f}" fill="{color}"><title>{_e(run.name)} {_e(category)}: '
                f"{correct}/{total}</title></rect>"
                f'<text x="{x + (bar - 2) / 2:.1f}" y="{top + plot_h - h - 3:.1f}" '
                f'text-anchor="middle" fill="#222">{share:.0%}</text>'
            )
        label_x = left + ci * group + group / 2
        parts.append(
            f'<text x="{label_x:.1f}" y="{top + plot_h + 14}" text-anchor="end" '
            f'transform="rotate(-25 {label_x:.1f} {top + plot_h + 14})">{_e(category)}</text>'
        )
    for ri, run in enumerate(runs):
        parts.append(
            f'<rect x="{left + ri * 180}" y="6" width="10" height="10" '
            f'fill="{PALETTE[ri % len(PALETTE)]}"/>'
            f'<text x="{left + ri * 180 + 14}" y="15">{_e(run.name[:26])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _bars_svg(counts: dict[str, int], color: str, *, width: int = 360) -> str:
    """Horizontal bars (error types of one run)."""
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:14]
    height = 24 + 20 * max(1, len(rows))
    peak = max([c for _, c in rows] or [1])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" '
        f'height="{height}" font-family="sans-serif" font-size="11">'
    ]
    if not rows:
        parts.append('<text x="4" y="16" fill="#555">no errors</text>')
    for i, (name, count) in enumerate(rows):
        y = 8 + i * 20
        w = (width - 230) * count / peak
        parts.append(
            f'<text x="180" y="{y + 12}" text-anchor="end">{_e(name[:30] or "(none)")}</text>'
            f'<rect x="186" y="{y}" width="{w:.1f}" height="14" fill="{color}"/>'
            f'<text x="{190 + w:.1f}" y="{y + 12}">{count}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _latency_svg(runs: Sequence[RunData], *, width: int = 760, bins: int = 20) -> str:
    """A histogram of item latencies, one outlined series per run."""
    series = [
        [float(r["latency"]) for r in run.records if isinstance(r.get("latency"), (int, float))]
        for run in runs
    ]
    peak_value = max([max(s) for s in series if s] or [1.0]) or 1.0
    step = peak_value / bins
    counts = [
        [sum(1 for v in s if min(bins - 1, int(v / step)) == b) for b in range(bins)]
        for s in series
    ]
    peak = max([max(c) for c in counts if c] or [1]) or 1
    height, top, bottom, left = 220, 14, 34, 40
    plot_w, plot_h = width - left - 10, height - top - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="latency-chart" '
        f'width="{width}" height="{height}" font-family="sans-serif" font-size="11">'
    ]
    for ri, row in enumerate(counts):
        color = PALETTE[ri % len(PALETTE)]
        for b, count in enumerate(row):
            if not count:
                continue
            h = plot_h * count / peak
            x = left + plot_w * b / bins
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{plot_w / bins - 1:.1f}" '
                f'height="{h:.1f}" fill="{color}" fill-opacity="{0.75 / math.sqrt(ri + 1):.2f}">'
                f"<title>{_e(runs[ri].name)}: {count} items at {b * step:.2f}-"
                f"{(b + 1) * step:.2f} s</title></rect>"
            )
    for b in range(0, bins + 1, 5):
        x = left + plot_w * b / bins
        anchor = "end" if b == bins else "middle"
        parts.append(
            f'<text x="{x:.1f}" y="{height - 14}" text-anchor="{anchor}">{b * step:.1f}s</text>'
        )
    parts.append(f'<text x="{left}" y="{top - 2}" fill="#555">items (max {peak})</text></svg>')
    return "".join(parts)


# -- the item table ----------------------------------------------------------------------------


def _short(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _prompt_text(record: dict[str, Any]) -> str:
    prompt = record.get("prompt") or []
    users = [
        m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"
    ]
    return "\n".join(str(u) for u in users) or _short(prompt)


def _rows(runs: Sequence[RunData]) -> str:
    out = []
    for ri, run in enumerate(runs):
        for record in run.records:
            valid = bool(record.get("valid"))
            verdict = "right" if valid else "wrong"
            error_type = str(record.get("error_type") or "")
            cells = [
                _e(run.name),
                _e(record.get("id", record.get("key", ""))),
                _e(record.get("category", "")),
                f'<span class="{verdict}">{verdict}</span>',
                _e(error_type),
                _e(record.get("latency", "")),
                f"<details><summary>{_e(_short(_prompt_text(record), 80))}</summary>"
                f"<pre>{_e(_prompt_text(record))}</pre></details>",
                _e(", ".join(str(t) for t in record.get("tools") or [])),
                f"<pre>{_e(_short(record.get('raw', ''), 600))}</pre>",
                f"<pre>{_e(_short(record.get('decoded')))}</pre>",
                f"<pre>{_e(_short(record.get('expected')))}</pre>",
            ]
            if record.get("error"):
                cells[4] += f'<div class="err">{_e(_short(record["error"], 200))}</div>'
            out.append(
                f'<tr data-run="{ri}" data-category="{_e(record.get("category", ""))}" '
                f'data-verdict="{verdict}" data-error="{_e(error_type)}">'
                + "".join(f"<td>{c}</td>" for c in cells)
                + "</tr>"
            )
    return "\n".join(out)


def _options(values: Sequence[str]) -> str:
    return "".join(f'<option value="{_e(v)}">{_e(v or "(none)")}</option>' for v in values)


CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#1d1d1f;background:#fafafa}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;width:100%;background:#fff}
td,th{border:1px solid #e3e3e3;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f0f0f0;position:sticky;top:0}
pre{white-space:pre-wrap;word-break:break-word;margin:0;max-width:320px;font-size:11px}
.right{color:#247a3d;font-weight:600}.wrong{color:#b3261e;font-weight:600}
.err{color:#b3261e;font-size:11px}.filters{margin:10px 0;display:flex;gap:12px;flex-wrap:wrap}
.runs td{font-size:13px}.charts{display:flex;gap:16px;flex-wrap:wrap}
.chart{background:#fff;border:1px solid #e3e3e3}#js-errors{color:#b3261e}
"""

JS = """
(function(){
  var errors = document.getElementById('js-errors');
  window.addEventListener('error', function(e){ errors.textContent += e.message + '\\n'; });
  var rows = Array.prototype.slice.call(document.querySelectorAll('#items tbody tr'));
  var fields = ['run','category','verdict','error'];
  function apply(){
    var want = {}; fields.forEach(function(f){ want[f] = document.getElementById('f-' + f).value; });
    var text = document.getElementById('f-text').value.toLowerCase();
    var shown = 0;
    rows.forEach(function(row){
      var ok = fields.every(function(f){ return want[f] === '*' || row.dataset[f] === want[f]; });
      if (ok && text) { ok = row.textContent.toLowerCase().indexOf(text) >= 0; }
      row.style.display = ok ? '' : 'none'; if (ok) { shown++; }
    });
    document.getElementById('shown').textContent = shown + ' of ' + rows.length + ' items';
    return shown;
  }
  fields.concat(['text']).forEach(function(f){
    document.getElementById('f-' + f).addEventListener('input', apply);
  });
  window.tooluseFilter = function(field, value){
    document.getElementById('f-' + field).value = value; return apply();
  };
  apply();
  if (location.hash === '#selftest') {
    var out = {};
    fields.forEach(function(f){
      Array.prototype.slice.call(document.getElementById('f-' + f).options).forEach(function(o){
        if (o.value !== '*') { out[f + '=' + o.value] = window.tooluseFilter(f, o.value); }
      });
      window.tooluseFilter(f, '*');
    });
    document.getElementById('selftest').textContent = JSON.stringify(out);
  }
})();
"""


def _run_table(runs: Sequence[RunData]) -> str:
    rows = []
    for ri, run in enumerate(runs):
        correct = sum(bool(r.get("valid")) for r in run.records)
        total = len(run.records)
        options = run.summary.get("options") or (
            run.records[0].get("options") if run.records else {}
        )
        speed = run.summary.get("items_per_minute")
        rows.append(
            f'<tr><td><span style="color:{PALETTE[ri % len(PALETTE)]}">■</span> {_e(run.name)}</td>'
            f"<td>{_e(run.path)}</td><td>{correct}/{total} ({correct / total:.1%})</td>"
            f"<td>{_e(f'{speed:.1f}' if isinstance(speed, (int, float)) else '')}</td>"
            f"<td><pre>{_e(_short(options, 300))}</pre></td></tr>"
        )
    return (
        '<table class="runs"><tr><th>run</th><th>directory</th><th>right</th>'
        "<th>items/min</th><th>options</th></tr>" + "".join(rows) + "</table>"
    )


def _score_section(runs: Sequence[RunData], combine: bool) -> list[str]:
    if not has_bfcl_categories(_named(runs)):
        return []
    return [
        "<h2>BFCL v4 score</h2>",
        "<p>Computed as bfcl-eval aggregates it (groups weighted 10/10/10/30/40); a category "
        "that was not run counts as 0. "
        + ("All runs are scored as one results set." if combine else "One score per run.")
        + "</p>",
        score_table_html(_named(runs), combine=combine),
    ]


def render_report(
    runs: Sequence[RunData],
    *,
    traces: Sequence[Trace] = (),
    title: str = "tooluse evaluation",
    combine: bool = False,
) -> str:
    """The whole page as one HTML string (open it from disk; it loads nothing). ``combine``
    scores all runs as one BFCL results set (``ValueError`` when their categories overlap)."""
    if not runs and not traces:
        raise ValueError("nothing to report: no runs and no traces")
    body = [f"<h1>{_e(title)}</h1>"]
    body.append(
        f"<p>Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}; "
        f"{len(runs)} run(s), {len(traces)} trace(s).</p>"
    )
    if runs:
        categories = sorted({str(r.get("category", "")) for run in runs for r in run.records})
        errors = sorted({str(r.get("error_type") or "") for run in runs for r in run.records})
        error_charts = "".join(
            f"<div><h3>{_e(run.name)}</h3>"
            + _bars_svg(
                dict(
                    Counter(
                        str(r.get("error_type") or "") for r in run.records if not r.get("valid")
                    )
                ),
                PALETTE[ri % len(PALETTE)],
            )
            + "</div>"
            for ri, run in enumerate(runs)
        )
        run_options = "".join(
            f'<option value="{i}">{_e(r.name)}</option>' for i, r in enumerate(runs)
        )
        body += [
            "<h2>Runs</h2>",
            _run_table(runs),
            *_score_section(runs, combine),
            "<h2>Accuracy per category</h2>",
            accuracy_svg(runs),
            *pass_k_section(runs),
            "<h2>Error types (wrong items)</h2>",
            f'<div class="charts">{error_charts}</div>',
            "<h2>Latency per item</h2>",
            _latency_svg(runs),
            "<h2>Items</h2>",
            '<div class="filters">'
            f'<label>run <select id="f-run"><option value="*">all</option>{run_options}</select></label>'
            f'<label>category <select id="f-category"><option value="*">all</option>{_options(categories)}</select></label>'
            '<label>verdict <select id="f-verdict"><option value="*">all</option>'
            '<option value="right">right</option><option value="wrong">wrong</option></select></label>'
            f'<label>error type <select id="f-error"><option value="*">all</option>{_options(errors)}</select></label>'
            '<label>text <input id="f-text" type="search"></label> <span id="shown"></span></div>',
            '<table id="items"><thead><tr><th>run</th><th>id</th><th>category</th><th>verdict</th>'
            "<th>error type</th><th>latency s</th><th>prompt</th><th>tools offered</th>"
            "<th>raw output</th><th>decoded</th><th>expected</th></tr></thead><tbody>",
            _rows(runs),
            "</tbody></table>",
        ]
    if traces:
        body.append("<h2>Traces</h2>")
        body += [render_trace(trace) for trace in traces]
    script = f"<script>{JS}</script>" if runs else ""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{CSS}{TRACE_CSS}</style></head><body>"
        + "\n".join(body)
        + '<pre id="js-errors"></pre><pre id="selftest" hidden></pre>'
        + script
        + "</body></html>\n"
    )
