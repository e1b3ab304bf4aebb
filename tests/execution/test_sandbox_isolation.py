"""Attacks on the sandbox, each run with the default settings (real namespaces, real processes).

A test skips only when the kernel refused the feature it depends on, printing the refusal
(``result.isolation_missing``); on a machine that allows namespaces every test runs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import warnings

import pytest

from tooluse.execution.sandbox import (
    SandboxIsolationWarning,
    SandboxLimits,
    SandboxResult,
    run_python,
)

DEFAULT = SandboxLimits()  # the defaults are what is under test
EVERYTHING = (
    "mount_namespace",
    "pid_namespace",
    "network_namespace",
    "filesystem_view",
    "private_proc",
    "no_new_privs",
    "rlimits",
)


def run(code: str, limits: SandboxLimits = DEFAULT) -> SandboxResult:
    return run_python(textwrap.dedent(code), limits)


@pytest.fixture(scope="module")
def probe() -> SandboxResult:
    """A harmless run first: an attack is only tried where the feature that stops it is on
    (a broken sandbox must fail these tests, not damage the machine running them)."""
    return run("print('probe')")


def require(result: SandboxResult, *features: str) -> None:
    """Skip, with the kernel's refusal, when a feature the test depends on is missing."""
    refused = [m for m in result.isolation_missing if m.split(":")[0] in features]
    if refused:
        pytest.skip("the kernel refused: " + "; ".join(refused))
    for feature in features:
        assert feature in result.isolation, (feature, result.isolation)


@pytest.fixture()
def victim():
    """A real process outside the sandbox, owned by the test's user, that must survive."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture()
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(3.0)
    yield server
    server.close()


def nobody_connected(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return True
    connection.close()
    return False


def test_default_run_enforces_every_feature_and_warns_about_none():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SandboxIsolationWarning)
        result = run("print('hi')")
    assert result.ok and result.output == "hi"
    require(result, *EVERYTHING)
    assert not result.isolation_missing


def test_writing_outside_the_work_dir_and_to_home_dotfiles_fails(probe, tmp_path):
    require(probe, "filesystem_view", "no_new_privs")
    token = os.urandom(6).hex()
    outside = tmp_path / "escaped.txt"
    home_file = os.path.join(os.path.expanduser("~"), f".tooluse_sandbox_probe_{token}")
    prefix_file = os.path.join(sys.prefix, f"tooluse_sandbox_probe_{token}")
    system_file = f"/usr/tooluse_sandbox_probe_{token}"
    code = f"""
    import os
    for path in ({str(outside)!r}, {home_file!r}, {prefix_file!r}, {system_file!r},
                 os.path.expanduser("~/.bashrc")):
        try:
            with open(path, "a") as handle:
                handle.write("pwned")
            print("wrote", path)
        except OSError as exc:
            print("refused", path, type(exc).__name__)
    """
    try:
        result = run(code)
        require(result, "filesystem_view")
        assert result.ok, result.output
        escaped = [p for p in (outside, home_file, prefix_file, system_file) if os.path.exists(p)]
        assert not escaped
    finally:  # a failing sandbox must not leave files behind either
        for path in (home_file, prefix_file, system_file):
            if os.path.exists(path):
                os.remove(path)
    # Only the work directory, which is the sandbox's own HOME, took the write.
    wrote = [line for line in result.stdout.splitlines() if line.startswith("wrote")]
    assert wrote == ["wrote /sandbox/.bashrc"]


def test_etc_shadow_and_the_host_home_are_not_readable(probe):
    require(probe, "filesystem_view")
    code = """
    import os
    for path in ("/etc/shadow", "/root", os.environ.get("HOME", "") + "/../.."):
        try:
            print("read", path, open(path).read()[:20] if os.path.isfile(path) else os.listdir(path))
        except OSError as exc:
            print("refused", path, type(exc).__name__)
    """
    result = run(code)
    require(result, "filesystem_view")
    assert "refused /etc/shadow" in result.stdout
    assert "root:" not in result.stdout
    assert ".pyenv" not in result.stdout or ".bashrc" not in result.stdout


def test_parent_environment_and_working_directory_stay_hidden(probe, monkeypatch, tmp_path):
    require(probe, "pid_namespace", "private_proc", "filesystem_view")
    monkeypatch.setenv("TOOLUSE_SANDBOX_SECRET", "sk-live-abc123")
    (tmp_path / "secret.txt").write_text("top secret")
    monkeypatch.chdir(tmp_path)
    parent = os.getpid()
    code = f"""
    import glob, os
    print("ppid", os.getppid())
    for path in ["/proc/{parent}/environ", "/proc/{parent}/cwd", "/proc/%d/environ" % os.getppid(),
                 {str(tmp_path / "secret.txt")!r}]:
        try:
            print("read", path, open(path, "rb").read()[:200] if not path.endswith("cwd")
                  else os.listdir(path))
        except OSError as exc:
            print("refused", path, type(exc).__name__)
    for path in glob.glob("/proc/*/environ"):
        try:
            print("scan", path, b"sk-live" in open(path, "rb").read())
        except OSError as exc:
            print("scan refused", path)
    """
    result = run(code)
    require(result, "pid_namespace", "private_proc", "filesystem_view")
    assert "sk-live-abc123" not in result.output
    assert "top secret" not in result.output
    assert "ppid 1" in result.stdout  # the sandbox's own init: the caller is not in its PID space
    assert f"refused /proc/{parent}/environ" in result.stdout
    assert f"refused /proc/{parent}/cwd" in result.stdout
    assert "True" not in result.stdout


KILL_ATTEMPTS = """
import os, signal, sys
target = {pid}
try:
    os.kill(target, signal.SIGKILL)
    print("os.kill worked")
