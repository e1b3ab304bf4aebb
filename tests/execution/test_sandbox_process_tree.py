"""Everything a sandboxed call starts is gone when the call ends, in every mode on this machine.

The code starts processes that try to outlive the call: one in a new session with its output
detached, one double-forked (the middle process exits, the grandchild is an orphan in its own
session). Neither a process-group kill nor waiting for the code's own process finds them; the
test looks for them in ``/proc`` after the call.
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
