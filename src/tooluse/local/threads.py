"""How many threads llama.cpp gets when the caller names none."""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["cgroup_cpu_limit", "default_threads", "llama_thread_options", "usable_cpus"]

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
