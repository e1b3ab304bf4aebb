"""Sandbox sessions: one long-lived isolated interpreter whose variables persist between calls.

::

    sandbox = PythonSandbox(timeout=5)
    with sandbox.session() as session:
        session.run("x = 6")
        session.run("print(x * 7)").output      # '42'

    # One stateful python tool per trajectory (the ENVS pattern):
    session = sandbox.session()
    tool = session.as_tool()                      # name "python"; runs in this session
    ...                                           # play the trajectory with [tool, ...]
    session.close()                               # the child and its namespace are gone

A session's child has the same isolation and limits as a one-shot run
(:mod:`tooluse.execution.sandbox`); it starts at the first call, runs each call's code in one
persistent ``__main__`` namespace, and is killed at :meth:`SandboxSession.close` (or when the
``with`` block ends, or when the session is garbage collected). Nothing is shared between
sessions. What a call starts ends with the call: processes the code started (with
``allow_subprocess=True``) are killed before its result comes back, so a background process
cannot be kept for a later call. The wall-clock timeout applies per call; the CPU limit is
the session's total (``cpu_seconds``, default 20 times the timeout). A call that times out or kills the
interpreter (CPU limit, signal) ends the session's child: the next call starts a fresh one,
and the failed call's error says that the variables are gone.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import select
import threading
import time
import weakref
from typing import IO, Any

from tooluse.errors import ToolExecutionError
from tooluse.execution.sandbox.limits import (
    SandboxLimits,
    SandboxResult,
    capped_text,
    describe_limits,
    error_reason,
    traced_run,
)
from tooluse.execution.sandbox.process import (
    Child,
    kill,
    launch,
    make_workdir,
    read_isolation,
    release,
    remove_workdir,
)
from tooluse.execution.sandbox.run import (
    code_parameter,
    python_tool,
    result_to_tool_result,
    run_python,
)
from tooluse.messages import ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["PythonSandbox", "SandboxSession"]

RESET_NOTE = (
    "the session's interpreter was stopped: the next call starts a fresh one (variables are lost)"
)


class _CellStream(threading.Thread):
    """Drains one output pipe of a session child and cuts it into cells at their markers."""

    def __init__(self, stream: IO[bytes], limit: int, condition: threading.Condition) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.limit = limit * 4  # bytes: at most 4 per character
        self.condition = condition
        self.marker = b""
        self.buffer = bytearray()
        self.dropped = 0
        self.done = False
        self.eof = False

    def expect(self, marker: bytes) -> None:
        with self.condition:
            self.marker, self.done, self.dropped = marker, False, 0
            self.buffer.clear()

    def run(self) -> None:
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else b""
            with self.condition:
                if not chunk:
                    self.eof = True
                    self.condition.notify_all()
                    return
                if self.done or not self.marker:
                    continue  # between cells: nothing is waiting for it
                self.buffer += chunk
                found = self.buffer.find(self.marker)
                if found >= 0:
                    del self.buffer[found:]
                    self.done = True
                    self.condition.notify_all()
                    continue
                # Keep the head and enough of the tail to find a marker split across reads.
                keep = len(self.marker)
                excess = len(self.buffer) - self.limit - keep
                if excess > 65536:
                    del self.buffer[self.limit : self.limit + excess]
                    self.dropped += excess

    def text(self) -> tuple[str, int]:
        with self.condition:
            kept = bytes(self.buffer[: self.limit])
            dropped = self.dropped + max(0, len(self.buffer) - self.limit)
        return capped_text(kept, dropped, self.limit // 4)


class _State:
    """What the finalizer needs: the running child and its directory (not the session)."""

    def __init__(self) -> None:
        self.child: Child | None = None
        self.streams: tuple[_CellStream, _CellStream] | None = None
        self.workdir: str | None = None

    def stop(self) -> None:
        child, workdir, streams = self.child, self.workdir, self.streams
        self.child = self.workdir = self.streams = None
        if child is not None:
            kill(child)
            for stream in streams or ():
                stream.join(timeout=2.0)
            release(child)
        if workdir is not None:
            remove_workdir(workdir)


class SandboxSession:
    """A stateful sandboxed interpreter (see the module documentation). Thread-safe: calls
    run one at a time."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        python_executable: str | None = None,
        channel: bool = False,
        warn_isolation: bool = True,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.python_executable = python_executable
        self.with_channel = channel
        self.warn_isolation = warn_isolation
        self.calls = 0
        self.starts = 0
        self._lock = threading.Lock()
        self._condition = threading.Condition()
        self._closed = False
        self._state = _State()
        self._finalizer = weakref.finalize(self, self._state.stop)

    @property
    def alive(self) -> bool:
        """True while the session's interpreter is running."""
        child = self._state.child
        return child is not None and child.process.poll() is None

    @property
    def closed(self) -> bool:
        return self._closed

    def _start(self) -> Child:
        state = self._state
        state.workdir = make_workdir()
        child = launch(
            self.limits,
            state.workdir,
            self.python_executable,
            session=True,
            channel=self.with_channel,
        )
        state.child = child
        assert child.process.stdout is not None and child.process.stderr is not None
        limit = self.limits.max_output_chars
        state.streams = (
            _CellStream(child.process.stdout, limit, self._condition),
            _CellStream(child.process.stderr, limit, self._condition),
        )
        for stream in state.streams:
            stream.start()
        read_isolation(child, self.limits, warn=self.warn_isolation)
        self.starts += 1
        return child

    def start(self) -> None:
        """Start the session's interpreter now (when it is not running), so that the next
        call does not wait for it. Raises ``ToolExecutionError`` when the session is closed."""
        with self._lock:
            if self._closed:
                raise ToolExecutionError("the sandbox session is closed", tool_name="python")
            if not self.alive:
                self._state.stop()
                self._start()

    @property
    def child(self) -> Child | None:
        """The running interpreter's process and pipes (``None`` before the first call), for
        a session made with ``channel=True``: its ``call_fd``/``answer_fd`` and the numbers of
        the code's ends (``channel_fds``)."""
        return self._state.child

    def run(self, code: str) -> SandboxResult:
        """Run ``code`` in the session; its variables stay for the next call.

        Never raises for anything the code does; raises ``TypeError`` for non-string code and
        ``ToolExecutionError`` when the session is closed.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a string, got {type(code).__name__}")
        with self._lock:
            if self._closed:
                raise ToolExecutionError("the sandbox session is closed", tool_name="python")
            return traced_run("session", self.limits, lambda: self._run_locked(code))

    def _run_locked(self, code: str) -> SandboxResult:
        started = time.perf_counter()
        child = self._state.child if self.alive else None
        if child is None:  # the first call, or the interpreter ended: a fresh one
            self._state.stop()
            child = self._start()
        self.calls += 1
        return self._call(child, code, started)

    def _call(self, child: Child, code: str, started: float) -> SandboxResult:
        streams = self._state.streams
        assert streams is not None and child.command_fd is not None and child.reply_fd is not None
        marker = b"\n\x00tooluse-cell-" + secrets.token_hex(16).encode() + b"\x00\n"
        for stream in streams:
            stream.expect(marker)
        payload = code.encode("utf-8", "surrogatepass")
        status: int | None = None
        garbled = False  # the code wrote on the reply pipe itself (it can reach its numbers)
        deadline = started + self.limits.timeout
        try:
            os.write(child.command_fd, f"{len(payload)} {len(marker)}\n".encode())
            view = memoryview(payload + marker)
            while view:
                view = view[os.write(child.command_fd, view) :]
            reply = b""
            while not reply.endswith(b"\n"):
                left = deadline - time.perf_counter()
                ready, _, _ = select.select([child.reply_fd], [], [], max(0.0, left))
                if not ready:
                    break
                chunk = os.read(child.reply_fd, 64)
                if not chunk:
                    break
                reply += chunk
            if reply.endswith(b"\n"):
                status = int(reply.strip() or b"1")
        except ValueError:
            status, garbled = None, True
        except OSError:
            status = None
        timed_out = status is None and time.perf_counter() >= deadline
        if status is not None:
            with self._condition:  # the markers were written before the reply
                self._condition.wait_for(lambda: all(s.done or s.eof for s in streams), timeout=5.0)
        else:
            kill(child)
            for stream in streams:
                stream.join(timeout=2.0)
        stdout, cut_out = streams[0].text()
        stderr, cut_err = streams[1].text()
        exit_code = status if status is not None else child.process.returncode
        error = error_reason(exit_code, timed_out, self.limits.timeout, stderr)
        if garbled:
            error = "it wrote something that is not a cell's status on the sandbox's reply pipe"
        if status is None:
            error = f"{error or 'the interpreter ended'}; {RESET_NOTE}"
            self._state.stop()
        return SandboxResult(
            stdout=stdout,
            stderr=stderr,
            exit_code=exit_code,
            timed_out=timed_out,
            truncated_chars=cut_out + cut_err,
            duration=time.perf_counter() - started,
            error=error,
            isolation=child.isolation,
            isolation_missing=child.isolation_missing,
            metadata={"session_call": self.calls, "session_reset": status is None},
        )

    async def arun(self, code: str) -> SandboxResult:
        """Async :meth:`run` (in a worker thread)."""
        return await asyncio.to_thread(self.run, code)

    def close(self) -> None:
        """Kill the session's interpreter and everything it started; remove its directory."""
        self._closed = True
        child = self._state.child
        if child is not None:
            kill(child)  # unblocks a call still running in another thread
        with self._lock:
            self._finalizer()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> SandboxSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def as_tool(self, name: str = "python") -> ToolDefinition:
        """A ``python`` tool running in this session (variables persist between its calls)."""

        def run_code(code: str) -> ToolResult:
            return result_to_tool_result(self.run(code), name)

        return ToolDefinition(
            name=name,
            description=(
                "Run Python 3 code in a sandboxed interpreter and return what it prints "
                "(stdout, then stderr). Use print() to show results; variables, functions and "
                "imports are kept between calls. "
                f"Limits per call: {describe_limits(self.limits)}."
            ),
            parameters=code_parameter(),
            function=run_code,
            metadata={"sandbox_limits": self.limits, "sandbox_session": self},
        )


