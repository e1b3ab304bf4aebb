"""Everything a sandboxed call starts is gone when the call ends, in every mode on this machine.

The code starts processes that try to outlive the call: a plain child that sleeps, one in a new
session with its output detached, one double-forked (the middle process exits, the grandchild
is an orphan in its own session). Neither a process-group kill nor waiting for the code's own
process finds them; the test looks for them in ``/proc`` after the call. In a session, a call
is one cell: what a cell started is gone when its result comes back, while the session lives.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from tooluse.execution.sandbox import PythonSandbox, SandboxLimits, run_python


def escaping_code(token: str) -> str:
    return textwrap.dedent(
        f"""
        import os, subprocess, sys
        sleeper = "import time; time.sleep(300)"
        child = subprocess.Popen([sys.executable, "-c", sleeper, "{token}-child"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.Popen([sys.executable, "-c", sleeper, "{token}-session"],
            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                os.execv(sys.executable, [sys.executable, "-c", sleeper, "{token}-double"])
            os._exit(0)
        os.wait()
        print("started")
        """
    )


def survivors(token: str) -> list[str]:
    """The processes whose command line carries ``token`` (zombies do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in command and state != b"Z":
            found.append(command.replace(b"\0", b" ").decode())
    return found


def assert_none_survive(token: str) -> None:
    for _ in range(40):  # SIGKILLed processes vanish from /proc within moments
        left = survivors(token)
        if not left:
            return
        time.sleep(0.05)
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if token.encode() in handle.read():
                    os.kill(int(pid), 9)  # leave no sleeper behind on this machine
        except OSError:
            pass
    raise AssertionError(f"processes outlived the call: {left}")


MODES = {
    "namespaces": SandboxLimits(timeout=20, allow_subprocess=True),
    "namespaces_with_network": SandboxLimits(timeout=20, allow_subprocess=True, allow_network=True),
    "no_isolation": SandboxLimits(timeout=20, allow_subprocess=True, isolate=False),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_detached_and_double_forked_processes_end_with_the_call(mode):
    token = f"tooluse-escape-{uuid.uuid4().hex}"
    result = run_python(escaping_code(token), MODES[mode])
    assert result.ok, result.output
    assert result.stdout == "started\n"
    assert_none_survive(token)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_timed_out_call_takes_its_detached_processes_with_it(mode):
    token = f"tooluse-escape-{uuid.uuid4().hex}"
    limits = SandboxLimits(timeout=3, allow_subprocess=True, isolate=MODES[mode].isolate)
    result = run_python(escaping_code(token) + "import time\ntime.sleep(60)\n", limits)
    assert result.timed_out
    assert_none_survive(token)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_closing_a_session_ends_what_its_cells_started(mode):
    token = f"tooluse-escape-{uuid.uuid4().hex}"
    with PythonSandbox(MODES[mode]).session() as session:
        assert session.run(escaping_code(token)).stdout == "started\n"
        assert session.run("print('still here')").stdout == "still here\n"
    assert_none_survive(token)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_what_a_session_cell_started_is_gone_when_the_cell_returns(mode):
    token = f"tooluse-escape-{uuid.uuid4().hex}"
    with PythonSandbox(MODES[mode]).session() as session:
        assert session.run("kept = 41").ok
        assert session.run(escaping_code(token)).stdout == "started\n"
        assert_none_survive(token)  # the session still runs: only the cell's processes ended
        assert session.alive
        # The cell's own child was killed (its status says so); the interpreter and its
        # variables are the same.
        after = session.run("print(child.wait(), kept + 1)")
        assert after.stdout == "-9 42\n", after.output
        assert after.metadata["session_reset"] is False


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_child_that_ended_within_its_cell_keeps_its_exit_status(mode):
    """The sweep kills what still runs; a child that already ended is left for its code."""
    with PythonSandbox(MODES[mode]).session() as session:
        code = "import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', 'exit(7)'])"
        assert session.run(code + "\nimport time\ntime.sleep(1)").ok
        assert session.run("print(p.wait())").stdout == "7\n"


def run_restricted(tmp_path, body: str, restriction: str) -> subprocess.CompletedProcess[str]:
    """Run ``body`` as root of a new user namespace the kernel restricts with ``restriction``
    (a shell command), so that the sandbox meets a kernel refusing namespaces."""
    if subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are not available to set up the restricted caller")
    script = tmp_path / "restricted.py"
    script.write_text("import warnings\nwarnings.simplefilter('ignore')\n" + body)
    command = f"{restriction} && exec {sys.executable} {script}"
    return subprocess.run(
        ["unshare", "-Ur", "sh", "-c", command], capture_output=True, text=True, timeout=120
    )


NO_PID_NAMESPACE = "echo 0 > /proc/sys/user/max_pid_namespaces"


def test_a_mount_namespace_without_a_pid_namespace_ends_what_the_call_started(tmp_path):
    """The kernel grants a mount namespace but refuses a PID namespace: the subreaper finds
    the code's processes although the code's root (shared with it) has no /proc."""
    token = f"tooluse-escape-{uuid.uuid4().hex}"
    body = textwrap.dedent(
        f"""
        from tooluse.execution.sandbox import PythonSandbox, SandboxLimits, run_python
        limits = SandboxLimits(timeout=20, allow_subprocess=True)
        result = run_python({escaping_code(token)!r}, limits)
        print(result.output, result.isolation, result.isolation_missing)
        """
    )
    try:
        done = run_restricted(tmp_path, body, NO_PID_NAMESPACE)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("started"), done.stdout
        assert "mount_namespace" in done.stdout and "'pid_namespace: " in done.stdout
    finally:
        assert_none_survive(token)


def test_a_session_cell_without_a_pid_namespace_ends_what_it_started(tmp_path):
    token = f"tooluse-escape-{uuid.uuid4().hex}"
    body = textwrap.dedent(
        f"""
        import os, time
        from tooluse.execution.sandbox import PythonSandbox, SandboxLimits
        with PythonSandbox(SandboxLimits(timeout=20, allow_subprocess=True)).session() as s:
            print(s.run({escaping_code(token)!r}).output, s.alive)
            time.sleep(0.5)
            left = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
                        if {token!r}.encode() in handle.read():
                            left.append(pid)
                except OSError:
                    pass
            print("left", left, s.alive)
        """
    )
    try:
        done = run_restricted(tmp_path, body, NO_PID_NAMESPACE)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["started True", "left [] True"], done.stdout
    finally:
        assert_none_survive(token)


def test_without_namespaces_from_the_kernel_nothing_outlives_the_call(tmp_path):
    """A caller the kernel refuses every namespace: the sandbox's other mode holds too."""
    if subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are not available to set up the restricted caller")
    token = f"tooluse-escape-{uuid.uuid4().hex}"
    script = tmp_path / "restricted.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import warnings
            from tooluse.execution.sandbox import SandboxLimits, run_python
            warnings.simplefilter("ignore")
            limits = SandboxLimits(timeout=20, allow_subprocess=True, allow_network=True)
            result = run_python({escaping_code(token)!r}, limits)
            print(result.output, result.isolation, result.isolation_missing)
            """
        )
    )
    restricted = (
        "echo 0 > /proc/sys/user/max_user_namespaces && "
        f"exec setpriv --inh-caps=-all --bounding-set=-all {sys.executable} {script}"
    )
    done = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", restricted], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("started"), done.stdout
    assert "pid_namespace" in done.stdout  # listed as missing: this is the other mode
    assert_none_survive(token)


def test_both_ways_of_finding_descendants_find_the_same_tree():
    """The supervisor reads each process's ``task/*/children``; a kernel without those files
    gets the scan of every process's parent link. Both find a real child and grandchild."""
    from tooluse.execution.sandbox import child_tree as program

    token = f"tooluse-escape-{uuid.uuid4().hex}"
    sleeper = f"import time; time.sleep(60)  # {token}"
    spawner = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', {sleeper!r}]); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", spawner])
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + 30
        while len(program._descendants(proc, parent.pid)) < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        read = {(pid, up) for pid, up, _ in program._descendants(proc, os.getpid())}
        scanned = {(pid, up) for pid, up, _ in program._descendants_by_scan(proc, os.getpid())}
        assert read == scanned
        [(grandchild, up, ended)] = program._descendants(proc, parent.pid)
        assert up == parent.pid and not ended and survivors(token)
    finally:
        os.close(proc)
        parent.kill()
        parent.wait()
        kill_leftovers(token)


def kill_leftovers(token: str) -> None:
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if token.encode() in handle.read():
                    os.kill(int(pid), 9)
        except OSError:
            pass
