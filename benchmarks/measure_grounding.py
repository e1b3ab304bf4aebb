"""The local backend's grounding check on BFCL: the BFCL page's 50-entry table with it and without.

Runs the embedded model with the check off (``local:#grounding=off``) on the BFCL page's
table's entries (seven single-turn categories, 50 each: ``--sample 100 --seed 0 --limit 50``),
then reads each reply's calls against its request with ``grounded_share``, the check's own
function. With the check on, a refused call becomes a text answer and every other reply stays
as it was (greedy decoding, same prompt), so each entry's verdict with the check follows: a
refused call passes in irrelevance and fails elsewhere. Per category it prints the correct
counts off and on, and, per share threshold, what the check would give (the check calls when
more than ``GROUNDED_SHARE`` of the counted values are grounded).

``--held-out N`` also runs the same sample's next N entries per category (51-100 of each),
which the rule was never tried on while it was written, and reports them apart.

A second, smaller run with the check on (``--verify N`` entries of irrelevance and
simple_python) checks that reading: its verdicts must equal the ones computed from the run
without the check. Figures go to ``benchmarks/results/grounding.json``.

    python benchmarks/measure_grounding.py --runs runs/grounding

About 45 minutes on 2 idle cores (the live_multiple entries have long tool lists); the runs
resume where they stopped.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "grounding.json"
sys.path.insert(0, str(HERE))  # the sibling module below
# the BFCL page's seven categories, as the training table measures them
from measure_training import BFCL_CATEGORIES as CATEGORIES  # noqa: E402

THRESHOLDS = (0.0, 0.25, 0.5, 0.75, 0.99)


def bfcl_command(model: str, categories: tuple[str, ...], limit: int, out: Path) -> list[str]:
    """The `tooluse eval bfcl` command of the BFCL page's entries."""
    return [
        *(sys.executable, "-m", "tooluse", "eval", "bfcl", "-m", model),
        *("-c", ",".join(categories), "--sample", "100", "--seed", "0"),
        *("--limit", str(limit), "--max-tokens", "128", "--out", str(out), "--no-progress"),
    ]


def run_records(model: str, categories: tuple[str, ...], limit: int, out: Path) -> list[dict]:
    command = bfcl_command(model, categories, limit, out)
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    from tooluse.evals.bfcl.data import load_bfcl_categories, select_entries

    wanted = {
        e.id
        for e in select_entries(load_bfcl_categories(list(categories)), sample=100, limit=limit)
    }
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return [r for r in records if r["id"] in wanted]  # the directory may hold more entries


def shares(records: list[dict]) -> dict[str, float | None]:
    """Each record's grounded share (``None``: no call, or no value counted)."""
    from tooluse.evals.bfcl.data import load_bfcl_categories, tools_for_entry
    from tooluse.local.grounding import conversation_text, grounded_share
    from tooluse.messages import ToolCall

    entries = {e.id: e for e in load_bfcl_categories(sorted({r["category"] for r in records}))}
    out: dict[str, float | None] = {}
    for record in records:
        entry = entries[record["id"]]
        tools, names = tools_for_entry(entry)
        ours = {bfcl: name for name, bfcl in names.items()}
        calls = [
            ToolCall(name=ours.get(name, name), arguments=arguments)
            for decoded in record.get("decoded") or ()
            for name, arguments in decoded.items()
        ]
        text = conversation_text(entry.messages())
        out[record["id"]] = grounded_share(calls, text, tools) if calls else None
    return out


def verdicts_with_check(
    records: list[dict], share_of: dict[str, float | None], threshold: float
) -> dict[str, bool]:
    """Each entry's verdict had the check refused calls at or below ``threshold``."""
    out = {}
    for record in records:
        share = share_of[record["id"]]
        refused = share is not None and share <= threshold
        irrelevance = record["category"].endswith("irrelevance")
        out[record["id"]] = irrelevance if refused else bool(record.get("valid"))
    return out


def by_category(records: list[dict], verdicts: dict[str, bool]) -> dict[str, list[int]]:
    table: dict[str, list[int]] = {}
    for record in records:
        row = table.setdefault(record["category"], [0, 0])
        row[0] += verdicts[record["id"]]
        row[1] += 1
    return table


def compare(records: list[dict], on: dict[str, bool]) -> dict[str, dict[str, list[int]]]:
    """Per category: correct and total with the check off (as run) and on; printed."""
    off = by_category(records, {r["id"]: bool(r.get("valid")) for r in records})
    table = {name: {"off": off[name], "on": row} for name, row in by_category(records, on).items()}
    print(f"{'category':<20}{'off':>8}{'on':>8}{'points':>8}")
    for name, row in table.items():
        (a, n), (b, _) = row["off"], row["on"]
        print(f"{name:<20}{f'{a}/{n}':>8}{f'{b}/{n}':>8}{round(100 * (b - a) / n):>+8}")
    return table


def main(argv: list[str] | None = None) -> int:
    from tooluse.local.grounding import GROUNDED_SHARE

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/grounding"))
    parser.add_argument("--limit", type=int, default=50, help="Entries per category.")
    parser.add_argument("--verify", type=int, default=15, help="Entries checked with it on.")
    parser.add_argument(
        "--held-out", type=int, default=50, help="The next N entries per category, apart."
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    records = run_records("local:base#grounding=off", CATEGORIES, args.limit, args.runs / "off")
    share_of = shares(records)
    on = verdicts_with_check(records, share_of, GROUNDED_SHARE)
    table = compare(records, on)
    held_out: dict[str, Any] = {}
    if args.held_out:  # the same sample's next entries, never looked at while writing the rule
        seen = {r["id"] for r in records}
        more = run_records(
            "local:base#grounding=off", CATEGORIES, args.limit + args.held_out, args.runs / "off"
        )
        more = [r for r in more if r["id"] not in seen]
        held_out = compare(more, verdicts_with_check(more, shares(more), GROUNDED_SHARE))
    curve = {
        str(t): {
            k: v[0]
            for k, v in by_category(records, verdicts_with_check(records, share_of, t)).items()
        }
        for t in THRESHOLDS
    }
    for threshold, row in curve.items():
        print(f"  refused at share <= {threshold}: {row}")

    checked = run_records(
        "local:base", ("irrelevance", "simple_python"), args.verify, args.runs / "on"
    )
    agree = sum(on[r["id"]] == bool(r.get("valid")) for r in checked)
    print(f"verified with the check on: {agree}/{len(checked)} verdicts as computed", flush=True)
    figures: dict[str, Any] = {
        "recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": round(time.perf_counter() - started, 1),
        "command": " ".join(
            bfcl_command("local:base#grounding=off", CATEGORIES, args.limit, Path("OUT"))
        ),
        "grounded_share": GROUNDED_SHARE,
        "categories": table,
        "held_out": held_out,
        "thresholds": curve,
        "verified": {"agree": agree, "total": len(checked)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"-> {args.out}")
    return 0 if agree == len(checked) else 1


if __name__ == "__main__":
    raise SystemExit(main())
