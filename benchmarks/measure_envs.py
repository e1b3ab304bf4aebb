"""The embedded model on tool environments: math:word_problems and bfcl:multi_turn_base.

Not part of ``make bench`` (it takes long on a small machine): run it directly,
``python benchmarks/measure_envs.py [--bfcl N] [--engines local,ray] [--max-steps S]``.
Prints the summary per environment and engine and writes ``results/envs_local_model.json``.

The BFCL tasks are the N entries with the shortest tool list (TradingBot-only entries come
first): the full entries' prompts (5-7k tokens of function docs) do not fit SmolLM2's default
4k context. ``--max-steps`` caps the steps per user turn (BFCL's cap is 20).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from functools import partial
from pathlib import Path

from tooluse.cli.env_cmd import default_system_prompt
from tooluse.envs import RunnerSpec, TrajectoryRunner, environment_registry, runner_from_spec

HERE = Path(__file__).parent
KEEP = (
    "success_rate",
    "pass_at_k",
    "total_reward",
    "reward_by_name",
    "reward_by_type",
    "calls_per_trajectory",
    "seconds_per_trajectory",
    "trajectories",
    "errors",
)


def smallest_bfcl_entries(count: int) -> list[int]:
    env = environment_registry.get(name="bfcl:multi_turn_base")
    sizes = []
    for index in range(len(env)):
        state, _ = env.reset(options={"task_index": index})
        size = sum(len(json.dumps(t.to_openai_schema())) for t in state.observation.available_tools)
        sizes.append((size, index))
    return [index for _, index in sorted(sizes)[:count]]


def measure(name: str, indices: list[int], engine: str, options: dict, max_tokens: int) -> dict:
    spec = RunnerSpec(
        environment=name,
        model="local:base",  # the environments table of the docs: the untouched model
        environment_options=options,
        system_prompt=default_system_prompt(name),
        max_tokens=max_tokens,
    )
    runner: TrajectoryRunner = runner_from_spec(spec)
    out = Path(tempfile.mkdtemp(prefix=f"measure-{engine}-"))
    started = time.perf_counter()
    result = runner.run_evaluation(
        indices,
        out=out,
        engine=engine,  # type: ignore[arg-type]
        workers=1,
        make_runner=partial(runner_from_spec, spec) if engine == "ray" else None,
        progress=False,
    )
    figures = {k: result.summary[k] for k in KEEP}
    figures["wall_seconds"] = round(time.perf_counter() - started, 1)
    figures["success"] = [bool(r.get("success")) for r in result.records]
    figures["calls"] = [sum(len(s["calls"]) for s in r.get("steps", ())) for r in result.records]
    print(f"{name} [{engine}]: {json.dumps(figures)}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bfcl", type=int, default=20)
    parser.add_argument("--arithmetic", type=int, default=8)
    parser.add_argument("--engines", default="local,ray")
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    engines = args.engines.split(",")
    results: dict = {"engines": engines}
    arithmetic = list(range(args.arithmetic))
    bfcl = smallest_bfcl_entries(args.bfcl) if args.bfcl else []
    results["bfcl_indices"] = bfcl
    for engine in engines:
        results[f"math:word_problems/{engine}"] = measure(
            "math:word_problems", arithmetic, engine, {}, args.max_tokens
        )
        if bfcl:
            results[f"bfcl:multi_turn_base/{engine}"] = measure(
                "bfcl:multi_turn_base", bfcl, engine, {"max_steps": args.max_steps}, args.max_tokens
            )
    target = HERE / "results" / "envs_local_model.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {target}")


if __name__ == "__main__":
    main()
