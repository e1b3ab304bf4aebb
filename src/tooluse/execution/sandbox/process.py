"""Starting and stopping the sandbox child: the plumbing shared by one-shot runs and sessions.

The child program itself is :mod:`tooluse.execution.sandbox.child`; what it enforces is
documented in :mod:`tooluse.execution.sandbox`.
"""

from __future__ import annotations

import atexit
import os
import py_compile
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tooluse.errors import ToolExecutionError

if TYPE_CHECKING:
    from tooluse.execution.sandbox.limits import SandboxLimits

__all__ = [
    "CHILD_SOURCE",
    "SANDBOX_UID",
    "Child",
    "SandboxIsolationWarning",
    "child_command",
    "kill",
    "launch",
    "make_workdir",
    "read_isolation",
    "release",
    "remove_workdir",
]

#: The child's program (isolation set-up, limits, the code); see :func:`child_command`.
CHILD_PATH = Path(__file__).with_name("child.py")
CHILD_SOURCE = CHILD_PATH.read_text(encoding="utf-8")
_compiled: list[str] = []  # the child's bytecode file, once compiled (at most one entry)
_compiled_lock = threading.Lock()

#: The uid the code runs as when tooluse runs as root.
SANDBOX_UID = 65534


class SandboxIsolationWarning(RuntimeWarning):
    """The sandbox ran with less isolation than asked for (the kernel refused a feature)."""


def _clean_environment(workdir: str) -> dict[str, str]:
    # Nothing of the caller's environment is passed on: API keys and tokens stay out.
    return {
        "PATH": os.defpath,
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        # One thread per math library: the process limit also counts threads, and OpenBLAS
        # would fail to import numpy when it cannot start its thread pool.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
    }


@dataclass
class Child:
    """A started sandbox child and the parent's ends of its pipes."""

    process: subprocess.Popen[bytes]
    workdir: str
    status_fd: int
    lifeline_fd: int | None
    command_fd: int | None = None
    reply_fd: int | None = None
    isolation: tuple[str, ...] = ()
    isolation_missing: tuple[str, ...] = ()


def make_workdir() -> str:
    """A new temporary directory holding ``work`` (the code's) and ``root`` (a mount point)."""
    base = tempfile.mkdtemp(prefix="tooluse-sandbox-")
    work = os.path.join(base, "work")
    os.mkdir(work)
    os.mkdir(os.path.join(base, "root"))
    if os.geteuid() == 0:
        try:
            os.chown(work, SANDBOX_UID, SANDBOX_UID)  # the code runs as nobody
        except OSError:
            pass  # root of a user namespace without that uid: the child drops capabilities
    return work


def remove_workdir(work: str) -> None:
    shutil.rmtree(os.path.dirname(work), ignore_errors=True)


def child_command(python_executable: str | None) -> list[str]:
    """How to start the child: a bytecode file compiled once per process, or ``-c`` source.

    Compiling the child's source costs each run several milliseconds; the compiled file lives
    in a private temporary directory (removed at exit). Another interpreter than this one
    gets the source (bytecode is tied to the interpreter version).
    """
    exe = python_executable or sys.executable
    same = python_executable is None or os.path.realpath(exe) == os.path.realpath(sys.executable)
    if same:
        with _compiled_lock:
            if _compiled and _compiled[0] and not os.path.exists(_compiled[0]):
                _compiled.clear()  # a temp-directory cleaner removed it: compile again
            if not _compiled:
                try:
                    _compiled.append(_compile_child())
                except (OSError, py_compile.PyCompileError):
                    _compiled.append("")
        if _compiled[0]:
            return [exe, "-I", _compiled[0]]
    return [exe, "-I", "-c", CHILD_SOURCE]


