"""The relevance threshold of the ``trained`` decider, picked on train cases only.

Scores every ``bfcl:relevance`` train case (BFCL requests outside the held-out table, with
their own functions, with another entry's functions, and live_irrelevance's) with
``RelevanceDecider`` on the embedded model plus an adapter, and prints, per threshold, the
share of requests that need a tool and would call, and the shares of the two kinds of no-call
requests that would answer in text. The figures go to ``benchmarks/results/relevance.json``.

    python benchmarks/measure_relevance.py --adapter runs/train/sft3/adapter.gguf

About 5 minutes on 2 idle cores (304 cases, a continuation per offered function).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "relevance.json"
THRESHOLDS = (-3.0, -1.4, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0)


def score_cases(adapter: Path | None) -> list[dict[str, Any]]:
    """Each train case's relevance score, whether it needs a tool, and its kind."""
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.decision import RelevanceDecider
    from tooluse.train.bfcl_teachers import bfcl_relevance_cases

    backend = LlamaCppBackend.default(n_ctx=4096, lora_path=adapter)
    decider = RelevanceDecider()
    rows = []
    try:
        for case in bfcl_relevance_cases(split="train"):
            kind = "call" if case.needs_tool else ("other" if "+tools:" in case.source else "none")
            score = decider.score(backend, case.request, case.tools)
            rows.append({"score": round(score, 3), "kind": kind, "source": case.source})
    finally:
        backend.close()
    return rows


def rates(rows: list[dict[str, Any]], threshold: float) -> dict[str, float]:
    """Per kind: the share decided right at ``threshold`` (call for "call", text otherwise)."""
    out = {}
    for kind in ("call", "other", "none"):
        scores = [r["score"] for r in rows if r["kind"] == kind]
        right = [s >= threshold if kind == "call" else s < threshold for s in scores]
        out[kind] = round(sum(right) / len(right), 3) if right else 0.0
    out["mean"] = round((out["call"] + (out["other"] + out["none"]) / 2) / 2, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", type=Path, default=None, help="A GGUF LoRA (or none).")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.monotonic()
    rows = score_cases(args.adapter)
    table = {str(t): rates(rows, t) for t in THRESHOLDS}
    print("threshold  calls kept  other functions refused  live_irrelevance refused  mean")
    for threshold, rate in table.items():
        print(
            f"{threshold:>9}  {rate['call']:>10.2f}  {rate['other']:>23.2f}  "
            f"{rate['none']:>24.2f}  {rate['mean']:.3f}"
        )
    record = {
        "adapter": str(args.adapter) if args.adapter else None,
        "cases": len(rows),
        "seconds": round(time.monotonic() - started, 1),
        "thresholds": table,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
