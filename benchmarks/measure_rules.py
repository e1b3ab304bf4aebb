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

The shipped adapter (trained by SFT on the arithmetic teachers, train seeds 0-119, and played
by ``local`` at half strength) is measured the same way, on a pool of generated tasks from
seeds it was not trained on and with no gold conversations to leave out:

    python benchmarks/measure_rules.py --adapter src/tooluse/local/adapters/smollm2-135m-arithmetic.gguf \\
        --lora-scale 0.5 --pool-seed 1000 --tasks 10 --out benchmarks/results/rules_shipped.json

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
#: `local`'s rules, in the order its model string spells them.
LOCAL_RULES = {
    "decider": "default-then-model",
    "narrow": "first",
    "grounding": "chain",
    "judge": "base",
    "text": "base",
}
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
    "local's rules": "".join(f"#{key}={value}" for key, value in LOCAL_RULES.items()),
    # each of local's rules taken away from the whole set (judge=base acts only in the
    # grounding check, so added to the plain model it changes nothing)
    **{
        f"local's rules, {name}": "".join(
            f"#{key}={other if key == rule else value}" for key, value in LOCAL_RULES.items()
        )
        for name, (rule, other) in {
            "decider=model": ("decider", "model"),
            "no narrow": ("narrow", "off"),
            "grounding=on": ("grounding", "on"),
            "judge=model": ("judge", "model"),
            "text=model": ("text", "model"),
        }.items()
    },
}


def _prompts_of(env: Any) -> set[str]:
    return {task.prompt for task in env.tasks}


def clean_slice(
    name: str, gold_users: set[str], size: int, pool_seed: int = POOL_SEED
) -> tuple[Any, list[int]]:
    """Environment ``name`` on a pool of train tasks (generated ones from ``pool_seed``), and
    the first ``size`` task numbers that neither the rft run's tasks nor the gold conversations
    hold."""
    from tooluse.train.data import train_environment
    from tooluse.train.leaks import LeakIndex, TestItem

    with train_environment(name, "train", RFT_TASKS, 0, {}) as used:
        seen = _prompts_of(used)
    generated = name == "math:arithmetic" or name.startswith("reasoning_gym:")
    env = train_environment(name, "train", POOL, pool_seed if generated else 0, {})
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
    parser.add_argument(
        "--gold", type=Path, default=None, help="The recipe's data.jsonl (none: nothing left out)."
    )
    parser.add_argument("--lora-scale", type=float, default=None, help="The adapter's strength.")
    parser.add_argument(
        "--pool-seed", type=int, default=POOL_SEED, help="The first seed of generated tasks."
    )
    parser.add_argument("--tasks", type=int, default=12, help="Tasks per environment.")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    gold = gold_user_texts(args.gold) if args.gold is not None else set()
    slices = {
        name: clean_slice(name, gold, args.tasks, args.pool_seed) for name in RFT_ENVIRONMENTS
    }
    setup = {
        "adapter": str(args.adapter),
        "tasks": args.tasks,
        "lora_scale": args.lora_scale,
        "pool_seed": args.pool_seed,
        "gold": str(args.gold) if args.gold is not None else None,
    }
    scale = f"#lora_scale={args.lora_scale}" if args.lora_scale is not None else ""
    done: dict[str, Any] = {}
    if args.out.exists():
        previous = json.loads(args.out.read_text(encoding="utf-8"))
        if all(previous.get(key, POOL_SEED if key == "pool_seed" else None) == value
               for key, value in setup.items()):  # fmt: skip
            done = previous["variants"]
    for variant in args.variant or list(VARIANTS):
        if variant in done:
            continue
        model = f"local:base#lora={args.adapter}{scale}#n_ctx=2048{VARIANTS[variant]}"
        print(f"{variant}: {model}", flush=True)
        figures = play(model, slices)
        solved = sum(f["solved"] for f in figures.values())
        tried = sum(f["tried"] for f in figures.values())
        done[variant] = {"model": model, "solved": solved, "tried": tried, "by_env": figures}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {
                    **setup,
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
