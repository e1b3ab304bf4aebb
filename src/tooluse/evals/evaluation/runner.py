"""``run_evaluation``: many trajectories on the shared run engine, with resume and a summary.

The evaluation side of :mod:`tooluse.envs`: environments and runners live there, the runs and
their figures (pass@k, rewards per name and type) here, so that evals builds on envs.

::

    result = runner.run_evaluation(task_indices=range(20), samples_per_task=4, out="runs/x")
    result.summary["pass_at_k"], result.summary["reward_by_name"]

Every (task, sample) pair is one engine item, keyed ``"<task_index>/<sample>"``; each finished
trajectory is appended at once to ``<out>/trajectories.jsonl`` (so a killed run loses only the
trajectories in flight and a second run skips those already written), and ``<out>/summary.json``
gets the figures: success rate, pass@k and pass^k for every k up to the samples per task, mean
reward per reward name and per reward type, calls and seconds per trajectory. pass@k is the
chance that at least one of k tries solves a task, pass^k (τ-bench's reliability figure) that
all k do; both are the unbiased estimates from the n samples of each task, averaged over tasks. A line of the trajectories file that is not JSON (a damaged
file) is moved to ``trajectories.corrupt.jsonl`` with a warning, and its trajectory is run again.
Before the first item, the environment's ``prepare(runner, out=, task_indices=)`` plays what
the tasks depend on (BFCL's memory questions: the conversations that fill their memory).

For ``engine="ray"`` (or several local workers that must not share a backend) pass
``make_runner``: a picklable zero-argument callable building the runner inside each worker,
such as ``functools.partial(runner_from_spec, RunnerSpec(environment="bfcl:multi_turn_base",
model="local"))``.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tooluse.envs.runner_spec import RunnerSpec, runner_from_spec
from tooluse.envs.trajectory import TrajectoryRunner
from tooluse.evals.engine import EngineRun, WorkItem, run_items
from tooluse.evals.pass_k import pass_at_k, pass_figures, pass_hat_k
from tooluse.evals.results import repair_results

__all__ = [
    "EvaluationResult",
    "RunnerSpec",
    "format_summary",
    "pass_at_k",
    "pass_hat_k",
    "repair_trajectories_file",
    "run_evaluation",
    "runner_from_spec",
    "summarize",
    "trajectory_rewards",
]

TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"


@dataclass(frozen=True, kw_only=True)
class EvaluationResult:
    """The records of every trajectory (resumed ones included), the summary and the run."""

    records: tuple[dict[str, Any], ...]
    summary: dict[str, Any]
    run: EngineRun
    out: Path

    @property
    def trajectories_path(self) -> Path:
        return self.out / TRAJECTORIES


def trajectory_rewards(record: Mapping[str, Any]) -> dict[str, float]:
    """Per reward name, the mean value of its signals over the trajectory's steps."""
    values: dict[str, list[float]] = {}
    for step in record.get("steps", ()):
        for signal in step.get("signals", {}).get("signals", ()):
            values.setdefault(signal["name"], []).append(float(signal["value"]))
    return {name: sum(v) / len(v) for name, v in values.items()}


