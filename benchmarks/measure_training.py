"""Base against trained: the embedded model with and without a `tooluse train` adapter, on
the **test** splits, same engine, same entries, one worker.

The BFCL single-turn categories, which training never touches, run on the entries of the
BFCL page's 50-entry table (the first 50 of each category's seed-0 100-entry sample).

    python benchmarks/measure_training.py --adapter runs/train/sft/adapter.gguf
    python benchmarks/measure_training.py --adapter A --only math:arithmetic --limit 10
    python benchmarks/measure_training.py --adapter A --decider trained   # relevance-trained
    python benchmarks/measure_training.py --adapter A --narrow first      # ranked first call
    python benchmarks/measure_training.py --adapter A --decider default-then-model \
        --narrow on --judge base   # the untouched model judges, the adapter writes

Each evaluation is a `tooluse eval` command (printed before it runs, so any row can be
reproduced by hand); run directories go to ``--runs`` (``runs/measure-training``) and are
resumed when the script is started again. The figures go to
``benchmarks/results/train.json``: per evaluation and model the solved count, the rate and the
items per minute, plus the adapter's ``card.json``. This is a measurement, not a benchmark of
speed: it takes 40-60 minutes on the 2-core machine, and nothing else should run beside it
(llama.cpp's threads slow down about tenfold next to another busy process).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "train.json"
BFCL_CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
)
#: The reasoning-gym datasets whose answers the python tool can compute.
REASONING_GYM = ("basic_arithmetic", "chain_sum", "products")


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """One row of the table: an environment's test split, or BFCL single-turn categories."""

    name: str
    limit: int
    tool_choice: str = "auto"  # environments only: "required" forces each first reply's call

    def command(self, model: str, out: Path) -> list[str]:
        """The `tooluse eval` command line for ``model`` writing to ``out``."""
        if self.name.startswith("bfcl:multi_turn"):  # 4-5k-token prompts: the full context
            model += ("#" if ":" in model else ":#") + "n_ctx=8192"
        if self.name == "bfcl":
            return [
                *_tooluse(),
                "eval",
                "bfcl",
                "-m",
                model,
                "-c",
                ",".join(BFCL_CATEGORIES),
                "--sample",
                "100",
                "--seed",
                "0",
                "--limit",
                str(self.limit),
                "--max-tokens",
                "128",
                "--out",
                str(out),
            ]
        return [
            *_tooluse(),
            "eval",
            "env",
            self.name,
            "--model",
            model,
            "--split",
            "test",
            "--limit",
            str(self.limit),
            "--max-tokens",
            "256",
            "--quiet",
            *(("--tool-choice", self.tool_choice) if self.tool_choice != "auto" else ()),
            "--out",
            str(out),
        ]


def _tooluse() -> list[str]:
    return [sys.executable, "-m", "tooluse"]


def default_evaluations(limit: int | None) -> list[Evaluation]:
    """math:arithmetic (50), three reasoning-gym datasets (20 each), BFCL multi-turn base (4)
    and the seven single-turn categories (50 each); ``limit`` replaces every size."""
    rows = [Evaluation(name="math:arithmetic", limit=limit or 50)]
    rows += [Evaluation(name=f"reasoning_gym:{n}", limit=limit or 20) for n in REASONING_GYM]
    rows.append(Evaluation(name="bfcl:multi_turn_base", limit=limit or 4))
    rows.append(Evaluation(name="bfcl", limit=limit or 50))
    return rows


def _figures(evaluation: Evaluation, out: Path) -> dict[str, Any]:
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    if evaluation.name == "bfcl":
        categories = {
            name: {"correct": s["correct"], "total": s["total"], "rate": s["accuracy"]}
            for name, s in summary["categories"].items()
        }
        return {
            "correct": summary["correct"],
            "total": summary["total"],
            "rate": summary["accuracy"],
            "categories": categories,
            "items_per_minute": summary.get("items_per_minute"),
        }
    solved = round(summary["success_rate"] * summary["trajectories"])
    return {
        "correct": solved,
        "total": summary["trajectories"],
        "rate": summary["success_rate"],
        "items_per_minute": summary.get("items_per_minute"),
    }


def measure(evaluation: Evaluation, model: str, out: Path) -> dict[str, Any]:
    """Run (or resume) one evaluation of ``model``; its figures."""
    command = evaluation.command(model, out)
    print("$ tooluse " + " ".join(command[3:]), flush=True)
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    figures = _figures(evaluation, out)
    figures["wall_seconds"] = round(time.monotonic() - started, 1)
    print(f"  {evaluation.name} {model}: {figures['correct']}/{figures['total']}", flush=True)
    return figures


