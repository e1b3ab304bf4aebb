"""One engine for many items: a concurrency limit, one JSONL line per finished item, resume.

::

    from tooluse.evals.engine import WorkItem, run_items

    def make_worker():                      # called once per worker: load the model here
        backend = load_expensive_model()
        return lambda item: {"answer": backend.ask(item.payload)}

    run = run_items([WorkItem(key=str(i), payload=q) for i, q in enumerate(questions)],
                    make_worker, "results.jsonl", concurrency=2)
    run.records, run.ran, run.skipped, run.failed, run.items_per_minute

A worker that takes several items at once (``concurrency`` > 1: its model batches concurrent
requests, as the embedded model does) serves that many of the ``concurrency`` threads, so
``concurrency=8`` with such a worker loads one model, not eight.

Each finished item is appended to the results file at once, as ``{"key": ..., **record}``,
and flushed, so a run killed at any point loses only the items in flight. Running again with
the same file skips the items already there (the resume key is ``WorkItem.key``); a half-written
last line (the process died mid-write) is dropped and its item redone. A worker that raises or
times out gives a record with ``"error"`` and ``"error_kind"``, and the run goes on.

Ctrl-C in the main thread raises :class:`RunInterrupted` (a ``KeyboardInterrupt``): no new
item starts, running generations are asked to stop (:mod:`tooluse.interrupts`; the local
model checks between tokens; on Ray, in each actor's process) and given two seconds; items
that still finish cleanly are written, the cut-short ones are not (a rerun does them).

``engine="ray"`` runs the same items on Ray actors (``pip install 'tooluse[ray]'``), one
worker per actor, and writes the same file; an actor that dies has its items retried.
"""

from __future__ import annotations

import contextvars
import dataclasses
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tooluse.evals.engine_ray import run_on_ray
from tooluse.evals.engine_types import (
    INTERRUPT_GRACE,
    EngineError,
    EngineRun,
    RunInterrupted,
    Worker,
    WorkerFactory,
    WorkItem,
    call_worker,
    error_record,
    worker_capacity,
)
from tooluse.evals.results import ResultsFile, read_results, repair_results
from tooluse.interrupts import clear_stop_request, request_stop

__all__ = [
    "EngineError",
    "EngineOptions",
    "EngineRun",
    "ResultsFile",
    "RunInterrupted",
    "WorkItem",
    "Worker",
    "WorkerFactory",
    "error_record",
    "read_results",
    "repair_results",
    "run_items",
]


# -- progress ----------------------------------------------------------------------------------


class _Progress:
    """A rich progress bar with counts, accuracy so far and ETA (or nothing)."""

    def __init__(
        self,
        *,
        enabled: bool,
        total: int,
        done: int,
        description: str,
        score: Callable[[dict[str, Any]], bool | None] | None,
    ) -> None:
        self.score = score
        self.correct = 0
        self.scored = 0
        self.failed = 0
        self._bar: Any = None
        self._task: Any = None
        self._total = total
        self._description = description
        self._done = done
        self._enabled = enabled

    def __enter__(self) -> _Progress:
        if self._enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(
                self._description, total=self._total, completed=self._done, stats=""
            )
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc_info)

    def seen(self, record: dict[str, Any], *, advance: bool) -> None:
        if record.get("error"):
            self.failed += 1
        if self.score is not None:
            verdict = self.score(record)
            if verdict is not None:
                self.scored += 1
                self.correct += bool(verdict)
        if self._bar is not None:
            parts = []
            if self.scored:
                parts.append(f"acc {self.correct / self.scored:.1%}")
            if self.failed:
                parts.append(f"{self.failed} errors")
            self._bar.update(self._task, advance=1 if advance else 0, stats=" ".join(parts))


# -- local engine ------------------------------------------------------------------------------

_DONE = object()


def _call_with_timeout(
    worker: Worker, item: WorkItem, timeout: float
) -> tuple[dict[str, Any], bool]:
    """Run one item in a helper thread; ``(record, timed_out)``. A timed-out call is left to
    finish on its own (threads cannot be killed) and its worker is not used again."""
    box: list[dict[str, Any]] = []
    context = contextvars.copy_context()  # the item's spans nest where the slot's do
    thread = threading.Thread(
        target=lambda: box.append(context.run(call_worker, worker, item)), daemon=True
    )
    thread.start()
    thread.join(timeout)
    if thread.is_alive() or not box:
        return error_record(None, "timeout", f"TimeoutError: no result after {timeout:g} s"), True
    return box[0], False


