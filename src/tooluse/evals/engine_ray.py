"""The Ray side of the run engine: the only module that imports ``ray``.

Each actor calls the worker factory once (the model is loaded once per actor) and then runs
as many items at once as its worker takes (``concurrency``: a batched local model decodes
them together; one otherwise), on the actor's threads; the driver keeps every actor busy, writes each record as it arrives, and
when an actor dies (killed, out of memory, node lost) starts a new one and gives the item
again, up to ``max_retries`` times, after which the item gets a ``worker_lost`` error record.
An item past ``item_timeout`` has its actor killed and replaced, and gets a ``timeout`` record.
Ctrl-C stops the run as it stops the local engine's: no new item starts, each actor is asked to
stop its item (its process's stop request, :mod:`tooluse.interrupts`, sent through a control
method that runs beside the item), the items that still finish cleanly within the grace are
written, then the actors are killed (none kept) and :class:`RunInterrupted` is raised.

Two things keep the actors from waiting on the driver:

* **Pipelining**: without ``item_timeout`` each actor holds one item more than it runs, so it
  starts the next one the moment one finishes (no round trip to the driver in between). With a
  timeout an actor holds only what it runs, so an item's clock starts when it starts.
* **Actor reuse**: when the Ray session outlives the run (``ray.init`` was called by the
  caller, or an ``address`` is given), the actors of a finished run stay alive and the next run
  with the same worker factory takes them: no new processes, no second model load.
  :func:`release_workers` ends them; ``ray.shutdown()`` does too.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from tooluse.evals.engine_types import (
    INTERRUPT_GRACE,
    EngineError,
    RunInterrupted,
    WorkerFactory,
    WorkItem,
    call_worker,
    error_record,
    worker_capacity,
)
from tooluse.interrupts import interrupts_at_safe_points

__all__ = ["ensure_ray", "release_workers", "run_on_ray"]

#: Idle actors of finished runs, by the digest of their worker factory (see the module doc).
_KEPT: dict[str, list[Any]] = {}
#: The most items one actor runs at once (its threads; its worker's ``concurrency`` decides).
MAX_ACTOR_ITEMS = 32


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EngineError("the Ray engine needs Ray: pip install 'tooluse[ray]'") from None
    return ray


def ensure_ray(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """Connect to Ray (``address``, else a running session, else a new local one).

    Returns ``True`` when this call started the session (the caller shuts it down).
    """
    ray = _import_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
    }
    if address:
        kwargs["address"] = address
    elif num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    try:
        ray.init(**kwargs)
    except Exception as exc:  # a bad address or a cluster that will not start
        raise EngineError(f"cannot start or reach Ray ({address or 'local'}): {exc}") from exc
    return True


class _WorkerActor:
    """Holds one worker (made once) and runs items on it, several at once when the worker
    takes several (the actor is threaded)."""

    def __init__(self, make_worker: WorkerFactory) -> None:
        started = time.perf_counter()
        self._worker = make_worker()
        self._made_in = time.perf_counter() - started
        self._runs = min(MAX_ACTOR_ITEMS, worker_capacity(self._worker))
        # Ray hands every call a thread at once: items beyond what the worker takes (the
        # pipelined one) wait here, in the actor, for a running one to end
        self._places = threading.BoundedSemaphore(self._runs)

    def ready(self) -> tuple[int, float]:
        """How many items the actor runs at once, and the seconds its worker took to make."""
        return self._runs, self._made_in

    def run(self, item: WorkItem) -> tuple[dict[str, Any], float]:
        """The item's record and the seconds it ran (waiting for a place not counted)."""
        with self._places:
            started = time.perf_counter()
            record = call_worker(self._worker, item)
            return record, time.perf_counter() - started

    def stop(self) -> None:
        """Ask the running item's generation to stop (called in the ``control`` group, so it
        runs while ``run`` is busy)."""
        from tooluse.interrupts import request_stop

        request_stop()


