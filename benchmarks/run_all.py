"""Run every benchmark (``bench_*.py``), print its figures and write them as JSON.

Each benchmark module has ``main() -> dict``: it prints a readable table (with ratios against a
baseline measured in the same run) and returns the figures, which land in
``benchmarks/results/<name>.json``. ``python benchmarks/run_all.py NAME...`` runs only those.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    RESULTS.mkdir(exist_ok=True)
    wanted = set(argv)
    failures = 0
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if wanted and name not in wanted:
            continue
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        try:
            figures = load(path).main()
        except Exception as exc:  # one broken benchmark must not hide the others
            failures += 1
            print(f"FAILED: {type(exc).__name__}: {exc}")
            continue
        record = {
            "benchmark": name,
            "recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "seconds": round(time.perf_counter() - started, 2),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "figures": figures,
        }
        out = RESULTS / f"{name}.json"
        out.write_text(json.dumps(record, indent=2, default=str) + "\n")
        print(f"-> {out.relative_to(HERE.parent)}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
