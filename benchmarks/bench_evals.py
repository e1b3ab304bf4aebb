"""Items per minute of the run engine: local threads vs a local Ray, on the same items.

Two workloads: a sleeping worker (the engine's own overhead: what is left of 120 items x 50 ms
with 2 workers), and the embedded model on a seed-0 BFCL sample (the real case; Ray starts
one model per actor). The baseline of each ratio is the local engine in the same run.
"""

from __future__ import annotations

import functools
import tempfile
import time
from pathlib import Path

from tooluse.evals.bfcl.data import load_bfcl_categories, select_entries
from tooluse.evals.bfcl.job import BFCLOptions, run_bfcl_job
from tooluse.evals.engine import WorkItem, run_items


def sleeper(seconds: float):
    def work(item: WorkItem) -> dict:
        time.sleep(seconds)
        return {"value": item.payload}

    return work


def engine_overhead(scratch: Path) -> dict:
    import sys

    from ray import cloudpickle

    # Ray's workers cannot import this file by name: ship its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    items = [WorkItem(key=str(i), payload=i) for i in range(120)]
    factory = functools.partial(sleeper, 0.05)
    ideal = len(items) * 0.05 / 2
    figures = {}
    for engine in ("local", "ray"):
        run = run_items(
            items,
            factory,
            scratch / f"sleep-{engine}.jsonl",
            engine=engine,  # type: ignore[arg-type]
            concurrency=2,
            workers=2,
            progress=False,
            fsync=False,
        )
        figures[engine] = {
            "seconds": round(run.seconds, 3),
            "items_per_minute": round(run.items_per_minute, 1),
            "overhead_vs_ideal": round(run.seconds / ideal, 2),
        }
    figures["ray_vs_local"] = round(
        figures["ray"]["items_per_minute"] / figures["local"]["items_per_minute"], 2
    )
    return figures


def embedded_model(scratch: Path) -> dict:
    entries = select_entries(
        load_bfcl_categories(["simple_python", "multiple", "irrelevance"]), sample=2, seed=0
    )
    options = BFCLOptions(max_tokens=64)
    figures: dict = {"items": len(entries)}
    results = {}
    for engine, workers in (("local", 1), ("ray", 2)):
        started = time.perf_counter()
        summary = run_bfcl_job(
            entries,
            "local",
            options,
            scratch / f"model-{engine}",
            engine=engine,  # type: ignore[arg-type]
            workers=workers,
            progress=False,
        )
        wall = time.perf_counter() - started
        results[engine] = summary
        figures[engine] = {
            "workers": workers,
            "wall_seconds": round(wall, 1),
            "items_per_minute": round(len(entries) / wall * 60, 2),
            "accuracy": summary["accuracy"],
        }
    figures["ray_vs_local"] = round(
        figures["ray"]["items_per_minute"] / figures["local"]["items_per_minute"], 2
    )
    figures["same_verdicts"] = results["ray"]["correct"] == results["local"]["correct"]
    return figures


def main() -> dict:
    import ray

    with tempfile.TemporaryDirectory(prefix="bench-evals-") as name:
        scratch = Path(name)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            overhead = engine_overhead(scratch)
            model = embedded_model(scratch)
        finally:
            ray.shutdown()
    print(f"{'workload':<34}{'local items/min':>17}{'ray items/min':>15}{'ray/local':>11}")
    print(
        f"{'sleep 50 ms x 120, 2 workers':<34}{overhead['local']['items_per_minute']:>17}"
        f"{overhead['ray']['items_per_minute']:>15}{overhead['ray_vs_local']:>11}"
    )
    print(
        f"{'embedded model, 6 BFCL items':<34}{model['local']['items_per_minute']:>17}"
        f"{model['ray']['items_per_minute']:>15}{model['ray_vs_local']:>11}"
    )
    print(
        f"  engine time vs ideal: local {overhead['local']['overhead_vs_ideal']}x, "
        f"ray {overhead['ray']['overhead_vs_ideal']}x; model: local 1 worker, ray 2 actors "
        f"(2 cores), same verdicts: {model['same_verdicts']}"
    )
    return {"engine_overhead": overhead, "embedded_model": model}


if __name__ == "__main__":
    main()
