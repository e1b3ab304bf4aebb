"""Does each of the embedded model's rules still earn its place on top of a trained adapter?

The rules (``decider``, ``narrow``, ``grounding``, ``judge``, ``text``; see
``tooluse.local.model_strings``) were each picked for the untouched model or an adapter
trained on tooluse's own templates. This plays a ``train rft`` adapter, greedy and in ``auto``
(where the rules act), on a **clean validation slice** of each environment's train split: train
tasks that neither the run's environments (its sampled and validation tasks) nor the recipe's
gold conversations hold, so no figure comes from a test split or from a task the adapter saw.
Each rule is measured added to the plain model (the model's own odds of a call decide, no
grounding check), and the library's defaults and ``local``'s full set of rules beside them.

    python benchmarks/measure_rules.py --adapter runs/train/rft/round-1/adapter.gguf \\
        --gold runs/train/rft/data/data.jsonl --tasks 12

Figures go to ``benchmarks/results/rules.json`` (per variant and environment: solved, tried,
seconds), resumed per variant when the script runs again with the same ``--out``. Nothing
else should run beside it (llama.cpp's threads slow tenfold next to another busy process).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "rules.json"
#: The environments and train sizes of `make train`'s rft run (its RFT_ENVS).
RFT_ENVIRONMENTS = (
    "bfcl:simple_python",
    "bfcl:multiple",
    "bfcl:parallel",
    "bfcl:irrelevance",
    "bfcl:live_irrelevance",
    "math:arithmetic",
    "reasoning_gym:gsm_symbolic",
)
RFT_TASKS = 24
#: The pool of train tasks a clean slice is taken from (another seed for generated ones).
POOL = 120
POOL_SEED = 7
#: name -> the model string's suffixes after the adapter. "plain" is the trained model alone.
VARIANTS = {
    "plain": "#decider=model#grounding=off",
    "defaults": "",
    "+grounding": "#decider=model#grounding=on",
    "+grounding=chain": "#decider=model#grounding=chain",
    "+narrow=first": "#decider=model#grounding=off#narrow=first",
    "+decider=default-then-model": "#decider=default-then-model#grounding=off",
    "+judge=base": "#decider=model#grounding=off#judge=base",
    "+text=base": "#decider=model#grounding=off#text=base",
    "local's rules": "#decider=default-then-model#narrow=first#grounding=chain#judge=base"
    "#text=base",
}


def _prompts_of(env: Any) -> set[str]:
    return {task.prompt for task in env.tasks}


def clean_slice(name: str, gold_users: set[str], size: int) -> tuple[Any, list[int]]:
    """Environment ``name`` on a pool of train tasks, and the first ``size`` task numbers that
    neither the rft run's tasks nor the gold conversations hold."""
    from tooluse.train.data import train_environment
    from tooluse.train.leaks import LeakIndex, TestItem

    with train_environment(name, "train", RFT_TASKS, 0, {}) as used:
        seen = _prompts_of(used)
    generated = name == "math:arithmetic" or name.startswith("reasoning_gym:")
    env = train_environment(name, "train", POOL, POOL_SEED if generated else 0, {})
    items = [TestItem(source=name, id=str(n), text=task.prompt) for n, task in enumerate(env.tasks)]
    index = LeakIndex(items)
    held = {int(hit[0].id) for text in gold_users if (hit := index.find(text)) is not None}
    clean = [n for n, task in enumerate(env.tasks) if n not in held and task.prompt not in seen]
    return env, clean[:size]


def gold_user_texts(path: Path) -> set[str]:
    texts = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        for message in json.loads(line)["messages"]:
            if message.get("role") == "user" and message.get("content"):
                texts.add(message["content"])
    return texts


def play(model: str, slices: dict[str, tuple[Any, list[int]]]) -> dict[str, Any]:
    """Greedy trajectories of ``model`` on every slice, as rft's validation plays them."""
    from tooluse.providers import load_model
    from tooluse.train.rft import RFTOptions, _close, _play_all, _runner
    from tooluse.train.sft import SFTOptions

    options = RFTOptions(sft=SFTOptions(out=Path("unused")), max_tokens=160, max_turns=3)
    backend = load_model(model)
    figures: dict[str, Any] = {}
    try:
        for name, (env, tasks) in slices.items():
            started = time.monotonic()
            runner = _runner(env, backend, options, 0.0, 0)
            played = _play_all(backend, [(runner, n) for n in tasks])
            figures[name] = {
                "solved": sum(1 for t in played if t.success),
                "tried": len(played),
                "seconds": round(time.monotonic() - started, 1),
            }
            print(f"  {name}: {figures[name]['solved']}/{len(played)}", flush=True)
    finally:
        _close(backend)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", type=Path, required=True)
    parser.add_argument("--gold", type=Path, required=True, help="The recipe's data.jsonl.")
    parser.add_argument("--tasks", type=int, default=12, help="Tasks per environment.")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    gold = gold_user_texts(args.gold)
    slices = {name: clean_slice(name, gold, args.tasks) for name in RFT_ENVIRONMENTS}
    done: dict[str, Any] = {}
    if args.out.exists():
        previous = json.loads(args.out.read_text(encoding="utf-8"))
        if previous.get("adapter") == str(args.adapter) and previous.get("tasks") == args.tasks:
            done = previous["variants"]
    for variant in args.variant or list(VARIANTS):
        if variant in done:
            continue
        model = f"local:base#lora={args.adapter}#n_ctx=2048{VARIANTS[variant]}"
        print(f"{variant}: {model}", flush=True)
        figures = play(model, slices)
        solved = sum(f["solved"] for f in figures.values())
        tried = sum(f["tried"] for f in figures.values())
        done[variant] = {"model": model, "solved": solved, "tried": tried, "by_env": figures}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {
                    "adapter": str(args.adapter),
                    "tasks": args.tasks,
                    "slices": {n: t for n, (_, t) in slices.items()},
                    "variants": done,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
        print(f"{variant}: {solved}/{tried}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
