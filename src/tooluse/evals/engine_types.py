"""The run engine's shared types: items, workers, the run's outcome and its error.

A leaf under :mod:`tooluse.evals.engine` (the local engine and the entry point) and
:mod:`tooluse.evals.engine_ray` (the Ray engine), which both build on these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "INTERRUPT_GRACE",
    "EngineError",
    "EngineRun",
    "RunInterrupted",
    "WorkItem",
    "Worker",
    "WorkerFactory",
    "call_worker",
    "error_record",
    "worker_capacity",
]


@dataclass(frozen=True, kw_only=True)
class WorkItem:
    """One unit of work: ``key`` is unique and stable across runs (the resume key)."""

    key: str
    payload: Any


#: A worker: one JSON-able record per item. A worker that can take several items at once (its
#: model decodes concurrent requests together) says how many in a ``concurrency`` attribute.
Worker = Callable[[WorkItem], dict[str, Any]]
#: A picklable zero-argument callable, called once per worker (thread or Ray actor).
WorkerFactory = Callable[[], Worker]


#: How long an interrupted run waits for its items in flight to stop (they are asked to).
INTERRUPT_GRACE = 2.0


class EngineError(RuntimeError):
    """A run cannot start or go on (a corrupt results file, duplicate keys, a bad option)."""


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C or SIGTERM: every item finished before is in the results file.

    ``abandoned`` counts the worker threads still busy when the run stopped waiting for them
    (a second interrupt, or a call that did not stop within the grace period); a process that
    exits now should not wait for them. Items that did not finish are not written: running
    the same command again does them, and skips the others. ``records`` (set by
    :func:`~tooluse.evals.engine.run_items`) are the rows in the results file for the run's
    items, in item order, those of earlier runs included, as ``EngineRun.records``.
    """

    def __init__(
        self, *, written: int, abandoned: int, records: tuple[dict[str, Any], ...] = ()
    ) -> None:
        super().__init__(f"interrupted: {written} item(s) written, {abandoned} still running")
        self.written = written
        self.abandoned = abandoned
        self.records = records


@dataclass(frozen=True, kw_only=True)
class EngineRun:
    """The outcome of :func:`run_items`.

    ``records`` are all records in the file for the given items (resumed ones included) in
    item order; ``ran`` items were run now, ``skipped`` were already done, ``failed`` have an
    ``"error"``. ``items_per_minute`` counts only the items run now.
    """

    records: tuple[dict[str, Any], ...]
    ran: int
    skipped: int
    failed: int
    seconds: float
    items_per_minute: float
    #: Where the time went, in seconds, by phase (the Ray engine's: ``ray_start``,
    #: ``workers_made``, ``actors_ready_after``, ``items``, ``wall``; the local engine's:
    #: ``workers_made``)
    phases: dict[str, float] = field(default_factory=dict)


def error_record(exc: BaseException | None, kind: str, message: str = "") -> dict[str, Any]:
    """The record of an item that did not produce one: ``error`` (type and message) and
    ``error_kind`` (``exception``, ``timeout``, ``worker_lost`` or ``worker_start``)."""
    if exc is not None:
        text = f"{type(exc).__name__}: {exc}"
    else:
        text = message
    return {"error": text, "error_kind": kind}


def call_worker(worker: Worker, item: WorkItem) -> dict[str, Any]:
    """Run one item; an exception or a non-dict result becomes an error record."""
    try:
        record = worker(item)
    except Exception as exc:  # one failing item must not stop the run
        return error_record(exc, "exception")
    if not isinstance(record, dict):
        return error_record(None, "exception", f"worker returned {type(record).__name__}, not dict")
    return record


def worker_capacity(worker: Worker) -> int:
    """How many items ``worker`` takes at once: its ``concurrency`` attribute, else 1."""
    value = getattr(worker, "concurrency", 1)
    return value if isinstance(value, int) and value > 1 else 1
