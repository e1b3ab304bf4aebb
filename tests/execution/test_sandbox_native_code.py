"""Native code in the sandbox: what the documentation promises, checked with real system calls.

The in-interpreter guard refuses ``import ctypes`` in the strict mode, but it is a convenience
that code can undo; the promise is that the kernel-level limits hold against native code.
Each check below makes the system call itself through libc, past every Python-level guard.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import textwrap
from pathlib import Path

import pytest

from tooluse.execution.sandbox import SandboxLimits, run_python

NATIVE = textwrap.dedent(
    """
    import sys
    try:
        import ctypes
        print("guard imported")
    except ImportError:
        print("guard refused")
    sys.modules.pop("_ctypes", None)  # undo the guard: the limits below must still hold
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    def report(name, result):
        print(name, "ok" if result not in (-1, None) else "refused", ctypes.get_errno())
    pid = libc.fork()
    if pid == 0:
        libc._exit(0)
    report("fork", pid)
    report("setuid0", libc.setuid(0))
    report("mount", libc.mount(b"none", b"/sandbox", b"tmpfs", 0, None))
    report("open_shadow", libc.open(b"/etc/shadow", 0))
    report("open_host_file", libc.open(b"{secret}", 0))
    report("kill_caller", libc.kill({caller}, 0))
    fd = libc.socket(2, 1, 0)
    address = (ctypes.c_ubyte * 16)(2, 0, {port_hi}, {port_lo}, 127, 0, 0, 1)
    report("connect", libc.connect(fd, address, 16))
    """
)


@pytest.fixture()
def open_folder():
    """A host folder anyone may read: only the filesystem view can hide what is in it."""
    folder = Path(tempfile.mkdtemp())
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture()
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    yield server
    server.close()


def native_run(listener: socket.socket, limits: SandboxLimits, folder: Path) -> dict[str, str]:
    port = listener.getsockname()[1]
    secret = folder / "host-secret.txt"
    secret.write_text("not for the sandbox")
    secret.chmod(0o644)  # readable by anyone on the host: only the filesystem view hides it
    code = NATIVE.format(secret=secret, caller=os.getpid(), port_hi=port >> 8, port_lo=port & 255)
    result = run_python(code, limits)
    assert result.ok, result.output
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    return {name: outcome.split()[0] for name, outcome in lines.items()}


def test_native_code_meets_the_kernel_limits_in_the_strict_mode(listener, open_folder):
    outcome = native_run(listener, SandboxLimits(), open_folder)
    assert outcome["guard"] == "refused"  # the convenience, undone on the next line
    # Past the guard, every system call that would leave the sandbox is refused by the kernel.
    for name in ("fork", "setuid0", "mount", "open_shadow", "open_host_file", "kill_caller"):
        assert outcome[name] == "refused", (name, outcome)
    assert outcome["connect"] == "refused"


def test_native_code_with_subprocesses_allowed_still_meets_the_namespaces(listener, open_folder):
    outcome = native_run(listener, SandboxLimits(allow_subprocess=True), open_folder)
    assert outcome["guard"] == "imported"
    assert outcome["fork"] == "ok"  # asked for (the child exits at once)
    for name in ("setuid0", "mount", "open_shadow", "open_host_file", "kill_caller", "connect"):
        assert outcome[name] == "refused", (name, outcome)