def _rewards_by_type(record: Mapping[str, Any]) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for step in record.get("steps", ()):
        for signal in step.get("signals", {}).get("signals", ()):
            values.setdefault(signal["type"], []).append(float(signal["value"]))
    return {kind: sum(v) / len(v) for kind, v in values.items()}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(records: Sequence[Mapping[str, Any]], *, samples_per_task: int = 1) -> dict[str, Any]:
    """The figures of a set of trajectory records (errors counted apart, not as failures).

    ``reward_by_name`` is the mean over trajectories of each reward's mean value per
    trajectory; ``reward_by_type`` the same per reward type (``step``, ``outcome``);
    ``total_reward`` the mean weighted total. ``pass_at_k`` and ``pass_hat_k`` (pass^k) use
    the unbiased estimators over the tasks' samples, for k = 1..``samples_per_task``.
    """
    ok = [r for r in records if not r.get("error")]
    by_task: dict[int, list[bool]] = {}
    for r in ok:
        by_task.setdefault(int(r["task_index"]), []).append(bool(r["success"]))
    passes, reliability = pass_figures(by_task, samples_per_task)
    names: dict[str, list[float]] = {}
    kinds: dict[str, list[float]] = {}
    for r in ok:
        for name, value in trajectory_rewards(r).items():
            names.setdefault(name, []).append(value)
        for kind, value in _rewards_by_type(r).items():
            kinds.setdefault(kind, []).append(value)
    calls = [sum(len(s.get("calls", ())) for s in r.get("steps", ())) for r in ok]
    return {
        "trajectories": len(records),
        "errors": len(records) - len(ok),
        "tasks": len(by_task),
        "samples_per_task": samples_per_task,
        "success_rate": _mean([float(r["success"]) for r in ok]),
        "pass_at_k": passes,
        "pass_hat_k": reliability,
        "total_reward": _mean([float(r.get("total_reward", 0.0)) for r in ok]),
        "reward_by_name": {n: _mean(v) for n, v in sorted(names.items())},
        "reward_by_type": {k: _mean(v) for k, v in sorted(kinds.items())},
        "calls_per_trajectory": _mean([float(c) for c in calls]),
        "steps_per_trajectory": _mean([float(len(r.get("steps", ()))) for r in ok]),
        "seconds_per_trajectory": _mean([float(r.get("seconds", 0.0)) for r in ok]),
    }


def repair_trajectories_file(path: str | Path) -> list[int]:
    """Move lines that are not JSON records to a ``.corrupt.jsonl`` file beside ``path`` (and
    cut off a last line whose write was cut short); returns the numbers of the lines moved."""
    return repair_results(path, set_aside_corrupt=True)


class _TrajectoryWorker:
    """Plays one (task, sample) item and returns the trajectory record (engine worker)."""

    def __init__(self, runner: TrajectoryRunner) -> None:
        self.runner = runner
        # a batched local model plays as many trajectories at once as it decodes together
        self.concurrency = int(getattr(runner.backend, "batch_size", 1) or 1)

    def __call__(self, item: Any) -> dict[str, Any]:
        task_index, sample = int(item.payload["task_index"]), int(item.payload["sample"])
        # Looked up without importing: a program that never traces never loads OpenTelemetry.
        telemetry = sys.modules.get("tooluse.loop.telemetry")
        if telemetry is None:
            return self._play(task_index, sample)
        environment = self.runner.environment
        name = str(getattr(environment, "name", None) or type(environment).__name__)
        record: dict[str, Any] = telemetry.evaluation_item(
            name, task_index, sample, lambda: self._play(task_index, sample)
        )
        return record

    def _play(self, task_index: int, sample: int) -> dict[str, Any]:
        started = time.perf_counter()
        trajectory = self.runner.run_trajectory(task_index=task_index, seed=sample)
        record = trajectory.to_dict()
        record["sample"] = sample
        record["seconds"] = round(time.perf_counter() - started, 4)
        record["rewards"] = trajectory_rewards(record)
        return record


class _SharedRunner:
    """A worker factory handing every worker the same runner (local threads only)."""

    def __init__(self, runner: TrajectoryRunner) -> None:
        self.runner = runner

    def __call__(self) -> _TrajectoryWorker:
        return _TrajectoryWorker(self.runner)


class _BuildRunner:
    """A picklable worker factory: builds a runner with ``make_runner`` in each worker."""

    def __init__(self, make_runner: Callable[[], TrajectoryRunner]) -> None:
        self.make_runner = make_runner

    def __call__(self) -> _TrajectoryWorker:
        return _TrajectoryWorker(self.make_runner())