def _compile_child() -> str:
    folder = tempfile.mkdtemp(prefix="tooluse-sandbox-code-")
    atexit.register(shutil.rmtree, folder, True)
    target = os.path.join(folder, "sandbox_child.pyc")
    py_compile.compile(
        str(CHILD_PATH),
        cfile=target,
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    return target


def launch(
    limits: SandboxLimits, work: str, python_executable: str | None, *, session: bool = False
) -> Child:
    """Start the child in ``work``; raises ``ToolExecutionError`` off POSIX."""
    if os.name != "posix":
        raise ToolExecutionError(
            "the python sandbox needs a POSIX system (resource limits, process groups)",
            tool_name="python",
        )
    status_r, status_w = os.pipe()
    lifeline_r, lifeline_w = os.pipe()
    child_fds = [status_w, lifeline_r]
    parent_fds = [status_r, lifeline_w]
    command_w = reply_r = None
    config = limits.child_limits(session=session)
    config.update(status_fd=status_w, lifeline_fd=lifeline_r, command_fd=None, reply_fd=None)
    if session:
        command_r, command_w = os.pipe()
        reply_r, reply_w = os.pipe()
        child_fds += [command_r, reply_w]
        parent_fds += [command_w, reply_r]
        config.update(command_fd=command_r, reply_fd=reply_w)
    order = ("cpu_seconds", "memory_bytes", "file_size_bytes", "allow_subprocess",
             "allow_network", "isolate", "status_fd", "lifeline_fd", "command_fd", "reply_fd",
             "tmp_mb")  # fmt: skip
    # Plain integers, not JSON: importing json costs the child time on every run.
    argument = ",".join("-" if config[k] is None else str(int(config[k])) for k in order)
    try:
        process = subprocess.Popen(
            [*child_command(python_executable), argument],
            cwd=work,
            env=_clean_environment(work),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, killed as a whole at the end
            close_fds=True,
            pass_fds=child_fds,
        )
    except BaseException:
        for fd in child_fds + parent_fds:
            os.close(fd)
        raise
    for fd in child_fds:
        os.close(fd)
    for fd in parent_fds:
        os.set_inheritable(fd, False)
    return Child(
        process=process,
        workdir=work,
        status_fd=status_r,
        lifeline_fd=lifeline_w,
        command_fd=command_w,
        reply_fd=reply_r,
    )


def read_isolation(child: Child, limits: SandboxLimits, *, wait: float = 10.0) -> None:
    """Read the child's isolation report (it ends when the child closes the status pipe)."""
    data = b""
    deadline = time.monotonic() + wait
    while True:
        ready, _, _ = select.select(
            [child.status_fd], [], [], max(0.0, deadline - time.monotonic())
        )
        if not ready:
            break
        chunk = os.read(child.status_fd, 4096)
        if not chunk:
            break
        data += chunk
    enforced: list[str] = ["clean_environment", "wall_clock_timeout"]
    missing: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        kind, _, rest = line.partition(" ")
        name, _, reason = rest.partition(" ")
        if kind == "enforced" and name:
            enforced.append(name)
        elif kind == "missing" and name:
            missing.append(f"{name}: {reason}" if reason else name)
    if not data:
        missing.append("report: the sandbox ended before reporting its isolation")
    child.isolation = tuple(enforced)
    child.isolation_missing = tuple(missing)
    if missing and limits.isolate:
        warnings.warn(
            "the python sandbox runs with less isolation than asked for: " + "; ".join(missing),
            SandboxIsolationWarning,
            stacklevel=3,
        )


def kill(child: Child) -> None:
    """Kill the child and everything it started, wherever it went.

    Closing the lifeline tells the child's supervisor to kill what the code started: the
    PID namespace, or (without one) every descendant, which a new session or a double fork
    cannot leave. The process group is killed afterwards, should the supervisor not answer.
    """
    lifeline, child.lifeline_fd = child.lifeline_fd, None  # closed once, by one caller
    if lifeline is not None:
        try:
            os.close(lifeline)
        except OSError:
            pass
        try:
            child.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(child.process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        child.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.process.kill()
        child.process.wait()


def release(child: Child) -> None:
    """Close the parent's ends of the child's pipes."""
    for fd in (child.status_fd, child.lifeline_fd, child.command_fd, child.reply_fd):
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    for stream in (child.process.stdout, child.process.stderr):
        if stream is not None:
            stream.close()
