"""The host's side of one program: run it in a sandbox, answer the tool calls it makes.

:class:`ProgramRun` sends the program to a sandbox session started with a channel (see
:mod:`tooluse.execution.code_mode.runtime` for the other side) and serves the channel in a
reader thread while the program runs. Each call request is checked (known tool, callable from
code, within ``max_calls``), matched against the journal of an earlier run of the program
(answered from there when it already happened), approved (the run's policy, then the tool's
``requires_approval``) and run on the host by ``run_call`` (validation, hooks, timeouts: the
executor's), in a worker thread, so that calls the program awaits together run together. The
journal is handed to ``on_progress`` before a call runs and after it ends (the loop writes
its checkpoint there).

A call that needs a person's decision is not answered: the program goes on with what it can
do without it, and once it waits for nothing else the sandbox is stopped and the run returns a
suspended result holding the journal (the loop pauses; resuming runs the program again).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tooluse.execution.code_mode.journal import (
    INTERRUPTED,
    InnerCall,
    ProgramJournal,
    Replay,
)
from tooluse.execution.code_mode.settings import CodeMode
from tooluse.execution.sandbox.limits import SandboxResult
from tooluse.execution.sandbox.process import SandboxIsolationWarning
from tooluse.execution.sandbox.session import SandboxSession
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "CallRunner",
    "ProgramHost",
    "ProgramRun",
    "check_program",
    "done_calls",
    "final_answer_of",
    "new_calls",
    "program_calls",
    "program_journal",
    "suspended_journal",
    "without_program_data",
]

#: Runs one call on the host (blocking, thread-safe): validation, hooks, timeout included.
CallRunner = Callable[[ToolCall], ToolResult]
#: Decides a call before it runs: True run, False refuse, None the tool decides.
Policy = Callable[[ToolCall], "bool | None"]

_MAX_LINE = 8 << 20  # one request line from the program, in bytes
_JOURNAL_KEY, _WAITING_KEY, _FINAL_KEY = "program_journal", "program_waiting", "final_answer"
_REPLAYED_KEY = "program_replayed"


def check_program(source: Any, settings: CodeMode) -> str | None:
    """Why ``source`` cannot run (``None`` when it parses): not a string, too long, or not
    Python (the syntax error as Python reports it, with its line)."""
    if not isinstance(source, str):
        return f"code must be a string, got {type(source).__name__}"
    if len(source) > settings.max_program_chars:
        return (
            f"the program has {len(source)} characters; the limit is {settings.max_program_chars}"
        )
    try:
        ast.parse(source, "program.py")
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "the program"
        text = (exc.text or "").rstrip("\n")
        caret = ""
        if text and exc.offset:
            caret = "\n    " + text + "\n    " + " " * max(0, exc.offset - 1) + "^"
        return f"SyntaxError: {exc.msg} ({where}){caret}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"the program cannot be parsed: {type(exc).__name__}: {exc}"
    return None


# -- what a program's result carries for the loop ---------------------------------------------


def program_journal(result: ToolResult) -> ProgramJournal | None:
    """The journal of the program that gave ``result`` (``None`` for any other result)."""
    journal = result.metadata.get(_JOURNAL_KEY)
    return journal if isinstance(journal, ProgramJournal) else None


def program_calls(result: ToolResult) -> tuple[InnerCall, ...]:
    """The calls a program made that have their result (replayed ones included)."""
    journal = program_journal(result)
    return done_calls(journal) if journal is not None else ()


def done_calls(journal: ProgramJournal) -> tuple[InnerCall, ...]:
    """The calls of ``journal`` that have their result."""
    return tuple(c for c in journal.calls if c.status == "done" and c.result is not None)


def new_calls(result: ToolResult) -> tuple[InnerCall, ...]:
    """The calls of a program's result that ran in this run of it (not answered from the
    journal of an earlier run)."""
    replayed = set(result.metadata.get(_REPLAYED_KEY) or ())
    return tuple(c for c in program_calls(result) if c.call.id not in replayed)


def suspended_journal(result: ToolResult) -> ProgramJournal | None:
    """The journal of a program that waits for decisions (its result is no answer yet)."""
    return program_journal(result) if result.metadata.get(_WAITING_KEY) else None


def final_answer_of(result: ToolResult) -> str | None:
    """The answer a program gave with ``final_answer(...)``, if it did."""
    answer = result.metadata.get(_FINAL_KEY)
    return answer if isinstance(answer, str) else None


def without_program_data(result: ToolResult) -> ToolResult:
    """``result`` without its journal (kept in the run's state and trail, not the history)."""
    journal = program_journal(result)
    if journal is None:
        return result
    metadata = {k: v for k, v in result.metadata.items() if k != _JOURNAL_KEY}
    metadata["calls"] = len(done_calls(journal))
    return dataclasses.replace(result, metadata=metadata)


# -- one run ----------------------------------------------------------------------------------


@dataclass
class _Served:
    """The channel's state while a program runs (guarded by ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    journal: ProgramJournal = field(default_factory=lambda: ProgramJournal(program_id=""))
    made: int = 0  # calls the program asked for
    answered: int = 0  # answers sent
    running: int = 0  # host calls under way
    waiting_seen: int = -1  # answers the program had when it last said it waits
    pending: int = 0  # calls waiting for a decision
    suspended: bool = False
    broken: str = ""  # why the program was stopped (protocol, flooding)
    end: dict[str, Any] = field(default_factory=dict)
    next_number: int = 1
    idle: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.idle = threading.Condition(self.lock)


@dataclass(frozen=True, kw_only=True)
class ProgramHost:
    """What the programs of one executor share: the settings, the tools a program may call
    (by name) and their stubs' source, how a call runs on the host, the approval policy and
    where journals go (``on_progress``)."""

    settings: CodeMode
    definitions: Mapping[str, ToolDefinition]
    stubs_source: str
    run_call: CallRunner
    approve: Policy | None = None
    on_progress: Callable[[ProgramJournal], None] | None = None


class ProgramRun:
    """One run of one program (see the module documentation); :meth:`run` is its answer.

    ``journal`` and ``resolutions`` continue an earlier run of the same program call.
    """

    def __init__(
        self,
        *,
        program: ToolCall,
        source: str,
        session: SandboxSession,
        host: ProgramHost,
        journal: ProgramJournal | None = None,
        resolutions: Mapping[str, ToolCall | ToolResult] | None = None,
    ) -> None:
        self.program = program
        self.source = source
        self.session = session
        self.host = host
        self.settings = host.settings
        self.definitions = host.definitions
        self.answers_fd = -1
        # Calls that ended in an earlier run of the program: answered from the journal now.
        self.replayed = (
            tuple(c.call.id for c in journal.calls if c.status == "done") if journal else ()
        )
        start = (journal or ProgramJournal(program_id=program.id)).resolved(resolutions or {})
        self.replay = Replay(start)
        self.state = _Served(journal=start, next_number=self.replay.next_number)
        if resolutions and host.on_progress is not None:
            host.on_progress(start)  # the decisions are kept from now on, whatever happens
        self.workers = ThreadPoolExecutor(max_workers=8, thread_name_prefix="tooluse-program")
        telemetry = sys.modules.get("tooluse.loop.telemetry")
        # Captured here, in the thread where the program's own span is current.
        self.trace = telemetry.program_calls(program.id) if telemetry is not None else None

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> ToolResult:
        """Run the program to its end (or until it waits for decisions); its answer."""
        started = time.perf_counter()
        child = self.session.child
        if child is None or child.call_fd is None or child.answer_fd is None:
            raise RuntimeError("a program needs a started sandbox session with a channel")
        assert child.channel_fds is not None
        if child.isolation_missing and self.settings.isolate:
            warnings.warn(
                "the program sandbox runs with less isolation than asked for: "
                + "; ".join(child.isolation_missing),
                SandboxIsolationWarning,
                stacklevel=4,
            )
        # Own copies: the session closes its ends when the child ends, and a number closed
        # under a thread still using it could be reused by any file opened meanwhile.
        calls, self.answers_fd = os.dup(child.call_fd), os.dup(child.answer_fd)
        reader = threading.Thread(target=self._serve, args=(calls,), daemon=True)
        reader.start()
        config = {
            "out_fd": child.channel_fds[0],
            "in_fd": child.channel_fds[1],
            "source": self.source,
            "stubs": self.host.stubs_source,
        }
        try:
            outcome = self.session.run(f"_tooluse_main({config!r})")
        except BaseException:
            self._shut(reader, calls)
            raise
        if outcome.metadata.get("session_reset") is not False:  # stopped: read all it sent
            self._shut(reader, calls)
            return self._answer(outcome, time.perf_counter() - started)
        # It ended by itself: its last word (sent before the session's reply) is read at once,
        # and the interpreter is stopped in the background, off the answer's path.
        try:
            with self.state.lock:
                self.state.idle.wait_for(lambda: bool(self.state.end), timeout=2.0)
            self._settle()
            return self._answer(outcome, time.perf_counter() - started)
        finally:
            threading.Thread(target=self._shut, args=(reader, calls), daemon=True).start()

    def _shut(self, reader: threading.Thread, calls: int) -> None:
        """Stop the program's interpreter, and close the channel once nobody uses it."""
        self.session.close()
        reader.join(timeout=10.0)
        self._settle()
        os.close(calls)
        os.close(self.answers_fd)

    def cancel(self) -> None:
        """Stop the program (its result says it was cancelled)."""
        with self.state.lock:
            self.state.broken = self.state.broken or "cancelled before it finished"
        self.session.close()

    def _settle(self) -> None:
        """Wait for the host calls still running (their results belong in the journal)."""
        with self.state.lock:
            self.state.idle.wait_for(lambda: self.state.running == 0, timeout=3600)
        self.workers.shutdown(wait=False)

    # -- the channel ---------------------------------------------------------------------------

    def _serve(self, fd: int) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, _, pending = pending.partition(b"\n")
                self._message(line)
            if len(pending) > _MAX_LINE:
                self._stop(f"stopped: it sent a request longer than {_MAX_LINE >> 20} MB")
                return

    def _message(self, line: bytes) -> None:
        try:
            message = json.loads(line)
            op = message["op"]
        except (ValueError, TypeError, KeyError):
            self._stop("stopped: it wrote something that is not a tool request to the host")
            return
        if op == "call":
            self._request(message)
        elif op == "waiting":
            with self.state.lock:
                self.state.waiting_seen = int(message.get("answers", -1))
            self._maybe_suspend()
        elif op == "end":
            with self.state.lock:
                self.state.end = message
                self.state.idle.notify_all()

    def _stop(self, why: str) -> None:
        with self.state.lock:
            self.state.broken = self.state.broken or why
        self.session.close()

    def _send(self, seq: Any, result: ToolResult, *, kind: str = "error") -> None:
        if result.is_error:
            error = result.output.removeprefix("error: ")
            message: dict[str, Any] = {"seq": seq, "ok": False, "tool": result.tool_name}
            message.update(error=error, kind=kind)
        else:
            message = {"seq": seq, "ok": True, "value": _value(result)}
        data = (json.dumps(message, ensure_ascii=False, default=str) + "\n").encode()
        with self.state.lock:
            self.state.answered += 1
            try:  # under the lock: answers written by several workers must not interleave
                view = memoryview(data)
                while view:
                    view = view[os.write(self.answers_fd, view) :]
            except OSError:
                pass  # the program has ended: nobody waits for the answer

    # -- one request -------------------------------------------------------------------------

    def _request(self, message: dict[str, Any]) -> None:
        seq, name = message.get("seq"), str(message.get("tool", ""))
        arguments = message.get("args")
        with self.state.lock:
            self.state.made += 1
            made = self.state.made
        limit = self.settings.max_calls
        if made > 2 * limit:
            self._stop(f"stopped: it kept calling tools after the limit of {limit} calls")
            return
        if made > limit:
            note = f"not run: the program reached its limit of {limit} tool calls"
            self._send(seq, ToolResult.failure("", name, note))
            return
        definition = self.definitions.get(name)
        if definition is None:
            known = ", ".join(sorted(self.definitions)) or "none"
            note = f"no tool named {name!r} can be called from a program (tools: {known})"
            self._send(seq, ToolResult.failure("", name, note))
            return
        if not isinstance(arguments, dict):
            self._send(seq, ToolResult.failure("", name, "the arguments must be an object"))
            return
        call = ToolCall(id="", name=name, arguments=arguments, caller=self.program.id)
        known_call = self.replay.claim(call)
        if known_call is not None:
            self._replayed(seq, known_call, definition)
            return
        with self.state.lock:
            number = self.state.next_number
            self.state.next_number += 1
        self._decide(seq, dataclasses.replace(call, id=f"{self.program.id}.{number}"), definition)

    def _replayed(self, seq: Any, known: InnerCall, definition: ToolDefinition) -> None:
        if known.status == "done" and known.result is not None:
            denied = known.result.is_error and known.result.output.startswith("error: denied")
            self._send(seq, known.result, kind="denied" if denied else "error")
        elif known.status == "approved" or (known.status == "running" and definition.idempotent):
            self._start(seq, known)
        elif known.status == "running":  # the process died while it ran, and it may not repeat
            interrupted = ToolResult.failure(known.call.id, known.call.name, INTERRUPTED)
            self._record(known.finished(interrupted))
            self._send(seq, interrupted)
        else:  # it still waits for a decision
            self._wait_for_decision(known)

    def _decide(self, seq: Any, call: ToolCall, definition: ToolDefinition) -> None:
        approve = self.host.approve
        verdict = approve(call) if approve is not None else None
        if verdict is None and definition.requires_approval:
            self._wait_for_decision(InnerCall(call=call, status="pending"))
        elif verdict is None or verdict:
            self._start(seq, InnerCall(call=call, status="running"))
        else:
            reason = "denied: the approval policy refused this call"
            denied = ToolResult.failure(call.id, call.name, reason)
            self._record(InnerCall(call=call, status="done", result=denied))
            self._send(seq, denied, kind="denied")

    def _wait_for_decision(self, inner: InnerCall) -> None:
        self._record(dataclasses.replace(inner, status="pending"))
        with self.state.lock:
            self.state.pending += 1
        self._maybe_suspend()

    def _maybe_suspend(self) -> None:
        """Stop the program once it waits for nothing but decisions."""
        state = self.state
        with state.lock:
            ready = (
                state.pending > 0
                and not state.suspended
                and state.running == 0
                and state.waiting_seen == state.answered
            )
            if ready:
                state.suspended = True
        if ready:
            self.session.close()

    def _start(self, seq: Any, inner: InnerCall) -> None:
        inner = dataclasses.replace(inner, status="running")
        self._record(inner)  # written down before it runs: a crash now never repeats it
        with self.state.lock:
            self.state.running += 1
        self.workers.submit(self._execute, seq, inner)

    def _execute(self, seq: Any, inner: InnerCall) -> None:
        call = inner.effective
        try:
            span = (
                self.trace.inner_call(call) if self.trace is not None else contextlib.nullcontext()
            )
            with span as traced:
                result = self.host.run_call(call)
                if traced is not None:
                    traced.finished(call, result)
        except Exception as exc:  # the runner answers every call; this is its own failure
            result = ToolResult.failure(call.id, call.name, exc)
        self._record(inner.finished(result))
        self._send(seq, result)
        with self.state.lock:
            self.state.running -= 1
            self.state.idle.notify_all()
        self._maybe_suspend()

    def _record(self, inner: InnerCall) -> None:
        with self.state.lock:
            self.state.journal = self.state.journal.with_call(inner)
            journal = self.state.journal
        if self.host.on_progress is not None:
            self.host.on_progress(journal)

    # -- the answer ----------------------------------------------------------------------------

    def _answer(self, outcome: SandboxResult, duration: float) -> ToolResult:
        state = self.state
        journal = state.journal
        done = done_calls(journal)
        metadata: dict[str, Any] = {
            "duration": duration,
            "sandbox_duration": round(outcome.duration, 6),
            "isolation": list(outcome.isolation),
            _JOURNAL_KEY: journal,
            _REPLAYED_KEY: list(self.replayed),
        }
        if outcome.isolation_missing:
            metadata["isolation_missing"] = list(outcome.isolation_missing)
        if state.suspended and not state.broken:
            metadata[_WAITING_KEY] = True
            text = f"waiting for a decision on {len(journal.pending)} call(s)"
            return ToolResult(
                call_id=self.program.id,
                tool_name=self.program.name,
                output=text,
                metadata=metadata,
            )
        end = state.end
        parts = [p for p in (outcome.stdout.rstrip("\n"), _stderr(outcome)) if p]
        if "value" in end:
            parts.append("[return value]\n" + str(end["value"]))
        if "final" in end:
            metadata[_FINAL_KEY] = str(end["final"])
            parts.append("[final answer]\n" + str(end["final"]))
        parts.extend(_notes(end, journal))
        if outcome.truncated_chars:
            metadata["truncated_chars"] = outcome.truncated_chars
        metadata["calls"] = len(done)
        failure = _failure(self, outcome, end)
        if failure is not None:
            output = "\n".join([f"error: {failure}", *parts])
        else:
            output = "\n".join(parts) if parts else "(the program printed nothing)"
        return ToolResult(
            call_id=self.program.id,
            tool_name=self.program.name,
            output=output,
            is_error=failure is not None,
            metadata=metadata,
        )


def _stderr(outcome: SandboxResult) -> str:
    text = outcome.stderr.rstrip("\n")
    return f"[stderr]\n{text}" if text.strip() else ""


def _notes(end: dict[str, Any], journal: ProgramJournal) -> list[str]:
    """What the model should know beyond the output."""
    notes = []
    dropped = [c.call.name for c in journal.calls if c.status == "pending"]
    if dropped:
        notes.append(
            f"note: {len(dropped)} call(s) waiting for approval never ran: the program ended "
            "without waiting for them"
        )
    forgotten = end.get("unawaited") or []
    if forgotten:
        notes.append(
            f"note: {', '.join(map(str, forgotten))} was called without await and did not run; "
            "write `await name(...)`"
        )
    return notes


def _failure(run: ProgramRun, outcome: SandboxResult, end: dict[str, Any]) -> str | None:
    """Why the program failed (``None`` when it ran to its end)."""
    if run.state.broken:
        return f"the program was {run.state.broken}"
    if outcome.timed_out:
        return f"the program timed out after {run.settings.timeout:g} s and was stopped"
    if not end:
        reason = outcome.error.split(";")[0] if outcome.error else "the interpreter ended"
        return f"the program was stopped: {reason}"
    if end.get("error"):
        return f"the program raised {end['error']}"
    return None


def _value(result: ToolResult) -> Any:
    """What the program gets for a result: its JSON value, else its text."""
    structured = result.structured
    if structured is not None:
        try:
            return json.loads(json.dumps(structured, default=_plain))
        except (TypeError, ValueError):
            pass
    return result.output


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(type(value).__name__)
