"""A sandboxed ``python`` tool: model-written code runs in a separate, limited interpreter.

::

    from tooluse.execution.sandbox import python_tool, run_python

    run_python("print(0.15 * 80)").output            # '12.0'
    tooluse.run(backend, "What is 17**5?", tools=[python_tool(timeout=5)])

Each run starts a fresh ``python -I`` (isolated mode: no user site, no ``PYTHON*`` variables)
in a new temporary working directory with a clean environment (nothing of the caller's
environment leaks, so no API keys), in its own process group. Inside the child, before the
code runs, resource limits are set with ``resource.setrlimit``: CPU seconds, address space,
size of written files and number of processes. A wall-clock timeout kills the whole process
group. stdout and stderr are captured separately and cut at ``max_output_chars`` with a
marker; an exception comes back as its traceback text.

Limits of the isolation (it is a guard rail, not a security boundary): the kernel process limit
does not bind root, so process creation is also refused inside the interpreter (``os.fork``,
``subprocess``, ``os.system``, ``ctypes``...); for other users the kernel limit also counts
threads, so code that starts threads fails unless ``allow_subprocess=True``. The network stays
reachable unless ``allow_network=False`` (a new network namespace, Linux only). POSIX only
(``resource``, process groups).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from tooluse.errors import ToolExecutionError
from tooluse.messages import ToolResult
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

__all__ = [
    "SandboxLimits",
    "SandboxResult",
    "arun_python",
    "python_tool",
    "run_python",
]

TRUNCATION_MARKER = "\n... [output truncated: {removed} more characters]"

# Runs inside the child before the user's code: limits first (hard = soft, so the code cannot
# raise them again), then the in-interpreter process guard, then the code itself with the
# bootstrap's own frame cut from any traceback.
_BOOTSTRAP = r"""
import os, posix, resource, sys
_limits = dict(zip(("cpu_seconds", "memory_bytes", "file_size_bytes", "allow_subprocess",
                    "allow_network"),
                   (None if _v == "-" else int(_v) for _v in sys.argv[1].split(","))))
if not _limits["allow_network"]:
    # A new, empty network namespace (as root; else inside a new user namespace).
    import ctypes
    _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.unshare(0x40000000) != 0 and _libc.unshare(0x10000000 | 0x40000000) != 0:
        sys.stderr.write("error: network isolation is not available on this system\n")
        sys.stderr.flush()
        os._exit(126)
    del _libc, ctypes
    for _name in [m for m in sys.modules if m == "ctypes" or m.startswith("ctypes.")]:
        del sys.modules[_name]
def _cap(kind, value):
    if value is None:
        return
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        pass
_cap(resource.RLIMIT_CPU, _limits["cpu_seconds"])
_cap(resource.RLIMIT_AS, _limits["memory_bytes"])
_cap(resource.RLIMIT_FSIZE, _limits["file_size_bytes"])
_cap(resource.RLIMIT_CORE, 0)
if not _limits["allow_subprocess"]:
    _cap(resource.RLIMIT_NPROC, 1)
    def _refused(*args, **kwargs):
        raise PermissionError("process creation is not allowed in the sandbox")
    for _name in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp",
                  "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp",
                  "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "kill", "killpg"):
        for _module in (os, posix):
            if hasattr(_module, _name):
                setattr(_module, _name, _refused)
    import _posixsubprocess
    _posixsubprocess.fork_exec = _refused
    sys.modules["_ctypes"] = None
del _cap, _limits
sys.argv = ["main.py"]
with open("main.py", encoding="utf-8") as _f:
    _source = _f.read()
try:
    _code = compile(_source, "main.py", "exec")
    del _f, _source
    exec(_code, {"__name__": "__main__", "__builtins__": __builtins__})
except SystemExit:
    raise
except BaseException as _exc:
    import traceback
    _tb = _exc.__traceback__
    _tb = _tb.tb_next if _tb is not None and _tb.tb_next is not None else _tb
    sys.stdout.flush()
    sys.stderr.write("".join(traceback.format_exception(type(_exc), _exc, _tb)))
    sys.stderr.flush()
    os._exit(1)
