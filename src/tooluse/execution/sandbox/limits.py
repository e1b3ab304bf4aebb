"""The sandbox's shared types: its limits, a run's result, and reading capped output.

A leaf under the one-shot runs (:mod:`tooluse.execution.sandbox.run`) and the sessions
(:mod:`tooluse.execution.sandbox.session`).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = [
    "TRUNCATION_MARKER",
    "CappedReader",
    "SandboxLimits",
    "SandboxResult",
    "capped_text",
    "describe_limits",
    "error_reason",
    "traced_run",
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
    def exit_reason(self) -> str:
        """Why the run ended, in one word: ``ok``, ``error`` (an exception or a non-zero exit
        status), ``timeout``, ``memory`` (the address-space limit), ``cpu`` (the CPU-time
        limit), ``file_size`` (the file-size limit) or ``killed`` (another signal, or the
        interpreter ended)."""
        if self.timed_out:
            return "timeout"
        if self.ok:
            return "ok"
        code = self.exit_code
        if code is None:
            return "killed"
        if code < 0:
            return _SIGNAL_EXITS.get(-code, "killed")
        return "memory" if self.error.startswith("MemoryError") else "error"

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


class CappedReader(threading.Thread):
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


# The exit reasons of the signals the limits send.
_SIGNAL_EXITS: dict[int, str] = {
    int(getattr(signal, name)): reason
    for name, reason in (("SIGXCPU", "cpu"), ("SIGXFSZ", "file_size"))
    if hasattr(signal, name)
}


def traced_run(mode: str, limits: SandboxLimits, run: Callable[[], SandboxResult]) -> SandboxResult:
    """``run()``, as a span when the program traces (:mod:`tooluse.loop.telemetry`); ``mode`` is
    ``one-shot`` or ``session``."""
    # Looked up without importing: a program that never traces never loads OpenTelemetry.
    telemetry = sys.modules.get("tooluse.loop.telemetry")
    if telemetry is None:
        return run()
    result: SandboxResult = telemetry.sandbox_run(mode, limits, run)
    return result


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


def describe_limits(limits: SandboxLimits) -> str:
    text = f"{limits.timeout:g} s" + (
        f", {limits.memory_mb} MB memory" if limits.memory_mb is not None else ""
    )
    if not limits.allow_subprocess:
        text += ", no subprocesses"
    if not limits.allow_network:
        text += ", no network"
    return text
