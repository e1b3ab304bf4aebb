"""The embedded model on every BFCL v4 category, with the official overall score.

    python benchmarks/measure_bfcl.py                     # the base model, the BFCL benchmark page's sample
    python benchmarks/measure_bfcl.py --label trained --model "local:#n_ctx=8192"

The untouched model runs with SmolLM2's full 8,192-token context (``local:base#n_ctx=8192``):
the multi-turn and memory prompts do not fit the default 4,096.

A fixed seeded sample: the single-turn categories (Python, Java, JavaScript, live,
irrelevance, relevance) 10 entries each from their seed-0 100-entry sample; the multi-turn and
memory categories the first 2 entries of their test split; format_sensitivity 52 entries of
its seed-0 sample (reported apart from the score, as BFCL does). The two web-search categories
need a search API key; without one they are not run and the score counts them as 0, naming
them as missing (bfcl-eval's rule for a category that was not run).

Each evaluation is a `tooluse eval` command, printed before it runs; run directories go to
``--runs`` and resume when the script is started again. The figures go to
``benchmarks/results/bfcl.json`` under ``--label``: per category the counts, the overall
score and its groups by :func:`tooluse.evals.bfcl.overall.bfcl_score` over all runs as one
results set (as ``tooluse report --combine`` does), and the format-sensitivity summary. It
takes about half an hour on the 2-core machine; run nothing else beside it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooluse.evals.bfcl.data import MULTI_TURN_CATEGORY_NAMES
from tooluse.evals.bfcl.overall import MEMORY_CATEGORIES

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "bfcl.json"
#: `tooluse eval env` plays these (the multi-turn and memory categories).
ENVIRONMENTS = (*MULTI_TURN_CATEGORY_NAMES, *MEMORY_CATEGORIES)
SINGLE_TURN_LIMIT = 10
ENVIRONMENT_LIMIT = 2
FORMAT_SAMPLE = 52


def _tooluse(*args: str) -> list[str]:
    return [sys.executable, "-m", "tooluse", *args]


def commands(model: str, runs: Path) -> dict[str, list[str]]:
    """Each run directory's `tooluse eval` command line."""
    out: dict[str, list[str]] = {
        "single_turn": _tooluse(
            "eval", "bfcl", "-m", model, "-c", "single_turn", "--sample", "100",
            "--seed", "0", "--limit", str(SINGLE_TURN_LIMIT), "--max-tokens", "128",
            "--out", str(runs / "single_turn"),
        ),
        "format_sensitivity": _tooluse(
            "eval", "bfcl", "-m", model, "-c", "format_sensitivity", "--sample",
            str(FORMAT_SAMPLE), "--seed", "0", "--max-tokens", "128",
            "--out", str(runs / "format_sensitivity"),
        ),
    }  # fmt: skip
    for name in ENVIRONMENTS:
        out[name] = _tooluse(
            "eval", "env", f"bfcl:{name}", "--model", model, "--split", "test", "--limit",
            str(ENVIRONMENT_LIMIT), "--max-tokens", "128", "--quiet", "--out", str(runs / name),
        )  # fmt: skip
    return out


def run_all(model: str, runs: Path, skip: Sequence[str] = ()) -> dict[str, float]:
    """Run every evaluation but those in ``skip`` that has no summary yet (an interrupted one
    resumes); the seconds of each, as its summary records them."""
    seconds = {}
    for name, command in commands(model, runs).items():
        if name in skip:
            continue
        summary = runs / name / "summary.json"
        if not summary.is_file():
            print("$ tooluse " + " ".join(command[3:]), flush=True)
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        seconds[name] = round(float(json.loads(summary.read_text())["seconds"]), 1)
        print(f"  {name}: {seconds[name]} s", flush=True)
    return seconds


def figures(runs: Path, seconds: dict[str, float]) -> dict[str, Any]:
    """Counts per category, the overall score of the scored runs, format sensitivity."""
    from tooluse.evals.bfcl.format_sensitivity import format_sensitivity_summary
    from tooluse.evals.report import load_run
    from tooluse.evals.report_score import score_of_runs

    loaded = {name: load_run(runs / name) for name in seconds}
    scored = [(n, run.records) for n, run in loaded.items() if n != "format_sensitivity"]
    score = score_of_runs(scored)
    categories = {c: {"correct": r.correct, "total": r.total} for c, r in score.categories.items()}
    sensitivity = format_sensitivity_summary(loaded["format_sensitivity"].records)
    return {
        "categories": categories,
        "score": score.to_dict(),
        "format_sensitivity": sensitivity,
        "wall_seconds": seconds,
        "commands": {n: "tooluse " + " ".join(c[3:]) for n, c in commands("MODEL", runs).items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:base#n_ctx=8192")
    parser.add_argument("--label", default="base", help="The key of these figures.")
    parser.add_argument("--runs", type=Path, default=Path("runs/measure-bfcl"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--skip", action="append", default=[], help="A run not to make (it counts as missing)."
    )
    args = parser.parse_args(argv)
    runs = args.runs / args.label
    record = json.loads(args.out.read_text()) if args.out.is_file() else {}
    record.setdefault("models", {})
    found = figures(runs, run_all(args.model, runs, args.skip))
    found["skipped"] = list(args.skip)
    found["model"] = args.model
    found["recorded"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    record["models"][args.label] = found
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(found["score"], indent=1)[:2000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
