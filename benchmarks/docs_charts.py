"""The documentation's benchmark charts, drawn from ``benchmarks/results/`` as SVG.

The site's build (``docs/hooks.py``) calls :func:`render_charts` and adds each chart to the site
as ``benchmarks/charts/<name>.svg``; nothing here is committed as an image, so a chart cannot
drift from its results file. A chart whose results file is missing is left out (a page that
shows it then fails the strict build with a broken image link).

    python benchmarks/docs_charts.py OUT_DIR     write every chart into OUT_DIR
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

RESULTS = Path(__file__).resolve().parent / "results"
TOOLUSE, BASELINE, THIRD = "#3f51b5", "#9e9e9e", "#ff9800"

Figures = Callable[[dict[str, dict[str, Any]]], Any]


def _style() -> None:
    plt.rcParams.update(
        {
            "svg.hashsalt": "tooluse-docs",  # the same ids on every build
            "svg.fonttype": "none",  # text stays text: small files, the page's font
            "font.size": 10,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )


def _svg(figure: Any) -> str:
    out = io.StringIO()
    figure.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    return out.getvalue()


def _hbars(ax: Any, labels: list[str], series: dict[str, tuple[list[float], str]]) -> None:
    """Horizontal grouped bars, first label on top, one colour per series."""
    height = 0.8 / len(series)
    positions = range(len(labels))
    for index, (name, (values, color)) in enumerate(series.items()):
        offsets = [p + (index - (len(series) - 1) / 2) * height for p in positions]
        bars = ax.barh(offsets, values, height=height, label=name, color=color)
        ax.bar_label(bars, fmt="%.0f", padding=2, fontsize=8)
    ax.set_yticks(list(positions), labels)
    ax.invert_yaxis()


def chart_training(results: dict[str, dict[str, Any]]) -> Any:
    """Base against trained on the test splits and on BFCL's categories (``train.json``)."""
    evaluations = results["train"]["evaluations"]
    labels, base, trained = [], [], []
    for name, row in evaluations.items():
        if name == "bfcl" or "base" not in row:
            continue
        labels.append(name)
        base.append(row["base"]["rate"] * 100)
        trained.append(row["trained"]["rate"] * 100)
    bfcl = evaluations["bfcl"]
    for category, row in bfcl["base"]["categories"].items():
        labels.append(f"BFCL {category}")
        base.append(row["rate"] * 100)
        trained.append(bfcl["trained"]["categories"][category]["rate"] * 100)
    figure, ax = plt.subplots(figsize=(7.5, 0.42 * len(labels) + 1))
    _hbars(
        ax,
        labels,
        {"base (local:base)": (base, BASELINE), "trained (local)": (trained, TOOLUSE)},
    )
    ax.set_xlim(0, 110)
    ax.set_xlabel("tasks or entries right (%)")
    ax.legend(loc="lower right")
    return figure


def chart_bfcl(results: dict[str, dict[str, Any]]) -> Any:
    """The embedded model on every BFCL v4 category it was run on (``bfcl.json``): the base
    model, and the trained one when it was measured."""
    models = results["bfcl"]["models"]
    base = models["base"]
    labels = [c for c, row in base["categories"].items() if row.get("total")]
    series = {}
    scores = []
    for (label, record), color in zip(models.items(), (TOOLUSE, THIRD, BASELINE), strict=False):
        rows = [record["categories"].get(c) or {"correct": 0, "total": 0} for c in labels]
        values = [r["correct"] / r["total"] * 100 if r["total"] else 0 for r in rows]
        series[record.get("model", label)] = (values, color)
        scores.append(f"{label} {record['score']['overall']:.1%}")
    figure, ax = plt.subplots(figsize=(7.5, 0.32 * len(labels) * len(series) + 1))
    _hbars(ax, labels, series)
    ax.set_xlim(0, 110)
    ax.set_xlabel(f"entries right (%); overall score {', '.join(scores)}")
    if len(series) > 1:
        ax.legend(loc="lower right")
    return figure


def chart_grounding(results: dict[str, dict[str, Any]]) -> Any:
    """BFCL accuracy with the grounding check off and on, two samples (``grounding.json``)."""
    record = results["grounding"]
    halves = {"entries 1-50": record["categories"], "entries 51-100": record.get("held_out") or {}}
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharey=True)
    for ax, (title, table) in zip(axes, halves.items()):
        labels = list(record["categories"])
        rows = [table.get(c) for c in labels]
        off = [row["off"][0] / row["off"][1] * 100 if row else 0 for row in rows]
        on = [row["on"][0] / row["on"][1] * 100 if row else 0 for row in rows]
        _hbars(ax, labels, {"check off": (off, BASELINE), "check on": (on, TOOLUSE)})
        ax.set_title(title)
        ax.set_xlim(0, 110)
        ax.set_xlabel("entries right (%)")
        if ax is axes[0]:
            ax.legend(loc="lower right")
    return figure


def chart_loop(results: dict[str, dict[str, Any]]) -> Any:
    """Loop overhead per tool round against pydantic-ai (``loop.json``)."""
    f = results["loop"]["figures"]
    labels = ["tooluse run", "tooluse arun"]
    values = [f["tooluse_run_us_per_round"], f["tooluse_arun_us_per_round"]]
    colors = [TOOLUSE, TOOLUSE]
    if f.get("pydantic_ai_us_per_round") is not None:
        labels.append("pydantic-ai Agent.run")
        values.append(f["pydantic_ai_us_per_round"])
        colors.append(BASELINE)
    figure, ax = plt.subplots(figsize=(6.5, 2.2))
    bars = ax.barh(labels, values, color=colors)
    ax.bar_label(bars, fmt="%.0f us", padding=3, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(values) * 1.25)
    ax.set_xlabel("microseconds per tool round, scripted model (less is better)")
    return figure