def run_evaluation(  # noqa: PLR0913 - the evaluation's options, keyword-only after the runner
    runner: TrajectoryRunner,
    *,
    out: str | Path,
    task_indices: Iterable[int] | None = None,
    samples_per_task: int = 1,
    concurrency: int = 1,
    engine: Literal["local", "ray"] = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    make_runner: Callable[[], TrajectoryRunner] | None = None,
    progress: bool = True,
    item_timeout: float | None = None,
) -> EvaluationResult:
    """Play ``samples_per_task`` trajectories of each task into ``out`` (see the module)."""
    if samples_per_task < 1:
        raise ValueError("samples_per_task must be >= 1")
    environment = runner.environment
    indices = list(range(len(environment)) if task_indices is None else task_indices)
    for index in indices:
        environment.task(index)  # IndexError now, not in a worker
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    prepare = getattr(environment, "prepare", None)
    if prepare is not None:  # what the tasks depend on (BFCL memory: the filling conversations)
        prepare(runner, out=directory, task_indices=indices)
    path = directory / TRAJECTORIES
    damaged = repair_trajectories_file(path)
    if damaged:
        warnings.warn(
            f"{path}: {len(damaged)} corrupt line(s) ({', '.join(map(str, damaged[:10]))}) moved "
            f"to {path.stem}.corrupt.jsonl; their trajectories run again",
            RuntimeWarning,
            stacklevel=2,
        )
    items = [
        WorkItem(key=f"{i}/{s}", payload={"task_index": i, "sample": s})
        for i in indices
        for s in range(samples_per_task)
    ]
    if make_runner is not None:
        factory: Any = _BuildRunner(make_runner)
    elif engine == "ray":
        raise ValueError(
            "engine='ray' builds the runner inside each Ray worker: pass make_runner=, a "
            "picklable zero-argument callable such as "
            "functools.partial(runner_from_spec, RunnerSpec(environment=..., model=...))"
        )
    else:
        factory = _SharedRunner(runner)
    run = run_items(
        items,
        factory,
        path,
        engine=engine,
        concurrency=concurrency,
        workers=workers,
        ray_address=ray_address,
        progress=progress,
        description=getattr(environment, "name", "trajectories"),
        score=lambda row: None if row.get("error") else bool(row.get("success")),
        item_timeout=item_timeout,
    )
    summary = summarize(run.records, samples_per_task=samples_per_task)
    summary.update(
        {
            "environment": getattr(environment, "name", type(environment).__name__),
            "engine": engine,
            "ran": run.ran,
            "skipped": run.skipped,
            "seconds": round(run.seconds, 3),
            "items_per_minute": round(run.items_per_minute, 3),
        }
    )
    (directory / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return EvaluationResult(records=run.records, summary=summary, run=run, out=directory)


def format_summary(summary: Mapping[str, Any]) -> str:
    """The summary as a small text table."""

    def show(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    rows: list[tuple[str, str]] = [
        ("environment", show(summary.get("environment"))),
        ("trajectories", f"{summary['trajectories']} ({summary['errors']} errors)"),
        ("success rate", show(summary["success_rate"])),
    ]
    rows += [(f"pass@{k}", show(v)) for k, v in summary["pass_at_k"].items()]
    rows += [(f"pass^{k}", show(v)) for k, v in summary.get("pass_hat_k", {}).items()]
    rows.append(("total reward (mean)", show(summary["total_reward"])))
    rows += [(f"reward {n}", show(v)) for n, v in summary["reward_by_name"].items()]
    rows += [(f"reward type {k}", show(v)) for k, v in summary["reward_by_type"].items()]
    rows += [
        ("calls per trajectory", show(summary["calls_per_trajectory"])),
        ("seconds per trajectory", show(summary["seconds_per_trajectory"])),
    ]
    if "ran" in summary:
        rows.append(("ran / resumed", f"{summary['ran']} / {summary['skipped']}"))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)
