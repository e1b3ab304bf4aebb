"""One-shot sandboxed runs: ``run_python`` / ``arun_python`` and the stateless ``python_tool``.

Each call runs in a fresh sandboxed interpreter (what is enforced: :mod:`tooluse.execution.sandbox`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from typing import Any

from tooluse.execution.sandbox.limits import (
    CappedReader,
    SandboxLimits,
    SandboxResult,
    describe_limits,
    error_reason,
    traced_run,
)
from tooluse.execution.sandbox.process import (
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
    "arun_python",
    "code_parameter",
    "python_tool",
    "result_to_tool_result",
    "run_python",
]


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
    checked = limits or SandboxLimits()
    return traced_run("one-shot", checked, lambda: _run_once(code, checked, python_executable))


def _run_once(code: str, limits: SandboxLimits, python_executable: str | None) -> SandboxResult:
    started = time.perf_counter()
    work = make_workdir()
    try:
        with open(os.path.join(work, "main.py"), "w", encoding="utf-8") as handle:
            handle.write(code)
        child = launch(limits, work, python_executable)
        process = child.process
        assert process.stdout is not None and process.stderr is not None
        readers = (
            CappedReader(process.stdout, limits.max_output_chars),
            CappedReader(process.stderr, limits.max_output_chars),
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
    process: subprocess.Popen[bytes], readers: tuple[CappedReader, ...], deadline: float
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


def code_parameter() -> tuple[ToolParameter, ...]:
    return (
        ToolParameter(
            name="code", type=ToolParameterType.STRING, description="The Python source to run."
        ),
    )


def python_tool(  # noqa: PLR0913 - the sandbox settings, all keyword-only
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
