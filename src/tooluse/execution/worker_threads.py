"""``DaemonThreadPool``: worker threads for sync tools that never keep the process alive.

A thread cannot be killed, so a sync tool that hangs past its timeout keeps running after its
call was answered. ``concurrent.futures.ThreadPoolExecutor`` joins its workers when the
interpreter exits, which would make the program hang on such a tool; these workers are daemon
threads, so exiting does not wait for them. Workers start on demand, up to ``max_workers``, and
stop when the pool is shut down or garbage collected. Like ``asyncio.to_thread``, a worker runs
each function in a copy of the submitter's context variables (a traced run's span reaches the
tool that way).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import itertools
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, Optional, TypeVar

__all__ = ["DaemonThreadPool"]

T = TypeVar("T")

_WorkItem = Optional[tuple["concurrent.futures.Future[Any]", Callable[..., Any], tuple, dict]]
_pool_numbers = itertools.count(1)


def _work(items: queue.SimpleQueue[_WorkItem], idle: threading.Semaphore) -> None:
    # A plain function (not a method): a worker must not keep its pool alive.
    while True:
        item = items.get()
        if item is None:
            return
        future, fn, args, kwargs = item
        del item
        if future.set_running_or_notify_cancel():
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the caller decides; the worker must survive
                future.set_exception(exc)
            else:
                future.set_result(result)
        del future, fn, args, kwargs
        idle.release()


def _stop_workers(items: queue.SimpleQueue[_WorkItem], count: int) -> None:
    for _ in range(count):
        items.put(None)


class DaemonThreadPool(concurrent.futures.Executor):
    """A thread pool of daemon workers (also usable with ``loop.run_in_executor``)."""

    def __init__(self, max_workers: int = 64, *, thread_name_prefix: str = "tooluse-tool") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._prefix = f"{thread_name_prefix}-{next(_pool_numbers)}"
        self._items: queue.SimpleQueue[_WorkItem] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shutdown = False
        self._finalizer: weakref.finalize | None = None

    def submit(  # type: ignore[override]
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot run a tool: its worker pool was shut down")
            future: concurrent.futures.Future[T] = concurrent.futures.Future()
            run_in_context = contextvars.copy_context().run
            self._items.put((future, run_in_context, (fn, *args), kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(
                    target=_work,
                    args=(self._items, self._idle),
                    name=f"{self._prefix}-{len(self._threads)}",
                    daemon=True,
                )
                thread.start()
                self._threads.append(thread)
                if self._finalizer is not None:
                    self._finalizer.detach()
                self._finalizer = weakref.finalize(
                    self, _stop_workers, self._items, len(self._threads)
                )
            return future

    @property
    def worker_count(self) -> int:
        return len(self._threads)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            if cancel_futures:
                pending: list[_WorkItem] = []
                while True:
                    try:
                        pending.append(self._items.get_nowait())
                    except queue.Empty:
                        break
                for item in pending:
                    if item is not None:
                        item[0].cancel()
            if self._finalizer is not None:
                self._finalizer()  # puts one stop marker per worker, once
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()
