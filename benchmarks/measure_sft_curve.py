"""How the trained model's validation moves with the steps of SFT on a recipe's gold data.

``tooluse train sft --recipe R`` runs in stages on one run directory, each stage going on from
the last one's checkpoint (the learning rate is constant, as in ``make train``), and after each
stage the adapter plays as the plain model (its own odds of a call decide, no grounding check:
``measure_rules.py``'s "plain" variant) on ``measure_rules.py``'s clean validation slices: train
tasks that neither ``make train``'s rft run nor the recipe's gold conversations hold, so no
figure comes from a test split or from a task the adapter saw. Step 0 is the untouched model.

    python benchmarks/measure_sft_curve.py --steps 16,32,48 --out runs/sft-curve

Figures go to ``benchmarks/results/sft_curve.json`` (per stage: steps, seconds, loss, solved and
tried per environment). A stage whose adapter and figures are in ``OUT`` is not run again.
Nothing else should run beside it (llama.cpp and torch each slow several-fold beside another
busy process).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from measure_rules import RFT_ENVIRONMENTS, VARIANTS, clean_slice, gold_user_texts, play

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "sft_curve.json"
RECIPE = ROOT / "src" / "tooluse" / "train" / "recipes" / "generalist.toml"
#: `make train`'s SFT settings.
TRAIN_ARGS = ("--max-length", "1152", "--batch-size", "8", "--learning-rate", "3e-4")
TASKS = 10


def _train(recipe: Path, out: Path, steps: int, save_steps: int) -> dict[str, Any]:
    """Train to ``steps`` in ``out`` (going on from its last checkpoint); the run's card."""
    command = [sys.executable, "-m", "tooluse", "train", "sft", "--recipe", str(recipe),
               *TRAIN_ARGS, "--steps", str(steps), "--save-steps", str(save_steps),
               "--out", str(out), "-q"]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT)
    card: dict[str, Any] = json.loads((out / "card.json").read_text(encoding="utf-8"))
    shutil.copyfile(out / "adapter.gguf", out / f"adapter-{steps}.gguf")
    return card


def _stage(
    model: str, slices: dict[str, Any], card: dict[str, Any] | None, adapter: str | None
) -> dict[str, Any]:
    figures = play(model, slices)
    return {
        "adapter": adapter,  # the file in the run directory
        "solved": sum(f["solved"] for f in figures.values()),
        "tried": sum(f["tried"] for f in figures.values()),
        "by_env": figures,
        "train": None
        if card is None
        else {
            "wall_seconds": card["wall_seconds"],
            "resumed_from": card["resumed_from"],
            **card["metrics"],
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    parser.add_argument("--steps", default="16,32,48", help="The stages, in steps, ascending.")
    parser.add_argument("--tasks", type=int, default=TASKS, help="Tasks per environment.")
    parser.add_argument("--out", type=Path, default=Path("runs/sft-curve"))
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    stages = sorted({int(s) for s in args.steps.split(",")})
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "data" / "data.jsonl"
    subprocess.run([sys.executable, "-m", "tooluse", "train", "data", "--recipe",
                    str(args.recipe), "--out", str(data.parent)], check=True, cwd=ROOT)  # fmt: skip
    gold = gold_user_texts(data)
    slices = {name: clean_slice(name, gold, args.tasks) for name in RFT_ENVIRONMENTS}
    measured = args.out / "curve.json"
    done: dict[str, Any] = (
        json.loads(measured.read_text(encoding="utf-8")) if measured.exists() else {}
    )
    plain = VARIANTS["plain"]
    for steps in [0, *stages]:
        if str(steps) in done:
            continue
        if steps == 0:
            done["0"] = _stage(f"local:base#n_ctx=2048{plain}", slices, None, None)
        else:
            card = _train(args.recipe, args.out, steps, stages[0])
            adapter = args.out / f"adapter-{steps}.gguf"
            model = f"local:base#lora={adapter}#n_ctx=2048{plain}"
            done[str(steps)] = _stage(model, slices, card, adapter.name)
        measured.write_text(json.dumps(done, indent=2) + "\n", encoding="utf-8")
        print(f"step {steps}: {done[str(steps)]['solved']}/{done[str(steps)]['tried']}", flush=True)
    result = {
        "recipe": str(args.recipe.relative_to(ROOT) if args.recipe.is_absolute() else args.recipe),
        "train_args": list(TRAIN_ARGS),
        "variant": f"plain ({plain})",
        "tasks": args.tasks,
        "slices": {n: t for n, (_, t) in slices.items()},
        "stages": done,
    }
    args.results.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