class _RayPool:
    """The driver's view of the actors: items waiting, in flight, idle and starting actors."""

    def __init__(  # noqa: PLR0913 - the run's settings, keyword-only
        self,
        ray: Any,
        todo: Sequence[WorkItem],
        make_worker: WorkerFactory,
        emit: Callable[[WorkItem, dict[str, Any]], None],
        *,
        cpus_per_worker: float,
        max_retries: int,
        depth: int,
    ) -> None:
        self.ray = ray
        self._emit = emit
        self.written = 0  # records emitted, for the interrupted run's count
        self.max_retries = max_retries
        self.depth = depth  # items an actor holds beyond those it runs (queued)
        self.actor_class = ray.remote(
            num_cpus=cpus_per_worker,
            max_restarts=0,
            max_concurrency=MAX_ACTOR_ITEMS + 1,
            concurrency_groups={"control": 1},
        )(_WorkerActor)
        self.factory_ref = ray.put(make_worker)
        self.waiting: deque[WorkItem] = deque(todo)
        self.attempts: dict[str, int] = {}
        # in flight: object ref -> (actor, item, started)
        self.flight: dict[Any, tuple[Any, WorkItem, float]] = {}
        self.load: dict[Any, int] = {}  # ready actor -> items it holds
        self.room: dict[Any, int] = {}  # ready actor -> items it may hold
        # actors still loading their worker: readiness ref -> actor (items go only to ready
        # actors, so an item's timeout never counts a model load)
        self.starting: dict[Any, Any] = {}
        # where the time goes: the workers' making (model loads) in the actors, the wait from
        # the pool's start until the last actor is ready, the items' run time in the actors
        self.began = time.monotonic()
        self.phases = {"workers_made_seconds": 0.0, "actors_ready_after": 0.0, "items_seconds": 0.0}
        self.reused: set[Any] = set()  # kept actors whose readiness is being checked

    def emit(self, item: WorkItem, record: dict[str, Any]) -> None:
        self._emit(item, record)
        self.written += 1

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.flight)

    def new_actor(self) -> None:
        actor = self.actor_class.remote(self.factory_ref)
        self.starting[actor.ready.remote()] = actor

    def reuse(self, actor: Any) -> None:
        """Take a kept actor (its readiness is checked like a new one's)."""
        try:
            ref = actor.ready.remote()
        except Exception:  # a handle from an earlier Ray session
            self.new_actor()
            return
        self.reused.add(actor)
        self.starting[ref] = actor

    def replace(self, actor: Any) -> None:
        """Kill ``actor`` and start another while there is work left."""
        self.load.pop(actor, None)
        self.ray.kill(actor, no_restart=True)
        if self.busy:
            self.new_actor()

    def assign(self) -> None:
        for actor in sorted(self.load, key=self.load.__getitem__):
            while self.waiting and self.load[actor] < self.room[actor]:
                item = self.waiting.popleft()
                self.flight[actor.run.remote(item)] = (actor, item, time.monotonic())
                self.load[actor] += 1
        if not self.flight and not self.starting:
            raise EngineError("no Ray worker is left to run the remaining items")

    def collect(self, ref: Any) -> None:
        """Handle one ready reference: an actor that started, or an item that finished."""
        from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

        if ref in self.starting:
            self._started(ref)
            return
        actor, item, _started = self.flight.pop(ref)
        try:
            record, seconds = self.ray.get(ref)
            self.phases["items_seconds"] += seconds
        except (RayActorError, WorkerCrashedError) as exc:
            if getattr(exc, "actor_init_failed", False):
                raise _failed_start(exc) from exc
            _retry_or_fail(item, exc, self.attempts, self.max_retries, self.waiting, self.emit)
            if actor in self.load:
                self.replace(actor)
            return
        except RayTaskError as exc:  # call_worker catches item errors: a Ray fault
            raise EngineError(f"Ray could not run an item: {exc}") from exc
        self.emit(item, record)
        if actor in self.load:
            self.load[actor] -= 1

    def _started(self, ref: Any) -> None:
        from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

        actor = self.starting.pop(ref)
        try:
            runs, made_in = self.ray.get(ref)
            self.phases["workers_made_seconds"] += made_in
            self.phases["actors_ready_after"] = time.monotonic() - self.began
        except (RayActorError, WorkerCrashedError, RayTaskError) as exc:
            if actor not in self.reused:
                raise _failed_start(exc) from exc
            self.new_actor()  # a kept actor died in between: start a fresh one
            return
        self.load[actor] = 0
        self.room[actor] = max(1, int(runs)) + self.depth

    def expire(self, item_timeout: float) -> None:
        """Give a ``timeout`` record to items running longer than ``item_timeout``."""
        now = time.monotonic()
        for ref, (actor, item, started) in list(self.flight.items()):
            if now - started > item_timeout:
                self.flight.pop(ref)
                message = f"TimeoutError: no result after {item_timeout:g} s"
                self.emit(item, error_record(None, "timeout", message))
                self.replace(actor)

    def wind_down(self, grace: float, check_interrupt: Callable[[], None]) -> None:
        """After an interrupt: start nothing more, ask every actor to stop its item, and for
        up to ``grace`` seconds write the items that still finish cleanly (an item cut short
        is left out, so a rerun does it); a second interrupt stops the wait at once."""
        self.waiting.clear()
        for actor in self.load:
            actor.stop.options(concurrency_group="control").remote()
        deadline = time.monotonic() + grace
        try:
            while self.flight and time.monotonic() < deadline:
                check_interrupt()
                left = min(0.5, max(0.0, deadline - time.monotonic()))
                ready, _ = self.ray.wait(list(self.flight), num_returns=1, timeout=left)
                for ref in ready:
                    _actor, item, _started = self.flight.pop(ref)
                    try:
                        record, _seconds = self.ray.get(ref)
                    except Exception:  # noqa: S112 - an actor lost meanwhile: a rerun does it
                        continue
                    if not record.get("error"):
                        self.emit(item, record)
        except KeyboardInterrupt:
            pass

    def close(self, keep: str | None) -> None:
        """Kill the actors, or keep the idle ones under the digest ``keep``."""
        for actor, _item, _started in self.flight.values():
            self.load.pop(actor, None)
            self.ray.kill(actor, no_restart=True)
        if keep is not None:
            _KEPT.setdefault(keep, []).extend(a for a, held in self.load.items() if held == 0)
            self.load = {a: held for a, held in self.load.items() if held}
        # Busy actors whose items were given up (an interrupted run) go too.
        for actor in [*self.load, *self.starting.values()]:
            self.ray.kill(actor, no_restart=True)