class _WorkerPool:
    """Workers shared by the local engine's threads: a thread takes a worker with room for one
    more item (``concurrency``), and a new worker is made only when every one is full. The
    first worker is made alone (threads starting together wait to learn how many items it
    takes, rather than each loading a model); later ones are made concurrently."""

    def __init__(self, make_worker: WorkerFactory) -> None:
        self._make = make_worker
        self.made_in = 0.0  # seconds spent making workers (model loads), summed
        self._cond = threading.Condition()
        self._workers: list[Worker] = []
        self._free: dict[int, int] = {}  # id(worker) -> places left
        self._known = False  # whether a worker has told its capacity
        self._making = 0

    def take(self) -> Worker:
        with self._cond:
            while True:
                for worker in self._workers:
                    if self._free[id(worker)] > 0:
                        self._free[id(worker)] -= 1
                        return worker
                if self._known or not self._making:
                    break
                self._cond.wait()
            self._making += 1
        started = time.perf_counter()
        try:
            worker = self._make()
        finally:
            with self._cond:
                self._making -= 1
                self._cond.notify_all()
        with self._cond:
            self.made_in += time.perf_counter() - started
            self._known = True
            self._workers.append(worker)
            self._free[id(worker)] = worker_capacity(worker) - 1
            self._cond.notify_all()
        return worker

    def give_back(self, worker: Worker) -> None:
        with self._cond:
            self._free[id(worker)] += 1
            self._cond.notify_all()

    def drop(self, worker: Worker) -> None:
        """``worker`` is still busy with an abandoned call: no item goes to it again."""
        with self._cond:
            self._workers.remove(worker)


def _run_local(
    todo: Sequence[WorkItem],
    make_worker: WorkerFactory,
    emit: Callable[[WorkItem, dict[str, Any]], None],
    *,
    concurrency: int,
    item_timeout: float | None,
) -> dict[str, float]:
    pending: queue.Queue[WorkItem] = queue.Queue()
    for item in todo:
        pending.put(item)
    finished: queue.Queue[Any] = queue.Queue()
    stop = threading.Event()
    pool = _WorkerPool(make_worker)

    def slot() -> None:
        try:
            while not stop.is_set():
                try:
                    item = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    worker = pool.take()
                except Exception as exc:  # the run cannot go on without workers
                    finished.put(exc)
                    return
                if item_timeout is None:
                    record = call_worker(worker, item)
                else:
                    record, timed_out = _call_with_timeout(worker, item, item_timeout)
                    if timed_out:
                        pool.drop(worker)  # still busy with the abandoned call
                        finished.put((item, record))
                        continue
                pool.give_back(worker)
                finished.put((item, record))
        finally:
            finished.put(_DONE)

    # Each slot runs in a copy of the caller's context: a span open around the run (a traced
    # program's) is the parent of the items' spans.
    threads = [
        threading.Thread(
            target=contextvars.copy_context().run,
            args=(slot,),
            name=f"tooluse-engine-{i}",
            daemon=True,
        )
        for i in range(max(1, min(concurrency, len(todo))))
    ]
    for thread in threads:
        thread.start()
    _collect(finished, len(threads), emit, stop)
    return {"workers_made": round(pool.made_in, 3)}


def _collect(
    finished: queue.Queue[Any],
    running: int,
    emit: Callable[[WorkItem, dict[str, Any]], None],
    stop: threading.Event,
) -> None:
    """Write the workers' records as they come, until all ``running`` workers have ended.

    Ctrl-C (or SIGTERM made an interrupt) lands here, in the main thread: no new item starts,
    the running generations are asked to stop, and :class:`RunInterrupted` is raised once they
    have (or the grace period is over)."""
    failure: BaseException | None = None
    written = 0
    try:
        while running:
            message = finished.get()
            if message is _DONE:
                running -= 1
            elif isinstance(message, BaseException):
                failure = failure or message
                stop.set()
            else:
                emit(*message)
                written += 1
    except KeyboardInterrupt:
        stop.set()
        request_stop()  # the workers' generations stop at their next token
        left, late = _wind_down(finished, running, emit)
        if not left:
            clear_stop_request()
        raise RunInterrupted(written=written + late, abandoned=left) from None
    finally:
        stop.set()
    if failure is not None:
        raise EngineError(
            f"the worker factory failed: {type(failure).__name__}: {failure}"
        ) from failure


def _wind_down(
    finished: queue.Queue[Any],
    running: int,
    emit: Callable[[WorkItem, dict[str, Any]], None],
    grace: float = INTERRUPT_GRACE,
) -> tuple[int, int]:
    """After an interrupt: let the workers end for up to ``grace`` seconds, writing the items
    that still finished cleanly (an item cut short is left out, so a rerun does it).
    ``(threads still running, items written)``; a second interrupt stops the wait at once."""
    deadline = time.monotonic() + grace
    written = 0
    try:
        while running:
            try:
                message = finished.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if message is _DONE:
                running -= 1
            elif isinstance(message, tuple) and not message[1].get("error"):
                emit(*message)
                written += 1
    except KeyboardInterrupt:
        pass
    return running, written


# -- the entry point ---------------------------------------------------------------------------


@contextmanager
def _timer() -> Iterator[list[float]]:
    started = time.perf_counter()
    box = [0.0]
    try:
        yield box
    finally:
        box[0] = time.perf_counter() - started


