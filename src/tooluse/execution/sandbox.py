"""A sandboxed ``python`` tool: model-written code runs in an isolated, limited interpreter.

::

    from tooluse.execution.sandbox import PythonSandbox, python_tool, run_python

    run_python("print(0.15 * 80)").output            # '12.0'
    tooluse.run(backend, "What is 17**5?", tools=[python_tool(timeout=5)])
    with PythonSandbox(timeout=5).session() as session:   # variables persist between calls
        session.run("x = 6")
        session.run("print(x * 7)").output           # '42'

What is enforced (Linux; every run, with the default settings). The child is a fresh
``python -I`` (no user site, no ``PYTHON*`` variables) that, before any of the code runs:

- **Namespaces**: new mount, PID, IPC and UTS namespaces, plus a new network namespace unless
  ``allow_network=True`` (the default is **no network**: not even 127.0.0.1). Root makes them
  directly; any other user gets them inside a new user namespace (its own uid mapped to itself).
- **Private filesystem view**: a new root on a small tmpfs, made read-only, holding ``/usr``,
  ``/bin``, ``/lib*``, the interpreter's and the virtualenv's directories and a short list of
  ``/etc`` entries (loader cache, time zone, ``passwd``/``group``, TLS certificates; never
  ``shadow``), all bound read-only; a fresh ``/proc`` showing only the sandbox's own processes; a
  ``/dev`` with ``null``, ``zero``, ``full``, ``random`` and ``urandom`` only; a small ``/tmp``.
  The only writable host directory is the run's own temporary directory, seen as ``/sandbox``
  (the working directory, ``HOME`` and ``TMPDIR``). No home directory, no ``/sys``, no ``/run``.
- **No privileges**: as root, the code runs as uid/gid 65534 (nobody) with no capabilities;
  in a user namespace, every capability is dropped; the capability bounding set is emptied and
  ``no_new_privs`` is set, so nothing can regain them.
- **Processes**: the code runs in its own PID namespace, in a new session, as PID 2 under a
  minimal init (PID 1, which reaps orphans); when the code ends (or is killed at the
  wall-clock timeout) init exits and the kernel kills every process left in the namespace, so
  nothing outlives the call. A supervisor outside the namespace passes the exit status (or
  signal) on, and kills the namespace when the calling process dies (a lifeline pipe). The
  caller's processes are invisible, so they cannot be signalled, traced or opened by pidfd.
- **Resource limits** (``setrlimit``, hard = soft): CPU seconds, address space, written file
  size, no core dumps and, unless ``allow_subprocess=True``, one process (plus an
  in-interpreter guard that refuses ``fork``/``exec``/``subprocess``/``ctypes``; a convenience,
  not the boundary).
- **Clean environment**: ``PATH``, ``HOME``, ``TMPDIR``, locale; nothing of the caller's
  environment (no API keys).
- stdout and stderr are captured separately and cut at ``max_output_chars`` with a marker.

Each result lists what was enforced in ``result.isolation``; a feature the kernel refused is
listed in ``result.isolation_missing`` and raises a :class:`SandboxIsolationWarning` (a run
that asked for no network fails, exit status 126, when a network namespace cannot be made).
``isolate=False`` turns the namespaces off (limits, guard and clean environment stay).
Not covered: a cgroup (memory is bounded by the address-space limit, processes by the
process limit), seccomp system-call filtering, and non-Linux systems (POSIX systems get the
limits only).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from tooluse.execution.sandbox_process import (
    SandboxIsolationWarning,
    kill,
    launch,
    make_workdir,
    read_isolation,
    release,
    remove_workdir,
)
from tooluse.messages import ToolResult
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

__all__ = [
    "PythonSandbox",
    "SandboxIsolationWarning",
    "SandboxLimits",
    "SandboxResult",
    "SandboxSession",
    "arun_python",
    "python_tool",
    "run_python",
]

TRUNCATION_MARKER = "\n... [output truncated: {removed} more characters]"


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """Limits of one sandboxed run.

    ``timeout`` is wall-clock seconds (the run is killed after it); ``cpu_seconds`` defaults
    to the timeout (in a session: the session's total, default 20 times the timeout);
    ``memory_mb`` caps the address space; ``file_size_mb`` caps any file the code writes (and
    sizes ``/tmp``); ``max_output_chars`` applies to stdout and stderr each.
    ``allow_subprocess=True`` lifts the process limit and guard. ``allow_network=True`` keeps
    the host's network (default: a new, empty network namespace). ``isolate=False`` runs
    without namespaces (see the module documentation).
    """

    timeout: float = 10.0
    cpu_seconds: int | None = None
    memory_mb: int | None = 512
    file_size_mb: int | None = 16
    max_output_chars: int = 8_000
    allow_subprocess: bool = False
    allow_network: bool = False
    isolate: bool = True

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError("timeout must be positive")
        if self.memory_mb is not None and self.memory_mb < 32:
            raise ValueError("memory_mb must be at least 32 (the interpreter itself needs it)")
        if self.max_output_chars < 1:
            raise ValueError("max_output_chars must be at least 1")
        if self.cpu_seconds is not None and self.cpu_seconds < 1:
            raise ValueError("cpu_seconds must be at least 1")

    def child_limits(self, *, session: bool = False) -> dict[str, Any]:
        """The limits as numbers for the child (``None``: no limit)."""
        default_cpu = max(1, int(self.timeout) + 1) * (20 if session else 1)
        mb = 1024 * 1024
        return {
            "cpu_seconds": self.cpu_seconds if self.cpu_seconds is not None else default_cpu,
            "memory_bytes": None if self.memory_mb is None else self.memory_mb * mb,
            "file_size_bytes": None if self.file_size_mb is None else self.file_size_mb * mb,
            "allow_subprocess": self.allow_subprocess,
            "allow_network": self.allow_network,
            "isolate": self.isolate,
            "tmp_mb": self.file_size_mb or 64,
        }


@dataclass(frozen=True, kw_only=True)
class SandboxResult:
    """What a sandboxed run produced.

    ``error`` is empty on success, else a short reason (``"timed out after 2 s"``, the
    exception's last traceback line, ``"killed by signal SIGXCPU (CPU time limit)"``...).
    ``isolation`` names what was enforced (``"mount_namespace"``, ``"filesystem_view"``,
    ``"network_namespace"``, ``"rlimits"``...); ``isolation_missing`` says what the system
    refused, with the reason.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False
    truncated_chars: int = 0
    duration: float = 0.0
    error: str = ""
    isolation: tuple[str, ...] = ()
    isolation_missing: tuple[str, ...] = ()
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
        return capped_text(bytes(self.kept), self.dropped, self.limit)


def capped_text(kept: bytes, dropped: int, limit: int) -> tuple[str, int]:
    """Decode ``kept`` and cut it at ``limit`` characters with a marker counting the rest."""
    decoded = kept.decode("utf-8", errors="replace")
    removed = max(0, len(decoded) - limit)
    if removed or dropped:
        removed += dropped  # bytes beyond the buffer: an estimate in characters
        decoded = decoded[:limit] + TRUNCATION_MARKER.format(removed=removed)
    return decoded, removed


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


def error_reason(exit_code: int | None, timed_out: bool, timeout: float, stderr: str) -> str:
    """The short reason a run failed ("" when it did not)."""
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
    limits = limits or SandboxLimits()
    started = time.perf_counter()
    work = make_workdir()
    try:
        with open(os.path.join(work, "main.py"), "w", encoding="utf-8") as handle:
            handle.write(code)
        child = launch(limits, work, python_executable)
        process = child.process
        assert process.stdout is not None and process.stderr is not None
        readers = (
            _CappedReader(process.stdout, limits.max_output_chars),
            _CappedReader(process.stderr, limits.max_output_chars),
        )
        try:
            for reader in readers:
                reader.start()
            timed_out = _wait(process, readers, started + limits.timeout)
        finally:
            kill(child)
            for reader in readers:
                reader.join(timeout=5.0)
        read_isolation(child, limits, wait=1.0)
        release(child)
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
            error=error_reason(exit_code, timed_out, limits.timeout, stderr),
            isolation=child.isolation,
            isolation_missing=child.isolation_missing,
        )
    finally:
        remove_workdir(work)


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


async def arun_python(
    code: str, limits: SandboxLimits | None = None, *, python_executable: str | None = None
) -> SandboxResult:
    """Async :func:`run_python` (the same run, in a worker thread)."""
    return await asyncio.to_thread(run_python, code, limits, python_executable=python_executable)


def result_to_tool_result(result: SandboxResult, name: str) -> ToolResult:
    """A sandbox result as the tool's answer: the output, or a failure with the reason."""
    metadata: dict[str, Any] = {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "sandbox_duration": round(result.duration, 6),
        "isolation": list(result.isolation),
    }
    if result.isolation_missing:
        metadata["isolation_missing"] = list(result.isolation_missing)
    if result.truncated_chars:
        metadata["truncated_chars"] = result.truncated_chars
    metadata.update(result.metadata)
    if result.ok:
        return ToolResult(call_id="", tool_name=name, output=result.output, metadata=metadata)
    return ToolResult.failure("", name, result.output or result.error, **metadata)


def describe_limits(limits: SandboxLimits) -> str:
    text = f"{limits.timeout:g} s" + (
        f", {limits.memory_mb} MB memory" if limits.memory_mb is not None else ""
    )
    if not limits.allow_subprocess:
        text += ", no subprocesses"
    if not limits.allow_network:
        text += ", no network"
    return text


def code_parameter() -> tuple[ToolParameter, ...]:
    return (
        ToolParameter(
            name="code", type=ToolParameterType.STRING, description="The Python source to run."
        ),
    )


def python_tool(
    *,
    timeout: float = 10.0,
    memory_mb: int | None = 512,
    cpu_seconds: int | None = None,
    file_size_mb: int | None = 16,
    max_output_chars: int = 8_000,
    allow_subprocess: bool = False,
    allow_network: bool = False,
    isolate: bool = True,
    name: str = "python",
    python_executable: str | None = None,
) -> ToolDefinition:
    """The sandboxed ``python`` tool: runs the model's code, answers with what it printed.

    Each call runs in a fresh interpreter (nothing is kept between calls; for a stateful tool
    see :meth:`SandboxSession.as_tool`). A failing run (exception, limit, timeout) comes back
    as an error result carrying the traceback or the reason, so the model can fix its code.
    """
    limits = SandboxLimits(
        timeout=timeout,
        cpu_seconds=cpu_seconds,
        memory_mb=memory_mb,
        file_size_mb=file_size_mb,
        max_output_chars=max_output_chars,
        allow_subprocess=allow_subprocess,
        allow_network=allow_network,
        isolate=isolate,
    )

    def run_code(code: str) -> ToolResult:
        return result_to_tool_result(
            run_python(code, limits, python_executable=python_executable), name
        )

    return ToolDefinition(
        name=name,
        description=(
            "Run Python 3 code in a fresh sandboxed interpreter and return what it prints "
            "(stdout, then stderr). Use print() to show results; nothing is kept between "
            f"calls. Limits: {describe_limits(limits)}."
        ),
        parameters=code_parameter(),
        function=run_code,
        metadata={"sandbox_limits": limits},
    )


# The session classes live in their own module, which builds on this one.
from tooluse.execution.sandbox_session import PythonSandbox, SandboxSession  # noqa: E402