class PythonSandbox:
    """Sandbox settings, reusable: one-shot runs, stateless tools and stateful sessions.

    ``PythonSandbox(timeout=5, memory_mb=256)`` takes :class:`SandboxLimits` fields (or
    ``limits=``).
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        python_executable: str | None = None,
        **limit_options: Any,
    ) -> None:
        if limits is not None and limit_options:
            raise TypeError("pass either limits= or limit options, not both")
        self.limits = limits or SandboxLimits(**limit_options)
        self.python_executable = python_executable

    def run(self, code: str) -> SandboxResult:
        """One fresh interpreter for ``code`` (see :func:`run_python`)."""
        return run_python(code, self.limits, python_executable=self.python_executable)

    async def arun(self, code: str) -> SandboxResult:
        return await asyncio.to_thread(self.run, code)

    def session(self) -> SandboxSession:
        """A new stateful session (its interpreter starts at the first call)."""
        return SandboxSession(self.limits, python_executable=self.python_executable)

    def tool(self, name: str = "python") -> ToolDefinition:
        """The stateless tool: every call in a fresh interpreter."""
        limits = self.limits
        return python_tool(
            timeout=limits.timeout,
            memory_mb=limits.memory_mb,
            cpu_seconds=limits.cpu_seconds,
            file_size_mb=limits.file_size_mb,
            max_output_chars=limits.max_output_chars,
            allow_subprocess=limits.allow_subprocess,
            allow_network=limits.allow_network,
            isolate=limits.isolate,
            name=name,
            python_executable=self.python_executable,
        )

    def session_tool(self, name: str = "python") -> tuple[ToolDefinition, SandboxSession]:
        """A stateful tool and its session, for one trajectory: close the session at its end."""
        session = self.session()
        return session.as_tool(name), session
