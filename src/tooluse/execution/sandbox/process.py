"""Starting and stopping the sandbox child: the plumbing shared by one-shot runs and sessions.

The child program itself is :mod:`tooluse.execution.sandbox.child`; what it enforces is
documented in :mod:`tooluse.execution.sandbox`.
"""

from __future__ import annotations

import hashlib
import os
import py_compile
import select
import shutil
import signal
import stat
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

try:
    import fcntl
except ImportError:  # not POSIX: the sandbox refuses to run there anyway (see launch)
    fcntl = None  # type: ignore[assignment]

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

#: The child's program: its process tree (supervisors, the kill of what the code started),
#: then the isolation set-up, limits and the code; one program (see :func:`child_command`).
CHILD_FILES = (Path(__file__).with_name("child_tree.py"), Path(__file__).with_name("child.py"))
CHILD_SOURCE = "\n\n".join(path.read_text(encoding="utf-8") for path in CHILD_FILES)
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
    #: The code's channel to the host (``launch(channel=True)``): the parent reads the code's
    #: requests on ``call_fd`` and writes answers on ``answer_fd``; ``channel_fds`` are the
    #: numbers of the other ends in the code's process.
    call_fd: int | None = None
    answer_fd: int | None = None
    channel_fds: tuple[int, int] | None = None
    isolation: tuple[str, ...] = ()
    isolation_missing: tuple[str, ...] = ()


WORKDIR_PREFIX = "tooluse-sandbox-"
LOCK_NAME = "owner.lock"  # held (flock) by the process that made the directory, while it lives
_held_locks: dict[str, int] = {}  # workdir -> the open lock file keeping it claimed
_swept: list[bool] = []  # the temp dir was swept for stale directories (once per process)
# A directory with no lock file yet is being made: its lock follows within microseconds. One
# still empty this long after was left by a process killed between making and claiming it.
UNCLAIMED_GRACE_SECONDS = 60.0


def make_workdir() -> str:
    """A new temporary directory holding ``work`` (the code's) and ``root`` (a mount point).

    The directory is claimed by a lock its process holds until it removes the directory; the
    first call in a process removes the directories whose owners died (killed before they
    could clean up), which is the only way their lock is free.
    """
    with _compiled_lock:
        if not _swept:
            _swept.append(True)
            sweep_stale_workdirs()
    base = tempfile.mkdtemp(prefix=WORKDIR_PREFIX)
    if fcntl is not None:
        lock = os.open(os.path.join(base, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        _held_locks[base] = lock
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
    base = os.path.dirname(work)
    shutil.rmtree(base, ignore_errors=True)
    lock = _held_locks.pop(base, None)
    if lock is not None:
        os.close(lock)


def sweep_stale_workdirs(folder: str | None = None) -> list[str]:
    """Remove the sandbox directories in ``folder`` (the temp dir) whose owner has died.

    A directory counts as stale when its lock file exists and no process holds the lock (a
    lock dies with its process, in any PID namespace), or when it is one of this user's, still
    empty (no lock file) ``UNCLAIMED_GRACE_SECONDS`` after it was made; anything else is left
    alone.
    """
    folder = folder or tempfile.gettempdir()
    removed: list[str] = []
    if fcntl is None:
        return removed
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(WORKDIR_PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False) or entry.path in _held_locks:
            continue
        try:
            lock = os.open(os.path.join(entry.path, LOCK_NAME), os.O_RDWR)
        except OSError:  # no lock file: not a directory this code made, not ours, or unclaimed
            if _unclaimed(entry):
                try:
                    os.rmdir(entry.path)  # only while still empty: a lock made now keeps it
                except OSError:
                    continue
                removed.append(entry.path)
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: its process is alive
        else:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        finally:
            os.close(lock)
    return removed


def _unclaimed(entry: os.DirEntry[str]) -> bool:
    """A directory ``mkdtemp`` made for this user that was never claimed by its lock and has
    stayed empty past the grace period (the per-user code cache is named otherwise)."""
    if "-" in entry.name[len(WORKDIR_PREFIX) :]:
        return False
    try:
        info = entry.stat(follow_symlinks=False)
        if info.st_uid != os.geteuid() or time.time() - info.st_mtime < UNCLAIMED_GRACE_SECONDS:
            return False
        return not os.listdir(entry.path)
    except OSError:
        return False


def child_command(python_executable: str | None) -> list[str]:
    """How to start the child: its compiled bytecode file, or ``-c`` source.

    Compiling the child's source costs each run several milliseconds; the compiled file lives
    in one per-user cache directory in the temp dir, shared by every process and named by the
    source and interpreter version, so nothing piles up when processes are killed. Another
    interpreter than this one gets the source (bytecode is tied to the interpreter version).
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
    folder = _private_cache_dir()
    digest = hashlib.sha256((sys.version + "\0" + CHILD_SOURCE).encode()).hexdigest()[:20]
    target = os.path.join(folder, f"sandbox_child-{digest}.pyc")
    if os.path.isfile(target):
        return target
    # Written beside and renamed: a process starting the child never sees half a file.
    partial = os.path.join(folder, f".{digest}-{os.getpid()}-{threading.get_ident()}.tmp")
    source = partial + ".py"  # the one program, from its files
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(CHILD_SOURCE)
    try:
        py_compile.compile(
            source,
            cfile=partial,
            dfile="tooluse-sandbox-child",
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    finally:
        os.unlink(source)
    os.replace(partial, target)
    return target


def _private_cache_dir() -> str:
    """``<tempdir>/tooluse-sandbox-code-<uid>``: made 0700, and used only if it is ours."""
    folder = os.path.join(tempfile.gettempdir(), f"tooluse-sandbox-code-{os.geteuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        # Someone else's, or a link: never run bytecode another user could have written.
        raise OSError(f"{folder} is not a private directory of this user")
    return folder


def launch(
    limits: SandboxLimits,
    work: str,
    python_executable: str | None,
    *,
    session: bool = False,
    channel: bool = False,
) -> Child:
    """Start the child in ``work``; raises ``ToolExecutionError`` off POSIX.

    ``channel=True`` adds two pipes between the code and the parent (see :class:`Child`).
    """
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
    call_r = answer_w = None
    config.update(call_fd=None, answer_fd=None)
    if channel:
        call_r, call_w = os.pipe()
        answer_r, answer_w = os.pipe()
        child_fds += [call_w, answer_r]
        parent_fds += [call_r, answer_w]
        config.update(call_fd=call_w, answer_fd=answer_r)
    order = ("cpu_seconds", "memory_bytes", "file_size_bytes", "allow_subprocess",
             "allow_network", "isolate", "status_fd", "lifeline_fd", "command_fd", "reply_fd",
             "tmp_mb", "call_fd", "answer_fd")  # fmt: skip
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
        call_fd=call_r,
        answer_fd=answer_w,
        channel_fds=(config["call_fd"], config["answer_fd"]) if channel else None,
    )


def read_isolation(
    child: Child, limits: SandboxLimits, *, wait: float = 10.0, warn: bool = True
) -> None:
    """Read the child's isolation report (it ends when the child closes the status pipe);
    with ``warn``, what is missing is a :class:`SandboxIsolationWarning`."""
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
    if missing and limits.isolate and warn:
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
    fds = (child.status_fd, child.lifeline_fd, child.command_fd, child.reply_fd,
           child.call_fd, child.answer_fd)  # fmt: skip
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    for stream in (child.process.stdout, child.process.stderr):
        if stream is not None:
            stream.close()
