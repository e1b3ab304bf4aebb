"""The daemon worker pool: results, exceptions, bounded workers, and no wait at exit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading

import pytest

from tooluse.execution.worker_threads import DaemonThreadPool


def test_results_exceptions_and_daemon_workers():
    pool = DaemonThreadPool(4)
    assert pool.submit(lambda a, b: a + b, 2, b=3).result(timeout=5) == 5
    failing = pool.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result(timeout=5)
    names = pool.submit(
        lambda: (threading.current_thread().daemon, threading.current_thread().name)
    )
    daemon, name = names.result(timeout=5)
    assert daemon and name.startswith("tooluse-tool")
    pool.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: 1)


def test_workers_are_reused_and_bounded():
    pool = DaemonThreadPool(3)
    for i in range(20):
        assert pool.submit(lambda i=i: i).result(timeout=5) == i
    assert pool.worker_count == 1  # one idle worker served every sequential call
    gate = threading.Event()
    futures = [pool.submit(gate.wait, 5) for _ in range(6)]
    assert pool.worker_count == 3
    gate.set()
    assert all(f.result(timeout=5) for f in futures)
    pool.shutdown(wait=True)


def test_cancel_futures_on_shutdown():
    pool = DaemonThreadPool(1)
    gate = threading.Event()
    running = pool.submit(gate.wait, 5)
    queued = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    gate.set()
    assert running.result(timeout=5) is True


async def test_usable_with_run_in_executor():
    pool = DaemonThreadPool(2)
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(pool, pow, 2, 10) == 1024
    pool.shutdown()


def test_a_hung_tool_does_not_keep_the_program_alive():
    # A sync tool stuck far past its timeout: the run answers the call and the process exits
    # right away instead of waiting for the thread.
    script = textwrap.dedent(
        """
        import threading
        from tooluse import ScriptedBackend, ToolCall, run

        forever = threading.Event()

        def stuck() -> str:
            forever.wait()
            return "never"

        backend = ScriptedBackend([[ToolCall(name="stuck")], "gave up"])
        result = run(backend, "go", tools=[stuck], tool_timeout=0.05)
        print(result.trail[0].output)
        print(result.final_text)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "timed out" in done.stdout and "gave up" in done.stdout