@dataclass(frozen=True, kw_only=True)
class EngineOptions:
    """How :func:`run_items` runs its items (every field is also a keyword of ``run_items``).

    ``engine="local"`` uses ``concurrency`` threads, each with its own worker; ``engine="ray"``
    uses ``workers`` actors (default ``concurrency``) on the cluster at ``ray_address`` or a
    local one, retrying a dead actor's items up to ``max_retries`` times. With
    ``retry_errors``, items whose record has an ``"error"`` are run again. ``on_record`` sees
    each new row as it is written. ``error_fields(item)`` adds fields to the records of items
    that produced none (an exception, a timeout, a lost worker), so they look like the others;
    those records also get ``error_type`` set to their ``error_kind``.
    """

    engine: Literal["local", "ray"] = "local"
    concurrency: int = 1
    workers: int | None = None
    ray_address: str | None = None
    progress: bool = True
    description: str = "items"
    score: Callable[[dict[str, Any]], bool | None] | None = None
    item_timeout: float | None = None
    retry_errors: bool = False
    max_retries: int = 2
    fsync: bool = True
    on_record: Callable[[dict[str, Any]], Any] | None = None
    error_fields: Callable[[WorkItem], dict[str, Any]] | None = None

    def check(self) -> None:
        """Raise :class:`EngineError` for an option that cannot work."""
        if self.engine not in ("local", "ray"):
            raise EngineError(f"unknown engine {self.engine!r}; use 'local' or 'ray'")
        if self.concurrency < 1 or (self.workers is not None and self.workers < 1):
            raise EngineError("concurrency and workers must be at least 1")
        if self.item_timeout is not None and self.item_timeout <= 0:
            raise EngineError("item_timeout must be positive")


def _unique_keys(items: Sequence[WorkItem]) -> list[str]:
    keys = [item.key for item in items]
    if len(set(keys)) != len(keys):
        dupes = sorted(k for k, n in Counter(keys).items() if n > 1)
        raise EngineError(f"duplicate item keys: {', '.join(dupes[:5])}")
    return keys


def _dispatch(
    todo: Sequence[WorkItem],
    make_worker: WorkerFactory,
    emit: Callable[[WorkItem, dict[str, Any]], None],
    options: EngineOptions,
) -> dict[str, float]:
    """Run ``todo`` on the chosen engine, calling ``emit`` for each finished item; returns
    where the time went (:attr:`EngineRun.phases`)."""
    if options.engine == "local":
        return _run_local(
            todo,
            make_worker,
            emit,
            concurrency=options.concurrency,
            item_timeout=options.item_timeout,
        )
    return run_on_ray(
        todo,
        make_worker,
        emit,
        workers=options.workers or options.concurrency,
        address=options.ray_address,
        item_timeout=options.item_timeout,
        max_retries=options.max_retries,
    )


def _in_order(keys: Sequence[str], rows: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(rows[k] for k in keys if k in rows)


def run_items(
    items: Sequence[WorkItem],
    make_worker: WorkerFactory,
    out: str | Path,
    *,
    options: EngineOptions | None = None,
    **option_fields: Any,
) -> EngineRun:
    """Run ``items`` through workers made by ``make_worker``, appending each record to ``out``.

    Items already in ``out`` are skipped. How they run is an :class:`EngineOptions`, given as
    ``options=`` or as its fields in keywords (``concurrency=2, engine="ray"``), which override
    the fields of ``options``.
    """
    try:
        opts = dataclasses.replace(options or EngineOptions(), **option_fields)
    except TypeError as exc:
        raise TypeError(f"run_items: {exc}") from None
    opts.check()
    keys = _unique_keys(items)
    existing = read_results(out, repair=True)
    wanted = set(keys)

    def done(key: str) -> bool:
        row = existing.get(key)
        return row is not None and not (opts.retry_errors and row.get("error"))

    clear_stop_request()  # a stop asked of an earlier, interrupted run
    todo = [item for item in items if not done(item.key)]
    skipped = len(items) - len(todo)
    fresh: dict[str, dict[str, Any]] = {}
    with (
        ResultsFile(out, fsync=opts.fsync) as results,
        _Progress(
            enabled=opts.progress,
            total=len(items),
            done=skipped,
            description=opts.description,
            score=opts.score,
        ) as bar,
        _timer() as elapsed,
    ):
        for key, row in existing.items():
            if key in wanted and done(key):
                bar.seen(row, advance=False)

        def emit(item: WorkItem, record: dict[str, Any]) -> None:
            if opts.error_fields is not None and "error_kind" in record:
                record = {**opts.error_fields(item), "error_type": record["error_kind"], **record}
            row = results.append(item.key, record)
            fresh[item.key] = row
            bar.seen(row, advance=True)
            if opts.on_record is not None:
                opts.on_record(row)

        phases: dict[str, float] = {}
        if todo:
            try:
                phases = _dispatch(todo, make_worker, emit, opts)
            except RunInterrupted as stopped:
                stopped.records = _in_order(keys, {**existing, **fresh})
                raise
    records = _in_order(keys, {**existing, **fresh})
    seconds = elapsed[0]
    return EngineRun(
        records=records,
        ran=len(fresh),
        skipped=skipped,
        failed=sum(1 for r in records if r.get("error")),
        seconds=seconds,
        items_per_minute=(len(fresh) / seconds * 60.0) if seconds > 0 and fresh else 0.0,
        phases=phases,
    )
