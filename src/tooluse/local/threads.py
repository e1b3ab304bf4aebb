"""How many threads llama.cpp gets when the caller names none, and the one thread that runs
its computations."""

from __future__ import annotations

import math
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol, TypeVar

__all__ = [
    "ComputeLoop",
    "Stepper",
    "cgroup_cpu_limit",
    "compute_loop",
    "default_threads",
    "llama_thread_options",
    "on_compute_thread",
    "usable_cpus",
]

_T = TypeVar("_T")

CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_THREADS = 8


def cgroup_cpu_limit(root: Path = CGROUP_ROOT) -> int | None:
    """The CPUs a cgroup CPU quota allows this process, rounded up, or ``None`` without one.
    Reads cgroup v2's ``cpu.max`` ("quota period" or "max period"), else v1's
    ``cpu/cpu.cfs_quota_us`` and ``cpu/cpu.cfs_period_us`` (quota -1: none)."""
    try:
        fields = (root / "cpu.max").read_text().split()
        quota, period = (fields[0], fields[1]) if len(fields) >= 2 else ("max", "1")
    except OSError:
        try:
            quota = (root / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:  # "max", or text this reader does not know: no limit it can trust
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return max(1, math.ceil(quota_us / period_us))


def usable_cpus(root: Path = CGROUP_ROOT) -> int:
    """The CPUs this process may run on (its affinity), capped by a cgroup CPU quota."""
    visible = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cpus = visible or os.cpu_count() or 1
    quota = cgroup_cpu_limit(root)
    return cpus if quota is None else min(cpus, quota)


def default_threads(root: Path = CGROUP_ROOT) -> int:
    """llama.cpp's threads when none are given: the CPUs this process may run on (at most 8),
    fewer when a cgroup CPU quota allows fewer (a container limited to 2 CPUs on a large host
    would otherwise start 8 spinning threads), and fewer when ``OMP_NUM_THREADS`` says so. Ray
    sets that variable to an actor's CPUs, so two actors on a 2-CPU machine take one thread
    each instead of fighting over both (two threads per actor ran the embedded model at a third
    of one actor's speed); the test suite sets it to each test process's share."""
    threads = min(usable_cpus(root), MAX_THREADS)
    limit = os.environ.get("OMP_NUM_THREADS", "")
    if limit.isdigit() and int(limit) >= 1:
        threads = min(threads, int(limit))
    return max(1, threads)


def llama_thread_options(threads: int | None = None) -> dict[str, int]:
    """``llama_cpp.Llama`` keyword arguments giving generation and prompt evaluation the same
    thread count (``threads``, else :func:`default_threads`). llama-cpp-python's own default
    for prompt evaluation is ``multiprocessing.cpu_count()``, every CPU of the host, whatever
    the affinity, quota or ``OMP_NUM_THREADS`` say: its spinning threads then crowd whatever
    else runs, the more so the larger the host."""
    count = threads if threads is not None else default_threads()
    return {"n_threads": count, "n_threads_batch": count}


class Stepper(Protocol):
    """Work the compute thread does a step at a time (a batch engine)."""

    def has_work(self) -> bool: ...

    def step(self) -> None: ...


class ComputeLoop:
    """The process's one thread for llama.cpp computations.

    llama.cpp's CPU backend runs each computation on an OpenMP team that belongs to the thread
    calling it, and a team's workers spin for a while after each computation. Two threads that
    compute (two engines, or an engine and code of the caller's own) keep two teams, whose
    idle spinning takes the cores the other one computes on: one sequence decoded at about half
    its speed on 2 cores, and at a third with ``OMP_WAIT_POLICY=active``. So every engine
    steps on this one thread, in turn (:meth:`attach`), and other computations can be run on it
    too (:meth:`call`). The thread ends after ``idle_exit`` seconds without work and starts
    again with the next."""

    def __init__(self, idle_exit: float = 5.0) -> None:
        self.cond = threading.Condition()
        self.idle_exit = idle_exit
        self._steppers: list[Stepper] = []
        self._calls: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._thread: threading.Thread | None = None

    def attach(self, stepper: Stepper) -> None:
        """Step ``stepper`` while it has work (call with :attr:`cond` held, or not)."""
        with self.cond:
            if stepper not in self._steppers:
                self._steppers.append(stepper)
            self._start()
            self.cond.notify_all()

    def call(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` on the compute thread between steps, and wait for its result."""
        if self.on_loop():
            return work()
        future: Future[_T] = Future()
        with self.cond:
            self._calls.append((work, future))
            self._start()
            self.cond.notify_all()
        return future.result()

    def on_loop(self) -> bool:
        """Whether the caller is the compute thread."""
        return threading.current_thread() is self._thread

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._serve, name="tooluse-llama-compute", daemon=True
            )
            self._thread.start()

    def _serve(self) -> None:
        while self._serve_once():
            pass

    def _serve_once(self) -> bool:
        """Wait for work, then run the calls waiting and one step of each engine with work;
        ``False`` once idle for ``idle_exit`` seconds. (Its locals go when it returns, so an
        engine nobody else holds is not kept alive by the waiting thread.)"""
        with self.cond:
            idle = False
            while True:
                self._steppers = [s for s in self._steppers if s.has_work()]
                if self._steppers or self._calls:
                    break
                if idle:
                    self._thread = None
                    return False
                idle = not self.cond.wait(self.idle_exit)
            calls, self._calls = list(self._calls), deque()
            steppers = list(self._steppers)
        for work, future in calls:
            try:
                future.set_result(work())
            except BaseException as exc:  # the caller gets it
                future.set_exception(exc)
        for stepper in steppers:
            try:
                stepper.step()  # an engine keeps its own faults; one never stops the others
            except Exception:
                with self.cond:  # a stepper that cannot step is stepped no more
                    self._steppers = [s for s in self._steppers if s is not stepper]
        return True


_loop = ComputeLoop()


def compute_loop() -> ComputeLoop:
    """The process's compute loop."""
    return _loop


def on_compute_thread(work: Callable[[], _T]) -> _T:
    """Run ``work`` (a llama.cpp computation of the caller's own) on the compute thread that
    the batch engines decode on, and wait (see :class:`ComputeLoop`)."""
    return _loop.call(work)