def chart_validation(results: dict[str, dict[str, Any]]) -> Any:
    """Argument validation throughput per schema against ``jsonschema`` (``validation.json``)."""
    cases = results["validation"]["figures"]["cases"]
    labels = [c["case"] for c in cases]
    figure, ax = plt.subplots(figsize=(7.5, 0.6 * len(labels) + 1))
    _hbars(
        ax,
        labels,
        {
            "tooluse": ([c["tooluse_calls_per_s"] / 1000 for c in cases], TOOLUSE),
            "jsonschema": ([c["jsonschema_calls_per_s"] / 1000 for c in cases], BASELINE),
        },
    )
    ax.set_xlabel("thousand validations per second (more is better)")
    ax.legend(loc="lower right")
    return figure


def chart_serve(results: dict[str, dict[str, Any]]) -> Any:
    """``tooluse serve`` against ``llama_cpp.server`` on the same GGUF (``serve.json``)."""
    f = results["serve"]["figures"]
    ours, theirs = f["tooluse_serve"], f["llama_cpp_server"]
    names = ["tooluse serve", "llama_cpp.server"]
    figure, (speed, tools) = plt.subplots(1, 2, figsize=(9, 2.2))
    bars = speed.barh(
        names, [ours["tokens_per_s"], theirs["tokens_per_s"]], color=[TOOLUSE, BASELINE]
    )
    speed.bar_label(bars, fmt="%.0f", padding=3, fontsize=8)
    speed.set_xlabel("plain-text tokens per second")
    speed.invert_yaxis()
    bars = tools.barh(names, [ours["right_tool"], theirs["right_tool"]], color=[TOOLUSE, BASELINE])
    tools.bar_label(bars, fmt="%d", padding=3, fontsize=8)
    tools.set_xlim(0, ours["questions"])
    tools.set_xlabel(f"right tool, of {ours['questions']} questions")
    tools.invert_yaxis()
    tools.set_yticks([])
    return figure


def chart_tool_search(results: dict[str, dict[str, Any]]) -> Any:
    """Prompt size and right tool for 500 tools, three ways (``tool_search.json``)."""
    f = results["tool_search"]["figures"]
    names = ["all 500 schemas", "ToolSearch(top_k=5)", "tools_top_k=5"]
    tokens = [f["all_prompt_tokens"], f["search_prompt_tokens"], f["top_k_prompt_tokens"]]
    right = [f[f"{k}_right_tool_rate"] * 100 for k in ("all", "search", "top_k")]
    colors = [BASELINE, TOOLUSE, THIRD]
    figure, (size, found) = plt.subplots(1, 2, figsize=(9, 2.2))
    bars = size.barh(names, tokens, color=colors)
    size.bar_label(bars, labels=[f"{t:,}" for t in tokens], padding=3, fontsize=8)
    size.set_xscale("log")
    size.set_xlabel("prompt tokens (log scale)")
    size.invert_yaxis()
    bars = found.barh(names, right, color=colors)
    found.bar_label(bars, fmt="%.0f%%", padding=3, fontsize=8)
    found.set_xlim(0, 100)
    found.set_xlabel("right tool called (%)")
    found.invert_yaxis()
    found.set_yticks([])
    return figure


def chart_batch(results: dict[str, dict[str, Any]]) -> Any:
    """Tokens per second against the sequences decoded together (``batch.json``)."""
    f = results["batch"]["figures"]
    sizes = sorted(f["limit_tokens_per_s"], key=int)
    figure, ax = plt.subplots(figsize=(6.5, 3))
    ax.plot(
        [int(s) for s in sizes],
        [f["limit_tokens_per_s"][s] for s in sizes],
        marker="o",
        color=BASELINE,
        label="llama.cpp's own batched decode (the limit)",
    )
    engine = [s for s in sizes if s in f["engine_tokens_per_s"]]
    ax.plot(
        [int(s) for s in engine],
        [f["engine_tokens_per_s"][s] for s in engine],
        marker="o",
        color=TOOLUSE,
        label="tooluse's batch engine",
    )
    ax.set_xscale("log", base=2)
    ax.set_xticks([int(s) for s in sizes], sizes)
    ax.set_xlabel("sequences decoded together")
    ax.set_ylabel("tokens per second, all sequences")
    ax.legend()
    return figure


#: chart file name -> (the results files it reads, the function that draws it)
CHARTS: dict[str, tuple[tuple[str, ...], Figures]] = {
    "training.svg": (("train",), chart_training),
    "bfcl-categories.svg": (("bfcl",), chart_bfcl),
    "grounding.svg": (("grounding",), chart_grounding),
    "loop-overhead.svg": (("loop",), chart_loop),
    "validation.svg": (("validation",), chart_validation),
    "serve.svg": (("serve",), chart_serve),
    "tool-search.svg": (("tool_search",), chart_tool_search),
    "batch-throughput.svg": (("batch",), chart_batch),
}


def render_charts(results_dir: Path = RESULTS) -> dict[str, str]:
    """Every chart whose results files exist, as ``{file name: SVG text}``."""
    _style()
    out = {}
    for name, (sources, draw) in CHARTS.items():
        paths = {s: results_dir / f"{s}.json" for s in sources}
        if not all(p.is_file() for p in paths.values()):
            continue
        loaded = {s: json.loads(p.read_text(encoding="utf-8")) for s, p in paths.items()}
        out[name] = _svg(draw(loaded))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python benchmarks/docs_charts.py OUT_DIR", file=sys.stderr)
        return 2
    target = Path(argv[0])
    target.mkdir(parents=True, exist_ok=True)
    for name, svg in render_charts().items():
        (target / name).write_text(svg, encoding="utf-8")
        print(f"wrote {target / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
