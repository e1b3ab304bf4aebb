"""The local model's default thread count (CPU affinity, a cgroup CPU quota, OMP_NUM_THREADS)
and the one compute thread every engine steps on."""

from __future__ import annotations

import os
import threading

import pytest

from tooluse.local.threads import (
    MAX_THREADS,
    ComputeLoop,
    cgroup_cpu_limit,
    default_threads,
    llama_thread_options,
)

VISIBLE = min(len(os.sched_getaffinity(0)), MAX_THREADS)


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "200000 100000\n"}, 2),
        ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs: two threads, the second half-busy
        ({"cpu.max": "50000 100000\n"}, 1),
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu.max": "garbage\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({}, None),
    ],
)
def test_the_cgroup_quota_is_read_from_v2_or_v1_files(tmp_path, files, expected):
    for name, text in files.items():
        write(tmp_path, name, text)
    assert cgroup_cpu_limit(tmp_path) == expected


def test_a_quota_below_the_visible_cpus_caps_the_threads(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert default_threads(tmp_path) == VISIBLE  # no quota files: the visible CPUs
    write(tmp_path, "cpu.max", "100000 100000\n")
    assert default_threads(tmp_path) == 1
    write(tmp_path, "cpu.max", "6400000 100000\n")  # 64 CPUs: the affinity and the cap rule
    assert default_threads(tmp_path) == VISIBLE


def test_omp_num_threads_lowers_the_count_but_never_raises_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert default_threads(tmp_path) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "999")
    assert default_threads(tmp_path) == VISIBLE
    monkeypatch.setenv("OMP_NUM_THREADS", "0")
    assert default_threads(tmp_path) == VISIBLE


def test_prompt_evaluation_gets_the_same_threads_as_generation(monkeypatch):
    # llama-cpp-python would give prompt evaluation every CPU of the host
    assert llama_thread_options(3) == {"n_threads": 3, "n_threads_batch": 3}
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert llama_thread_options() == {"n_threads": 1, "n_threads_batch": 1}


class _Counter:
    """A stepper with ``left`` steps of work; records the thread each step ran on."""

    def __init__(self, left: int, fail_at: int | None = None) -> None:
        self.left, self.fail_at, self.threads = left, fail_at, set()

    def has_work(self) -> bool:
        return self.left > 0

    def step(self) -> None:
        self.threads.add(threading.current_thread().name)
        if self.fail_at is not None and self.left == self.fail_at:
            self.left = 0
            raise RuntimeError("this stepper broke")
        self.left -= 1


def test_the_compute_loop_steps_every_engine_and_runs_calls_on_one_thread():
    loop = ComputeLoop(idle_exit=0.2)
    one, other, broken = _Counter(5), _Counter(7), _Counter(4, fail_at=2)
    for stepper in (one, other, broken):
        loop.attach(stepper)
    assert loop.call(lambda: threading.current_thread().name) == "tooluse-llama-compute"
    with pytest.raises(ZeroDivisionError):
        loop.call(lambda: 1 / 0)  # the caller gets a call's error; the loop goes on
    thread = loop._thread
    thread.join(10)  # idle once every stepper is done: the thread ends
    assert not thread.is_alive() and loop._thread is None
    assert one.left == other.left == 0  # the broken stepper stopped no one
    assert one.threads == other.threads == broken.threads == {"tooluse-llama-compute"}
    assert loop.call(lambda: loop.on_loop()) is True and not loop.on_loop()