"""


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """Limits of one sandboxed run.

    ``timeout`` is wall-clock seconds (the process group is killed after it); ``cpu_seconds``
    defaults to the timeout; ``memory_mb`` caps the address space; ``file_size_mb`` caps any
    file the code writes; ``max_output_chars`` applies to stdout and stderr each.
    ``allow_subprocess=True`` lifts the process guard. ``allow_network=False`` runs the code in
    a new, empty network namespace (Linux; the run fails with exit status 126 where namespaces
    are not permitted).
    """

    timeout: float = 10.0
    cpu_seconds: int | None = None
    memory_mb: int | None = 512
    file_size_mb: int | None = 16
    max_output_chars: int = 8_000
    allow_subprocess: bool = False
    allow_network: bool = True

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if self.memory_mb is not None and self.memory_mb < 32:
            raise ValueError("memory_mb must be at least 32 (the interpreter itself needs it)")
        if self.max_output_chars < 1:
            raise ValueError("max_output_chars must be at least 1")

    def child_limits(self) -> dict[str, Any]:
        """The limits as numbers for the child (``None``: no limit)."""
        cpu = self.cpu_seconds if self.cpu_seconds is not None else max(1, int(self.timeout) + 1)
        return {
            "cpu_seconds": cpu,
            "memory_bytes": None if self.memory_mb is None else self.memory_mb * 1024 * 1024,
            "file_size_bytes": None
            if self.file_size_mb is None
            else self.file_size_mb * 1024 * 1024,
            "allow_subprocess": self.allow_subprocess,
            "allow_network": self.allow_network,
        }


@dataclass(frozen=True, kw_only=True)
class SandboxResult:
    """What a sandboxed run produced.

    ``error`` is empty on success, else a short reason (``"timed out after 2 s"``, the
    exception's last traceback line, ``"killed by signal SIGXCPU (CPU time limit)"``...).
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False
    truncated_chars: int = 0
    duration: float = 0.0
    error: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def output(self) -> str:
        """The text the model sees: stdout, then stderr (labelled), then the error reason."""
        parts = []
        if self.stdout.strip():
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr.strip():
            parts.append(("[stderr]\n" if parts else "") + self.stderr.rstrip("\n"))
        if self.error and (self.timed_out or self.exit_code is None or self.exit_code < 0):
            parts.append(f"error: {self.error}")
        return "\n".join(parts)


class _CappedReader(threading.Thread):
    """Drains a pipe, keeping the first ``limit`` characters and counting the rest."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def run(self) -> None:
        # Keep reading past the limit: a blocked pipe would stall the child until the timeout.
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else b""
            if not chunk:
                break
            room = self.limit * 4 - len(self.kept)  # UTF-8: at most 4 bytes per character
            if room > 0:
                self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - room)
            else:
                self.dropped += len(chunk)

    def text(self) -> tuple[str, int]:
        decoded = bytes(self.kept).decode("utf-8", errors="replace")
        removed = max(0, len(decoded) - self.limit)
        if removed or self.dropped:
            removed += self.dropped  # bytes beyond the buffer: an estimate in characters
            decoded = decoded[: self.limit] + TRUNCATION_MARKER.format(removed=removed)
        return decoded, removed


def _limits_argument(limits: dict[str, Any]) -> str:
    # Plain integers, not JSON: importing json costs the child about 10 ms.
    order = ("cpu_seconds", "memory_bytes", "file_size_bytes", "allow_subprocess", "allow_network")
    return ",".join("-" if limits[k] is None else str(int(limits[k])) for k in order)


def _clean_environment(workdir: str) -> dict[str, str]:
    # Nothing of the caller's environment is passed on: API keys and tokens stay out.
    return {
        "PATH": os.defpath,
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
    }


# Looked up by name: Windows lacks some of these signals, and importing must not fail there.
_SIGNAL_REASONS: dict[int, str] = {
    int(getattr(signal, name)): why
    for name, why in (
        ("SIGXCPU", "CPU time limit"),
        ("SIGKILL", "killed"),
        ("SIGSEGV", "crashed"),
        ("SIGXFSZ", "file size limit"),
    )
    if hasattr(signal, name)
}


def _error_reason(exit_code: int | None, timed_out: bool, timeout: float, stderr: str) -> str:
    if timed_out:
        return f"timed out after {timeout:g} s and was stopped"
    if exit_code is None or exit_code == 0:
        return ""
    if exit_code < 0:
        number = -exit_code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        why = _SIGNAL_REASONS.get(number)
        return f"killed by signal {name}" + (f" ({why})" if why else "")
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    tail = lines[-1].strip() if lines else ""
    if tail.startswith("... [output truncated"):
        tail = "exception (see output)"
    return tail or f"exited with status {exit_code}"


def run_python(
    code: str, limits: SandboxLimits | None = None, *, python_executable: str | None = None
) -> SandboxResult:
    """Run ``code`` in a fresh sandboxed interpreter and return what it printed.

    Never raises for anything the code does (exceptions, limits, timeouts are reported in the
    result); raises ``TypeError`` when ``code`` is not a string and ``ToolExecutionError`` on a
    system without POSIX process control.
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be a string, got {type(code).__name__}")
    if os.name != "posix":
        raise ToolExecutionError(
            "the python sandbox needs a POSIX system (resource limits, process groups)",
            tool_name="python",
        )
    limits = limits or SandboxLimits()
    workdir = tempfile.mkdtemp(prefix="tooluse-sandbox-")
    started = time.perf_counter()
    try:
        with open(os.path.join(workdir, "main.py"), "w", encoding="utf-8") as handle:
            handle.write(code)
        process = subprocess.Popen(
            [
                python_executable or sys.executable,
                "-I",
                "-c",
                _BOOTSTRAP,
                _limits_argument(limits.child_limits()),
            ],
            cwd=workdir,
            env=_clean_environment(workdir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, killed as a whole on timeout
            close_fds=True,
        )
        assert process.stdout is not None and process.stderr is not None
        readers = (
            _CappedReader(process.stdout, limits.max_output_chars),
            _CappedReader(process.stderr, limits.max_output_chars),
        )
        for reader in readers:
            reader.start()
        timed_out = _wait(process, readers, started + limits.timeout)
        _kill_group(process.pid)
        process.wait()
        for reader in readers:
            reader.join(timeout=5.0)
        process.stdout.close()
        process.stderr.close()
        stdout, cut_out = readers[0].text()
        stderr, cut_err = readers[1].text()
        exit_code = process.returncode
        return SandboxResult(
            stdout=stdout,
            stderr=stderr,
            exit_code=exit_code,
            timed_out=timed_out,
            truncated_chars=cut_out + cut_err,
            duration=time.perf_counter() - started,
            error=_error_reason(exit_code, timed_out, limits.timeout, stderr),
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _wait(
    process: subprocess.Popen[bytes], readers: tuple[_CappedReader, ...], deadline: float
) -> bool:
    """Wait for the child until ``deadline``; True when it had to be stopped.

    Waiting on the readers first (they end when the child closes its pipes, normally at exit)
    avoids ``Popen.wait``'s polling sleeps, which would add tens of milliseconds to every run.
    """
    for reader in readers:
        reader.join(timeout=max(0.0, deadline - time.perf_counter()))
        if reader.is_alive():
            return True
    try:
        process.wait(timeout=max(0.0, deadline - time.perf_counter()))
    except subprocess.TimeoutExpired:
        return True
    return False


def _kill_group(pid: int) -> None:
    # Also reaps anything the code left running in its group (after a normal exit too).
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def arun_python(
    code: str, limits: SandboxLimits | None = None, *, python_executable: str | None = None
) -> SandboxResult:
    """Async :func:`run_python` (the same run, in a worker thread)."""
    return await asyncio.to_thread(run_python, code, limits, python_executable=python_executable)


def python_tool(
    *,
    timeout: float = 10.0,
    memory_mb: int | None = 512,
    cpu_seconds: int | None = None,
    file_size_mb: int | None = 16,
    max_output_chars: int = 8_000,
    allow_subprocess: bool = False,
    allow_network: bool = True,
    name: str = "python",
    python_executable: str | None = None,
) -> ToolDefinition:
    """The sandboxed ``python`` tool: runs the model's code, answers with what it printed.

    A failing run (exception, limit, timeout) comes back as an error result carrying the
    traceback or the reason, so the model can fix its code.
    """
    limits = SandboxLimits(
        timeout=timeout,
        cpu_seconds=cpu_seconds,
        memory_mb=memory_mb,
        file_size_mb=file_size_mb,
        max_output_chars=max_output_chars,
        allow_subprocess=allow_subprocess,
        allow_network=allow_network,
    )

    def run_code(code: str) -> ToolResult:
        result = run_python(code, limits, python_executable=python_executable)
        metadata = {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "sandbox_duration": round(result.duration, 6),
        }
        if result.truncated_chars:
            metadata["truncated_chars"] = result.truncated_chars
        if result.ok:
            return ToolResult(call_id="", tool_name=name, output=result.output, metadata=metadata)
        return ToolResult.failure("", name, result.output or result.error, **metadata)

    limits_text = f"{timeout:g} s" + (f", {memory_mb} MB memory" if memory_mb is not None else "")
    if not allow_subprocess:
        limits_text += ", no subprocesses"
    if not allow_network:
        limits_text += ", no network"
    return ToolDefinition(
        name=name,
        description=(
            "Run Python 3 code in a fresh sandboxed interpreter and return what it prints "
            "(stdout, then stderr). Use print() to show results; nothing is kept between "
            f"calls. Limits: {limits_text}."
        ),
        parameters=(
            ToolParameter(
                name="code",
                type=ToolParameterType.STRING,
                description="The Python source to run.",
            ),
        ),
        function=run_code,
        metadata={"sandbox_limits": limits},
    )