def release_workers() -> int:
    """End the actors kept for reuse; returns how many there were."""
    kept = [actor for actors in _KEPT.values() for actor in actors]
    _KEPT.clear()
    if kept:
        ray = _import_ray()
        if ray.is_initialized():
            for actor in kept:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # a handle from an earlier Ray session: nothing to end
                    pass
    return len(kept)


def _digest(ray: Any, make_worker: WorkerFactory) -> str | None:
    """The factory's identity for reuse (``None``: it cannot be pickled to compare)."""
    try:
        data = ray.cloudpickle.dumps(make_worker)
    except Exception:  # an unpicklable factory fails later with Ray's own message
        return None
    return hashlib.sha256(data).hexdigest()


def _failed_start(exc: BaseException) -> EngineError:
    # Ray's message is the whole remote traceback: its last line is the worker's error
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return EngineError(f"a Ray worker failed to start: {lines[-1] if lines else exc}")


def run_on_ray(  # noqa: PLR0913 - the engine's options, keyword-only
    todo: Sequence[WorkItem],
    make_worker: WorkerFactory,
    emit: Callable[[WorkItem, dict[str, Any]], None],
    *,
    workers: int,
    address: str | None,
    item_timeout: float | None,
    max_retries: int,
    cpus_per_worker: float | None = None,
) -> dict[str, float]:
    """Run ``todo`` on ``workers`` Ray actors, calling ``emit(item, record)`` per finished item.
    Each actor reserves ``cpus_per_worker`` CPUs (``None``: an equal whole share of the
    cluster's, at least one), which Ray passes on as ``OMP_NUM_THREADS``, the local model's
    thread count. Returns where the time went (seconds): ``ray_start``, ``workers_made`` (in
    the actors, summed), ``actors_ready_after`` (the last actor), ``items`` (run time in the
    actors, summed) and ``wall``."""
    ray = _import_ray()
    began = time.monotonic()
    started_here = ensure_ray(address)
    ray_start = time.monotonic() - began
    from ray.exceptions import GetTimeoutError

    wanted = max(1, min(workers, len(todo)))
    if cpus_per_worker is None:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        cpus_per_worker = float(max(1, cpus // wanted))

    pool = _RayPool(
        ray,
        todo,
        make_worker,
        emit,
        cpus_per_worker=cpus_per_worker,
        max_retries=max_retries,
        depth=0 if item_timeout is not None else 1,
    )
    digest = None if started_here else _digest(ray, make_worker)
    if digest is not None:  # kept actors fit a run that reserves the same CPUs per actor
        digest = f"{digest}/{cpus_per_worker}"
    # Ctrl-C is taken between Ray calls: raised inside Ray's wait it can leave the run hung.
    with interrupts_at_safe_points() as check_interrupt:
        try:
            kept = _KEPT.pop(digest, []) if digest else []
            release_workers()  # kept actors of other factories would hold the CPUs new ones need
            for actor in kept[:wanted]:
                pool.reuse(actor)
            for actor in kept[wanted:]:
                ray.kill(actor, no_restart=True)
            for _ in range(wanted - len(kept[:wanted])):
                pool.new_actor()
            while pool.busy:
                check_interrupt()
                pool.assign()
                ready, _ = ray.wait([*pool.flight, *pool.starting], num_returns=1, timeout=0.5)
                for ref in ready:
                    pool.collect(ref)
                if item_timeout is not None:
                    pool.expire(item_timeout)
        except GetTimeoutError as exc:  # pragma: no cover - ray.get is only called on ready refs
            raise EngineError(f"Ray did not return a result: {exc}") from exc
        except KeyboardInterrupt:
            pool.wind_down(INTERRUPT_GRACE, check_interrupt)
            digest = None  # actors asked to stop are not kept for a later run
            raise RunInterrupted(written=pool.written, abandoned=0) from None
        finally:
            pool.close(digest)
            if started_here:
                ray.shutdown()
    return {
        "ray_start": round(ray_start, 3),
        "workers_made": round(pool.phases["workers_made_seconds"], 3),
        "actors_ready_after": round(pool.phases["actors_ready_after"], 3),
        "items": round(pool.phases["items_seconds"], 3),
        "wall": round(time.monotonic() - began, 3),
    }


def _retry_or_fail(
    item: WorkItem,
    exc: BaseException,
    attempts: dict[str, int],
    max_retries: int,
    waiting: deque[WorkItem],
    emit: Callable[[WorkItem, dict[str, Any]], None],
) -> None:
    attempts[item.key] = attempts.get(item.key, 0) + 1
    if attempts[item.key] <= max_retries:
        waiting.appendleft(item)
    else:
        emit(item, error_record(exc, "worker_lost"))
