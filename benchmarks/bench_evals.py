"""Items per minute of the run engine: local threads vs a local Ray, on the same items.

Workloads: sleeping workers (the engine's own overhead: what is left of 120 items x 50 ms,
and of 16 items x 1 s, with 2 workers; Ray "cold" starts its actors in the timed run, "warm"
reuses the actors a finished run kept), and the embedded model on a seed-0 BFCL sample with 1
and 2 workers on each engine (the real case; each worker loads its own model). The baseline of
each ratio is the local engine in the same run.
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


def _sleep_run(scratch: Path, name: str, engine: str, count: int, seconds: float) -> dict:
    items = [WorkItem(key=str(i), payload=i) for i in range(count)]
    run = run_items(
        items,
        functools.partial(sleeper, seconds),
        scratch / f"sleep-{name}.jsonl",
        engine=engine,  # type: ignore[arg-type]
        concurrency=2,
        workers=2,
        progress=False,
        fsync=False,
    )
    ideal = count * seconds / 2
    return {
        "seconds": round(run.seconds, 3),
        "items_per_minute": round(run.items_per_minute, 1),
        "overhead_vs_ideal": round(run.seconds / ideal, 3),
    }


def engine_overhead(scratch: Path) -> dict:
    import sys

    from ray import cloudpickle

    from tooluse.evals.engine_ray import release_workers

    # Ray's workers cannot import this file by name: ship its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    figures: dict = {}
    release_workers()
    for engine in ("local", "ray"):  # the 50 ms items, actors started in the run
        figures[engine] = _sleep_run(scratch, f"50ms-{engine}", engine, 120, 0.05)
    figures["ray_vs_local"] = round(
        figures["ray"]["items_per_minute"] / figures["local"]["items_per_minute"], 2
    )
    release_workers()
    second = {
        "items": 16,
        "item_seconds": 1.0,
        "local": _sleep_run(scratch, "1s-local", "local", 16, 1.0),
        "ray_cold": _sleep_run(scratch, "1s-ray-cold", "ray", 16, 1.0),
        "ray_warm": _sleep_run(scratch, "1s-ray-warm", "ray", 16, 1.0),
    }
    release_workers()
    figures["one_second_items"] = second
    return figures


def embedded_model(scratch: Path) -> dict:
    from tooluse.evals.engine_ray import release_workers

    entries = select_entries(
        load_bfcl_categories(["simple_python", "multiple", "irrelevance"]), sample=2, seed=0
    )
    options = BFCLOptions(max_tokens=64)
    figures: dict = {"items": len(entries)}
    correct = {}
    for engine, workers in (("local", 1), ("local", 2), ("ray", 1), ("ray", 2)):
        release_workers()  # every Ray run starts (and loads) its own actors
        started = time.perf_counter()
        summary = run_bfcl_job(
            entries,
            "local",
            options,
            scratch / f"model-{engine}-{workers}",
            engine=engine,  # type: ignore[arg-type]
            workers=workers,
            concurrency=workers,
            progress=False,
        )
        wall = time.perf_counter() - started
        correct[(engine, workers)] = summary["correct"]
        figures[f"{engine}_{workers}"] = {
            "workers": workers,
            "wall_seconds": round(wall, 1),
            "items_per_minute": round(len(entries) / wall * 60, 2),
            "accuracy": summary["accuracy"],
        }
    release_workers()
    figures["local"], figures["ray"] = figures["local_1"], figures["ray_2"]
    figures["ray_vs_local"] = round(
        figures["ray_2"]["items_per_minute"] / figures["local_2"]["items_per_minute"], 2
    )
    figures["same_verdicts"] = len(set(correct.values())) == 1
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
    one = overhead["one_second_items"]
    print(
        f"  sleep 1 s x 16, 2 workers, time vs ideal: local {one['local']['overhead_vs_ideal']}x, "
        f"ray cold {one['ray_cold']['overhead_vs_ideal']}x, "
        f"ray warm {one['ray_warm']['overhead_vs_ideal']}x (target <= 1.10x)"
    )
    for workers in (1, 2):
        local, ray_run = model[f"local_{workers}"], model[f"ray_{workers}"]
        label = f"embedded model, {model['items']} BFCL, {workers} w"
        print(
            f"{label:<34}"
            f"{local['items_per_minute']:>17}{ray_run['items_per_minute']:>15}"
            f"{ray_run['items_per_minute'] / local['items_per_minute']:>11.2f}"
        )
    print(
        f"  engine time vs ideal (50 ms items): local {overhead['local']['overhead_vs_ideal']}x, "
        f"ray {overhead['ray']['overhead_vs_ideal']}x; same verdicts: {model['same_verdicts']}"
    )
    return {"engine_overhead": overhead, "embedded_model": model}


if __name__ == "__main__":
    main()
