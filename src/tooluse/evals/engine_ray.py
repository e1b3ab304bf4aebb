"""The Ray side of the run engine: the only module that imports ``ray``.

Each actor calls the worker factory once (the model is loaded once per actor) and then runs
one item at a time; the driver keeps every actor busy, writes each record as it arrives, and
when an actor dies (killed, out of memory, node lost) starts a new one and gives the item
again, up to ``max_retries`` times, after which the item gets a ``worker_lost`` error record.
An item past ``item_timeout`` has its actor killed and replaced, and gets a ``timeout`` record.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from tooluse.evals.engine import (
    EngineError,
    WorkerFactory,
    WorkItem,
    call_worker,
    error_record,
)

__all__ = ["ensure_ray", "run_on_ray"]


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
    """Holds one worker (made once) and runs items on it."""

    def __init__(self, make_worker: WorkerFactory) -> None:
        self._worker = make_worker()

    def ready(self) -> bool:
        return True

    def run(self, item: WorkItem) -> dict[str, Any]:
        return call_worker(self._worker, item)


def run_on_ray(
    todo: Sequence[WorkItem],
    make_worker: WorkerFactory,
    emit: Callable[[WorkItem, dict[str, Any]], None],
    *,
    workers: int,
    address: str | None,
    item_timeout: float | None,
    max_retries: int,
    cpus_per_worker: float = 1.0,
) -> None:
    """Run ``todo`` on ``workers`` Ray actors, calling ``emit(item, record)`` per finished item."""
    ray = _import_ray()
    started_here = ensure_ray(address)
    from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError, WorkerCrashedError

    actor_class = ray.remote(num_cpus=cpus_per_worker, max_restarts=0)(_WorkerActor)
    factory_ref = ray.put(make_worker)
    waiting: deque[WorkItem] = deque(todo)
    attempts: dict[str, int] = {}
    # in flight: object ref -> (actor, item, started)
    flight: dict[Any, tuple[Any, WorkItem, float]] = {}
    idle: list[Any] = []
    # actors still loading their worker: readiness ref -> actor (items go only to ready
    # actors, so an item's timeout never counts a model load)
    starting: dict[Any, Any] = {}

    def new_actor() -> None:
        actor = actor_class.remote(factory_ref)
        starting[actor.ready.remote()] = actor

    def failed_start(exc: BaseException) -> EngineError:
        # Ray's message is the whole remote traceback: its last line is the worker's error
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return EngineError(f"a Ray worker failed to start: {lines[-1] if lines else exc}")

    try:
        for _ in range(max(1, min(workers, len(todo)))):
            new_actor()
        while waiting or flight:
            while idle and waiting:
                actor = idle.pop()
                item = waiting.popleft()
                flight[actor.run.remote(item)] = (actor, item, time.monotonic())
            if not flight and not starting:
                raise EngineError("no Ray worker is left to run the remaining items")
            ready, _ = ray.wait([*flight, *starting], num_returns=1, timeout=0.5)
            for ref in ready:
                if ref in starting:
                    actor = starting.pop(ref)
                    try:
                        ray.get(ref)
                    except (RayActorError, WorkerCrashedError, RayTaskError) as exc:
                        raise failed_start(exc) from exc
                    idle.append(actor)
                    continue
                actor, item, _started = flight.pop(ref)
                try:
                    record = ray.get(ref)
                except (RayActorError, WorkerCrashedError) as exc:
                    if getattr(exc, "actor_init_failed", False):
                        raise failed_start(exc) from exc
                    _retry_or_fail(item, exc, attempts, max_retries, waiting, emit)
                    ray.kill(actor, no_restart=True)
                    if waiting or flight:
                        new_actor()
                    continue
                except RayTaskError as exc:  # call_worker catches item errors: a Ray fault
                    raise EngineError(f"Ray could not run an item: {exc}") from exc
                emit(item, record)
                idle.append(actor)
            if item_timeout is not None:
                now = time.monotonic()
                for ref, (actor, item, started) in list(flight.items()):
                    if now - started > item_timeout:
                        flight.pop(ref)
                        ray.kill(actor, no_restart=True)
                        emit(
                            item,
                            error_record(
                                None, "timeout", f"TimeoutError: no result after {item_timeout:g} s"
                            ),
                        )
                        if waiting or flight:
                            new_actor()
    except GetTimeoutError as exc:  # pragma: no cover - ray.get is only called on ready refs
        raise EngineError(f"Ray did not return a result: {exc}") from exc
    finally:
        for actor, _item, _started in flight.values():
            ray.kill(actor, no_restart=True)
        for actor in [*idle, *starting.values()]:
            ray.kill(actor, no_restart=True)
        if started_here:
            ray.shutdown()


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
