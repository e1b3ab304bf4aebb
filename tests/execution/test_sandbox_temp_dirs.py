"""Killed callers leave nothing behind in the temp dir for long: real processes, SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

CALLER = textwrap.dedent(
    """
    import sys
    from tooluse.execution.sandbox import PythonSandbox, SandboxLimits, run_python
    if sys.argv[1] == "hang":
        session = PythonSandbox(timeout=120).session()
        session.run("x = 1")  # a session's directory, alive while the session is
        print("ready", flush=True)
        run_python("import time\\ntime.sleep(120)", SandboxLimits(timeout=120))
    else:
        print(run_python("print(6 * 7)").output, flush=True)
    """
)


def start(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    script = tmp_path.parent / f"{tmp_path.name}-caller.py"
    script.write_text(CALLER)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.Popen(
        [sys.executable, str(script), mode], stdout=subprocess.PIPE, text=True, env=env
    )


def entries(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir())


def claimed(folder: Path) -> list[str]:
    """The sandbox directories in ``folder`` that have their owner's lock file."""
    return [
        n for n in entries(folder) if n.count("-") == 2 and (folder / n / "owner.lock").exists()
    ]


def wait_for(predicate, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_killed_callers_folders_are_removed_by_the_next_use(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    for _ in range(2):  # two killed callers: their folders would pile up
        caller = start(temp, "hang")
        assert caller.stdout is not None and caller.stdout.readline() == "ready\n"
        # The one-shot run's directory exists too (the session's and the run's: two), each
        # claimed by its lock file (a kill between the directory and its lock is another case)
        wait_for(lambda: len(claimed(temp)) >= 2)
        os.kill(caller.pid, signal.SIGKILL)
        caller.wait()
    assert len(entries(temp)) > 1  # what the killed callers left
    done = start(temp, "once")
    out, _ = done.communicate(timeout=60)
    assert done.returncode == 0 and out == "42\n"
    # Only the per-user cache of the compiled child stays, whoever used the sandbox.
    assert entries(temp) == [f"tooluse-sandbox-code-{os.geteuid()}"]


def test_the_folders_of_a_living_caller_are_left_alone(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    alive = start(temp, "hang")
    try:
        assert alive.stdout is not None and alive.stdout.readline() == "ready\n"
        wait_for(lambda: len(claimed(temp)) >= 2)
        before = entries(temp)
        done = start(temp, "once")
        out, _ = done.communicate(timeout=60)
        assert out == "42\n"
        assert entries(temp) == before  # the living caller's directories are all still there
    finally:
        alive.kill()
        alive.wait()


def test_an_unclaimed_empty_folder_is_removed_only_after_its_grace_period(tmp_path):
    from tooluse.execution.sandbox.process import (
        UNCLAIMED_GRACE_SECONDS,
        WORKDIR_PREFIX,
        sweep_stale_workdirs,
    )

    # a caller killed between making its folder and creating the lock file leaves it empty
    old = tmp_path / f"{WORKDIR_PREFIX}abc123xy"
    fresh = tmp_path / f"{WORKDIR_PREFIX}fresh123"
    kept = tmp_path / f"{WORKDIR_PREFIX}notempty"
    cache = tmp_path / f"{WORKDIR_PREFIX}code-{os.geteuid()}"
    for folder in (old, fresh, kept, cache):
        folder.mkdir()
    (kept / "data.txt").write_text("someone's")
    past = time.time() - UNCLAIMED_GRACE_SECONDS - 5
    for folder in (old, kept, cache):
        os.utime(folder, (past, past))
    assert sweep_stale_workdirs(str(tmp_path)) == [str(old)]
    # one being made right now, anything with content and the code cache stay
    assert entries(tmp_path) == sorted(p.name for p in (fresh, kept, cache))
