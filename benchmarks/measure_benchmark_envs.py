"""The embedded model on τ²-bench, NESTFUL and ComplexFuncBench, for the training benchmark
page.

    python benchmarks/measure_benchmark_envs.py                  # both models, every run
    python benchmarks/measure_benchmark_envs.py --labels base --runs-dir runs/measure-envs

Both models (``trained``: ``local``, the shipped adapter; ``base``: ``local:base``) run with
SmolLM2's full 8,192-token context (the policies and tool lists of τ²-bench do not fit the
default 4,096) on the test splits of:

- ``tau2:telecom`` solo (40 tasks), 4 tries per task at temperature 0.7 (pass^1..pass^4);
- ``tau2:airline`` (20) and ``tau2:retail`` (40) with ``local`` playing the customer for both
  (the scores are comparable only between runs with the same user model);
- ``nestful`` and ``complexfuncbench`` (their seeded test halves).

Each run is a ``tooluse eval`` command, printed before it runs; its directory (under
``--runs-dir``) resumes when the script is started again, so a stopped measurement goes on
where it was. ``--limit N`` caps the tasks of the runs started (a quick look; the table is
meant for the full test splits); each run records its own limit. The figures go to
``benchmarks/results/benchmark_envs.json``, which ``benchmarks/readme_figures.py`` renders
into the training benchmark page. Long: the 2-core machine needs many hours for the full set
(ComplexFuncBench's test half alone is about 500 samples); run nothing else beside it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "benchmark_envs.json"
MODELS = {"trained": "local:#n_ctx=8192", "base": "local:base#n_ctx=8192"}
USER_MODEL = "local:#n_ctx=8192"
TRIES = 4
TEMPERATURE = 0.7
MAX_TOKENS = 256
#: Each run: its `tooluse eval` arguments before the model and the output directory.
RUNS: dict[str, list[str]] = {
    "tau2_telecom_solo": [
        "eval",
        "tau2",
        "--domain",
        "telecom",
        "--solo",
        "--split",
        "test",
        "-k",
        str(TRIES),
        "--temperature",
        str(TEMPERATURE),
    ],
    "tau2_airline": ["eval", "env", "tau2:airline", "--user-model", USER_MODEL, "--split", "test"],
    "tau2_retail": ["eval", "env", "tau2:retail", "--user-model", USER_MODEL, "--split", "test"],
    "nestful": ["eval", "env", "nestful", "--split", "test"],
    "complexfuncbench": ["eval", "env", "complexfuncbench", "--split", "test"],
}
KEEP = (
    "tasks",
    "trajectories",
    "errors",
    "samples_per_task",
    "success_rate",
    "pass_at_k",
    "pass_hat_k",
    "reward_by_name",
    "calls_per_trajectory",
    "seconds_per_trajectory",
)


def command(name: str, model: str, out: Path, limit: int | None) -> list[str]:
    """The `tooluse eval` command line of one run."""
    args = [*RUNS[name], "-m", model, "--max-tokens", str(MAX_TOKENS), "--out", str(out), "-q"]
    if limit is not None:
        args += ["--limit", str(limit)]
    return [sys.executable, "-m", "tooluse", *args]


def shown(args: list[str]) -> str:
    """A command as the training benchmark page prints it (``tooluse ...``), quoted for a
    shell (a model string's ``#``)."""
    return shlex.join(["tooluse", *args[3:]])


def measure(name: str, model: str, out: Path, limit: int | None) -> dict[str, Any]:
    """Run (or resume) one evaluation and read its summary."""
    args = command(name, model, out, limit)
    print(f"$ {shown(args)}", flush=True)
    started = time.perf_counter()
    done = subprocess.run(args, text=True, capture_output=True)
    print(done.stdout[-2000:], flush=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    figures = {key: summary.get(key) for key in KEEP}
    figures["wall_seconds"] = round(time.perf_counter() - started, 1)
    figures["limit"] = limit
    figures["command"] = shown(args)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", default="trained,base", help="Comma-separated: trained, base.")
    parser.add_argument("--only", default=",".join(RUNS), help="Comma-separated run names.")
    parser.add_argument("--limit", type=int, default=None, help="At most N tasks per run.")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/measure-benchmark-envs"))
    args = parser.parse_args()
    record: dict[str, Any] = (
        json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {"models": {}}
    )
    record.update(
        user_model=USER_MODEL,
        tries=TRIES,
        temperature=TEMPERATURE,
        max_tokens=MAX_TOKENS,
    )
    record.pop("limit", None)  # each run records its own
    for label in args.labels.split(","):
        model = MODELS[label]
        entry = record["models"].setdefault(label, {"model": model, "runs": {}})
        for name in args.only.split(","):
            out = args.runs_dir / label / name
            entry["runs"][name] = measure(name, model, out, args.limit)
            RESULTS.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"figures written to {RESULTS}")


if __name__ == "__main__":
    main()