#: The trained model's settings with a fixed set of values: name, values, help.
SETTINGS = (
    (
        "narrow",
        ("on", "off", "first"),
        "Whether the trained model's calls are held to the best-ranked tool "
        "(local:#narrow=...; an adapter's default is off).",
    ),
    (
        "judge",
        ("model", "base"),
        "Where the trained model's call decisions and tool ranking are read "
        "(local:#judge=...; base: the untouched model).",
    ),
    (
        "grounding",
        ("on", "off", "chain"),
        "The trained model's grounding check (local:#grounding=...; chain: calls after "
        "tool results too).",
    ),
    ("text", ("model", "base"), "Who writes the trained model's text answers (local:#text=...)."),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", type=Path, required=True, help="The trained GGUF LoRA.")
    parser.add_argument("--runs", type=Path, default=Path("runs/measure-training"))
    parser.add_argument("--limit", type=int, default=None, help="Entries per evaluation.")
    parser.add_argument("--only", action="append", default=None, help="Evaluation name(s).")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--models",
        default="base,trained",
        help="Which of base,base-unchecked,trained to run (comma-separated).",
    )
    parser.add_argument(
        "--decider",
        default=None,
        help="How the trained model decides to call (local:#decider=NAME), e.g. 'trained' "
        "for an adapter trained with the relevance teacher.",
    )
    for name, choices, what in SETTINGS:
        parser.add_argument(f"--{name}", choices=choices, default=None, help=what)
    parser.add_argument(
        "--lora-scale", type=float, default=None, help="The adapter's scale (#lora_scale=X)."
    )
    parser.add_argument(
        "--card",
        type=Path,
        default=None,
        help="An adapter card (JSON) whose 'measured' block gets the test figures written "
        "(the shipped adapter's card, when it is the adapter measured).",
    )
    parser.add_argument(
        "--env-tool-choice",
        choices=("auto", "required"),
        default="auto",
        help="The environments' first request of each task (both models): required makes "
        "the model start with a call.",
    )
    args = parser.parse_args(argv)
    if not args.adapter.is_file():
        parser.error(f"no adapter at {args.adapter}")
    # the trained model's chosen settings, in one order for its model string and run folders
    scale = f"{args.lora_scale:g}" if args.lora_scale is not None else None
    named = [(name, getattr(args, name)) for name, _, _ in SETTINGS]
    chosen = [(k, v) for k, v in [("lora_scale", scale), ("decider", args.decider), *named] if v]
    trained = f"local:base#lora={args.adapter}" + "".join(f"#{k}={v}" for k, v in chosen)
    trained_setting = "".join(f"-{'scale' if k == 'lora_scale' else k}-{v}" for k, v in chosen)
    # "base" has the local backend's grounding check (the default); "base-unchecked" is the
    # base model as the table's older columns measured it, before the check existed
    every = {"base": "local:base", "base-unchecked": "local:base#grounding=off", "trained": trained}
    models = {k: v for k, v in every.items() if k in args.models.split(",")}
    evaluations = [
        e if e.name.startswith("bfcl") else replace(e, tool_choice=args.env_tool_choice)
        for e in default_evaluations(args.limit)
        if not args.only or e.name in args.only
    ]
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    table: dict[str, Any] = dict(previous.get("evaluations", {}))
    for evaluation in evaluations:
        row = dict(table.get(evaluation.name, {}))
        for label, model in models.items():
            # a run directory per setting: a resumed run must not mix two settings' items
            setting = "-required" if evaluation.tool_choice == "required" else ""
            setting += trained_setting if label == "trained" else ""
            out = args.runs / f"{evaluation.name.replace(':', '-')}-{label}{setting}"
            figures = measure(evaluation, model, out)
            earlier = row.get(label) or {}
            if not figures.get("items_per_minute") and earlier.get("items_per_minute"):
                # a resumed run that had nothing left to do: the timing of the run that did it
                figures["items_per_minute"] = earlier["items_per_minute"]
                figures["wall_seconds"] = earlier["wall_seconds"]
            row[label] = figures
        table[evaluation.name] = row
        _write(args, table)
    return 0


def measured_block(record: dict[str, Any], model: str) -> dict[str, Any]:
    """The ``measured`` block of an adapter card: ``[correct, total]`` per evaluation and
    model (BFCL per category and in all), from a ``train.json`` record."""
    evaluations: dict[str, Any] = {}
    for name, row in record["evaluations"].items():
        if name == "bfcl":
            categories = next(iter(row.values())).get("categories", {})
            for category in categories:
                evaluations[f"bfcl:{category}"] = {
                    label: [
                        cell["categories"][category]["correct"],
                        cell["categories"][category]["total"],
                    ]
                    for label, cell in row.items()
                }
        evaluations[name] = {label: [cell["correct"], cell["total"]] for label, cell in row.items()}
    return {
        "model": model,
        "split": record["split"],
        "source": "benchmarks/results/train.json",
        "evaluations": evaluations,
    }


def _write(args: argparse.Namespace, table: dict[str, Any]) -> None:
    card = args.adapter.parent / "card.json"
    if not card.is_file():  # the shipped adapter's card is named after it
        card = args.adapter.with_suffix(".json")
    training = json.loads(card.read_text()) if card.is_file() else None
    if training is not None:
        training.pop("measured", None)  # the figures this record holds itself
    run = card.parent.parent / "card.json"  # a `train rft` round's adapter: the run's card
    of_a_round = training is not None and "round" in training
    rft_run = json.loads(run.read_text()) if of_a_round and run.is_file() else None
    record = {
        "adapter": str(args.adapter),
        "adapter_bytes": args.adapter.stat().st_size,
        "card": training,
        "rft_run": rft_run,
        "split": "test",
        "decider": args.decider or "model",
        "narrow": args.narrow or "off",
        "judge": args.judge or "model",
        "grounding": args.grounding or "on",
        "text": args.text or "model",
        "env_tool_choice": args.env_tool_choice,
        "lora_scale": args.lora_scale if args.lora_scale is not None else 1.0,
        "evaluations": table,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if args.card is not None:
        shipped = json.loads(args.card.read_text(encoding="utf-8"))
        shipped["measured"] = measured_block(record, "local")
        args.card.write_text(json.dumps(shipped, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