except OSError as exc:
    print("os.kill refused", type(exc).__name__)
# Undo the in-interpreter guard: the kernel must still say no.
del sys.modules["_ctypes"]
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("libc.kill", libc.kill(target, 9), ctypes.get_errno())
pidfd = libc.syscall(434, target, 0)  # pidfd_open
print("pidfd_open", pidfd, ctypes.get_errno())
if pidfd >= 0:
    print("pidfd_send_signal", libc.syscall(424, pidfd, 9, None, 0))
print("parent is the sandbox's init:", os.getppid() == 1)
"""


def test_the_code_cannot_kill_processes_outside(probe, victim):
    require(probe, "pid_namespace")
    result = run(KILL_ATTEMPTS.format(pid=victim.pid))
    require(result, "pid_namespace")
    assert result.ok, result.output
    assert victim.poll() is None  # still running
    assert "os.kill worked" not in result.stdout
    assert "libc.kill -1" in result.stdout
    assert "pidfd_open -1" in result.stdout
    assert "parent is the sandbox's init: True" in result.stdout


def test_the_parent_survives_an_attempt_on_it(probe):
    require(probe, "pid_namespace")  # without it, this attack would kill the test run
    result = run(KILL_ATTEMPTS.format(pid=os.getpid()))
    require(result, "pid_namespace")
    assert "libc.kill -1" in result.stdout
    assert "pidfd_open -1" in result.stdout
    # Reaching this line is the point: the test process is alive.


def test_loopback_connection_is_refused_by_default(probe, listener):
    require(probe, "network_namespace")
    port = listener.getsockname()[1]
    code = f"""
    import socket
    for host in ("127.0.0.1", "localhost", "::1"):
        try:
            socket.create_connection((host, {port}), timeout=2).close()
            print("connected", host)
        except OSError as exc:
            print("refused", host, exc.errno)
    """
    result = run(code)
    require(result, "network_namespace")
    assert result.ok, result.output
    assert "connected" not in result.stdout
    assert nobody_connected(listener)


def test_setns_into_the_parents_network_namespace_fails(probe, listener):
    require(probe, "network_namespace", "pid_namespace", "no_new_privs")
    port = listener.getsockname()[1]
    code = f"""
    import os, socket, sys
    del sys.modules["_ctypes"]
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for path in ["/proc/{os.getpid()}/ns/net", "/proc/1/ns/net", "/proc/self/ns/net"]:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            print("open refused", path, type(exc).__name__)
            continue
        print("setns", path, libc.setns(fd, 0x40000000), ctypes.get_errno())
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        print("connected")
    except OSError as exc:
        print("refused", exc.errno)
    """
    result = run(code)
    require(result, "network_namespace", "pid_namespace")
    assert "connected" not in result.stdout
    assert f"open refused /proc/{os.getpid()}/ns/net" in result.stdout
    assert nobody_connected(listener)


def test_a_child_that_tries_to_outlive_the_call_is_killed(probe, listener):
    require(probe, "pid_namespace")
    port = listener.getsockname()[1]
    code = f"""
    import subprocess, sys
    # Detached, in its own session, holding stdout: it would keep the call waiting and then
    # phone home after the call ended.
    subprocess.Popen([sys.executable, "-c",
        "import socket, time; time.sleep(1.5); "
        "socket.create_connection(('127.0.0.1', {port}), timeout=2)"],
        start_new_session=True)
    print("spawned")
    """
    limits = SandboxLimits(timeout=10.0, allow_subprocess=True, allow_network=True)
    result = run(code, limits)
    require(result, "pid_namespace")
    assert result.ok, result.output
    assert result.stdout == "spawned\n"
    assert not result.timed_out  # the call did not wait for the detached child
    assert nobody_connected(listener)  # and the child never ran to its connection


def test_guard_bypasses_still_create_no_process(probe):
    require(probe, "rlimits", "no_new_privs")
    code = """
    import sys
    # 1. re-import _posixsubprocess to get the real fork_exec back
    del sys.modules["_posixsubprocess"]
    import importlib, subprocess
    importlib.reload(subprocess)
    try:
        print(subprocess.run(["/bin/echo", "escaped-subprocess"], capture_output=True).stdout)
    except OSError as exc:
        print("subprocess refused", type(exc).__name__)
    # 2. ctypes fork
    del sys.modules["_ctypes"]
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pid = libc.fork()
    if pid == 0:
        print("escaped-fork")
        libc._exit(0)
    print("fork", pid, ctypes.get_errno())
    """
    result = run(code)
    require(result, "rlimits")
    assert "escaped" not in result.stdout
    assert "fork -1" in result.stdout


def test_infinite_loop_is_stopped():
    result = run("while True:\n    pass", SandboxLimits(timeout=1.0))
    assert result.timed_out
    assert not result.ok


def test_fork_bomb_through_ctypes_creates_nothing(probe):
    require(probe, "pid_namespace", "rlimits")  # a real fork bomb otherwise
    code = """
    import sys
    del sys.modules["_ctypes"]
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    made = 0
    for _ in range(200):
        pid = libc.fork()
        if pid == 0:
            while True:
                libc.fork()
        if pid > 0:
            made += 1
    print("forked", made)
    """
    result = run(code)
    assert result.stdout == "forked 0\n", result.output
    assert not result.timed_out


def test_ten_gigabyte_allocation_fails_cleanly():
    result = run("block = bytearray(10 * 1024 ** 3)\nprint('allocated')")
    assert not result.ok
    assert "MemoryError" in result.error
    assert "allocated" not in result.stdout


def test_hundred_megabytes_of_output_are_cut_and_the_call_ends():
    code = """
    import sys
    chunk = "x" * 1_000_000
    for _ in range(100):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    print("done", file=sys.stderr)
    """
    result = run(code, SandboxLimits(timeout=60.0))
    assert result.ok, result.error
    assert not result.timed_out
    assert result.stderr == "done\n"
    assert len(result.stdout) < DEFAULT.max_output_chars + 100
    assert result.truncated_chars >= 99_000_000


def test_killing_the_caller_kills_the_sandbox(tmp_path):
    """The parent process dies mid-run: the sandbox's processes go with it."""
    script = tmp_path / "caller.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from tooluse.execution.sandbox import SandboxLimits, run_python
            print("ready", flush=True)
            run_python("import time\\ntime.sleep(60)", SandboxLimits(timeout=120))
            """
        )
    )
    # Its temporary directories land in tmp_path: a SIGKILLed caller cannot remove them.
    caller = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert caller.stdout is not None
    assert caller.stdout.readline() == "ready\n"
    # Find the sandbox's supervisor (the caller's child), then kill the caller outright.
    children = _children(caller.pid)
    while not children:
        children = _children(caller.pid)
    descendants = _descendants(caller.pid)
    os.kill(caller.pid, signal.SIGKILL)
    caller.wait()
    for pid in descendants:
        _wait_gone(pid)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def _descendants(pid: int) -> list[int]:
    import time

    found: list[int] = []
    for _ in range(200):  # until the sandbox's code process exists (supervisor, init, code)
        found, todo = [], [pid]
        while todo:
            for child in _children(todo.pop()):
                found.append(child)
                todo.append(child)
        if len(found) >= 3:
            break
        time.sleep(0.05)
    assert len(found) >= 3, found
    return found


def _wait_gone(pid: int) -> None:
    import time

    for _ in range(400):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return  # dead, waiting to be reaped by its (dead) parent's reaper
        time.sleep(0.05)
    raise AssertionError(f"process {pid} outlived the caller")


def test_missing_kernel_features_are_reported_and_warned_about(tmp_path):
    """A process without the rights to make namespaces: every gap is named, never silent."""
    if subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are not available to set up the restricted caller")
    script = tmp_path / "restricted.py"
    script.write_text(
        textwrap.dedent(
            """
            import warnings
            from tooluse.execution.sandbox import SandboxLimits, run_python
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                loose = run_python("print('ran')", SandboxLimits(allow_network=True))
                strict = run_python("print('ran')")
            print("loose", loose.output, loose.isolation_missing)
            print("strict", strict.exit_code, strict.error)
            print("warnings", [str(w.message)[:60] for w in caught])
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
    lines = {line.split(" ", 1)[0]: line for line in done.stdout.splitlines()}
    assert "loose ran" in lines["loose"]
    assert "mount_namespace" in lines["loose"] and "filesystem_view" in lines["loose"]
    # Asked for no network and it cannot be had: the run refuses instead of going online.
    assert "strict 126 network isolation is not available" in lines["strict"]
    assert "less isolation than asked for" in lines["warnings"]
