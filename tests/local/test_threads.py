"""The local model's default thread count: CPU affinity, a cgroup CPU quota, OMP_NUM_THREADS."""

from __future__ import annotations

import os

import pytest

from tooluse.local.threads import (
    MAX_THREADS,
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
