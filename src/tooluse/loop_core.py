"""The tool loop as one state machine shared by the sync and the async driver.

:func:`loop_steps` is a generator that does no I/O: it yields *requests* (:class:`Generate`:
"ask the model", :class:`Execute`: "run these calls") and loop events, receives each request's
outcome through ``send``, and returns the :class:`RunResult`. ``tooluse.run`` drives it with
blocking calls, ``tooluse.arun`` with awaits, so both behave identically by construction.

Per round: generate, read the calls, refuse repeats, validate terminal calls, execute the rest
in parallel, append one result per call id, continue. The loop knows native calls only: a model
without function calling reaches it through a :class:`TextToolsBackend`, which writes the tools
into its prompt and reads its calls (and the calls it failed to write) back from its text.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, Union

from tooluse.events import ParseError, StreamEvent
from tooluse.execution.base import AbstractToolExecutor, CancellationToken
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage, new_call_id, render_output
from tooluse.providers.base import Backend, GenerationResult, SamplingParams, ToolChoice
from tooluse.providers.text_tools import TextToolsBackend
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "Execute",
    "Generate",
    "LoopEvent",
    "LoopSetup",
    "ModelTurnFinished",
    "RunFinished",
    "RunResult",
    "StopReason",
    "ToolExecutionFinished",
    "ToolExecutionStarted",
    "TrailEntry",
    "finished_event",
    "loop_steps",
]

logger = logging.getLogger("tooluse.loop")

ToolMode = Literal["native", "text", "none"]


class StopReason(str, Enum):
    """Why a run ended."""

    FINAL_TEXT = "final_text"  # the model answered without calling a tool
    TERMINAL_TOOL = "terminal_tool"  # a terminal tool was called with valid arguments
    MAX_TOOL_ITERS = "max_tool_iters"  # the model still wanted tools after the last allowed round
    REPEATED_CALLS = "repeated_calls"  # a round consisted only of refused identical repeats
    CANCELLED = "cancelled"  # the cancellation token fired
    ERROR = "error"  # the backend raised (only in the ``partial_result`` attached to the error)


@dataclass(frozen=True, kw_only=True)
class TrailEntry:
    """One executed (or refused) tool call of a run."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str
    is_error: bool
    duration: float
    iteration: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the shape stored in ``metadata["tool_trail"]``)."""
        return {
            "id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "output": self.output,
            "error": self.is_error,
            "duration": round(self.duration, 6),
            "iteration": self.iteration,
        }


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What a run produced.

    ``messages`` is the whole valid history (input plus everything the run added; every call id
    answered once), ``output`` the validated arguments of the terminal call when the run ended
    on one, ``trail`` every call with its output, ``usage`` summed over all model requests.
    """

    final_text: str
    messages: tuple[ChatMessage, ...]
    stop_reason: StopReason
    trail: tuple[TrailEntry, ...] = ()
    usage: Usage = field(default_factory=Usage)
    output: Any = None
    iterations: int = 0
    mode: ToolMode = "native"
    new_messages_start: int = 0

    @property
    def new_messages(self) -> tuple[ChatMessage, ...]:
        """The messages this run added."""
        return self.messages[self.new_messages_start :]

    @property
    def last_message(self) -> ChatMessage | None:
        return self.messages[-1] if self.messages else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the messages, trail, usage and stop reason (for the trace viewer)."""
        return {
            "final_text": self.final_text,
            "stop_reason": self.stop_reason.value,
            "messages": [_message_data(m) for m in self.messages],
            "trail": [t.to_dict() for t in self.trail],
            "usage": dataclasses.asdict(self.usage),
            "output": self.output,
            "iterations": self.iterations,
            "mode": self.mode,
            "new_messages_start": self.new_messages_start,
        }

    def save(self, path: Any) -> None:
        """Write :meth:`to_dict` as JSON to ``path`` (``tooluse report`` renders it)."""
        from pathlib import Path

        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=1, default=str)
        Path(path).write_text(text + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Any) -> RunResult:
        """A result written by :meth:`save`."""
        from pathlib import Path

        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(
            final_text=data.get("final_text", ""),
            messages=tuple(_message_from(m) for m in data.get("messages", ())),
            stop_reason=StopReason(data.get("stop_reason", "final_text")),
            trail=tuple(
                TrailEntry(
                    call_id=t["id"],
                    name=t["name"],
                    arguments=t.get("arguments") or {},
                    output=t.get("output", ""),
                    is_error=bool(t.get("error")),
                    duration=float(t.get("duration", 0.0)),
                    iteration=int(t.get("iteration", 0)),
                )
                for t in data.get("trail", ())
            ),
            usage=Usage(**data.get("usage", {})),
            output=data.get("output"),
            iterations=int(data.get("iterations", 0)),
            mode=data.get("mode", "native"),
            new_messages_start=int(data.get("new_messages_start", 0)),
        )


def _message_data(message: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.reasoning:
        out["reasoning"] = message.reasoning
    if message.name:
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "raw": c.raw_arguments}
            for c in message.tool_calls
        ]
    if message.result is not None:
        r = message.result
        out["result"] = {
            "call_id": r.call_id,
            "tool_name": r.tool_name,
            "output": r.output,
            "is_error": r.is_error,
        }
    return out


def _message_from(data: dict[str, Any]) -> ChatMessage:
    result = data.get("result")
    return ChatMessage(
        role=data["role"],
        content=data.get("content", ""),
        reasoning=data.get("reasoning", ""),
        name=data.get("name"),
        tool_calls=tuple(
            ToolCall(
                id=c["id"],
                name=c["name"],
                arguments=c.get("arguments") or {},
                raw_arguments=c.get("raw"),
            )
            for c in data.get("tool_calls", ())
        ),
        result=ToolResult(**result) if result else None,
    )


# -- requests to the driver --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Generate:
    """Ask the model for one turn; the driver sends back a :class:`GenerationResult`."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolDefinition, ...]
    tool_choice: ToolChoice
    params: SamplingParams | None
    stream: bool


@dataclass(frozen=True, kw_only=True)
class Execute:
    """Run these calls; the driver sends back one ``ToolResult`` per call, in order.

    The driver also yields one :class:`ToolExecutionFinished` per call (see
    :func:`finished_event`) as soon as that call ends, or when the whole round is done for an
    executor that runs rounds its own way.
    """

    calls: tuple[ToolCall, ...]
    iteration: int


# -- loop events for UIs -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ModelTurnFinished:
    """The model finished a turn (``message`` is what was appended to the history)."""

    message: ChatMessage
    usage: Usage
    iteration: int


@dataclass(frozen=True, kw_only=True)
class ToolExecutionStarted:
    call: ToolCall
    iteration: int


@dataclass(frozen=True, kw_only=True)
class ToolExecutionFinished:
    call: ToolCall
    result: ToolResult
    iteration: int
    duration: float


@dataclass(frozen=True, kw_only=True)
class RunFinished:
    result: RunResult


LoopEvent = Union[
    StreamEvent, ModelTurnFinished, ToolExecutionStarted, ToolExecutionFinished, RunFinished
]

Step = Union[Generate, Execute, LoopEvent]

#: Checks a terminal call's validated arguments; raise to send the error back to the model.
TerminalValidator = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True, kw_only=True)
class LoopSetup:
    """Everything a run needs besides the messages (built by ``tooluse.run``/``arun``)."""

    executor: AbstractToolExecutor
    mode: ToolMode
    tool_choice: ToolChoice = "auto"
    max_tool_iters: int = 10
    params: SamplingParams | None = None
    parser: Any = None
    stream: bool = False
    max_identical_calls: int = 3
    final_answer_on_limit: bool = False
    cancel: CancellationToken | None = None
    terminal_validators: Mapping[str, TerminalValidator] = field(default_factory=dict)
    close_executor: bool = True
    # tool retrieval: offer the model only the K tools most relevant to the request
    tools_top_k: int | None = None
    tool_scorer: Any = None

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        return self.executor.definitions

    def model(self, backend: Backend) -> Backend:
        """The backend the run talks to: ``backend``, or in text mode ``backend`` behind a
        :class:`TextToolsBackend` that writes the tools into the prompt with ``parser``."""
        if self.mode == "text":
            return TextToolsBackend(backend, self.parser)
        return backend

    def offered_tools(self, history: Sequence[ChatMessage]) -> tuple[ToolDefinition, ...]:
        """The tools shown to the model: all of them, or the ``tools_top_k`` best for the
        request (every tool still runs if the model calls it)."""
        if self.tools_top_k is None:
            return self.tools
        from tooluse.retrieval import latest_request_text, select_tools

        query = latest_request_text(history)
        return select_tools(self.tools, query, self.tools_top_k, scorer=self.tool_scorer)


def _call_key(call: ToolCall) -> str:
    try:
        args = json.dumps(call.arguments, sort_keys=True, default=str)
    except (TypeError, ValueError):
        args = repr(call.arguments)
    return f"{call.name}\x00{args}\x00{call.raw_arguments or ''}"


def _unique_ids(calls: Sequence[ToolCall], used: set[str]) -> tuple[ToolCall, ...]:
    """Give calls whose id is missing or already used a fresh one (the next request needs it)."""
    out = []
    for call in calls:
        if not call.id or call.id in used:
            call = dataclasses.replace(call, id=new_call_id(), synthetic_id=True)
        used.add(call.id)
        out.append(call)
    return tuple(out)


def _parse_errors_message(errors: Sequence[ParseError]) -> ChatMessage:
    lines = "\n".join(f"- {e.message}" for e in errors)
    return ChatMessage.user(
        "error: your tool call could not be read:\n"
        f"{lines}\nWrite the call again in the required format, or answer without tools."
    )


def _terminal_outcome(setup: LoopSetup, call: ToolCall) -> tuple[ToolResult, dict[str, Any] | None]:
    """Validate a terminal call: its result message and, when valid, its arguments."""
    prepared = setup.executor.prepare(call)
    if isinstance(prepared, ToolResult):
        return prepared, None
    arguments = prepared.arguments
    validator = setup.terminal_validators.get(call.name)
    if validator is not None:
        try:
            validator(arguments)
        except Exception as exc:  # the model gets the problems and another chance
            message = getattr(exc, "model_message", None) or str(exc)
            return ToolResult.failure(call.id, call.name, f"invalid arguments: {message}"), None
    return ToolResult.success(call.id, call.name, render_output(arguments)), arguments


@dataclass
class _Round:
    """One round of calls: the results known before execution (terminal, refused) and the
    calls left to run."""

    results: dict[str, ToolResult] = field(default_factory=dict)
    to_run: list[ToolCall] = field(default_factory=list)
    terminal_output: dict[str, Any] | None = None
    refused: int = 0


class _Run:
    """The state of one run, and the stages of a round that need no I/O."""

    def __init__(self, setup: LoopSetup, history: list[ChatMessage]) -> None:
        self.setup = setup
        self.history = history
        self.start = len(history)
        self.by_name = {d.name: d for d in setup.tools}
        self.offered = setup.offered_tools(history)
        self.used_ids = {c.id for m in history for c in m.tool_calls}
        self.seen: Counter[str] = Counter()
        self.trail: list[TrailEntry] = []
        self.usage = Usage()
        self.choice = setup.tool_choice
        self.iteration = 0

    @property
    def cancelled(self) -> bool:
        return self.setup.cancel is not None and self.setup.cancel.cancelled

    def finish(self, reason: StopReason, output: Any = None) -> RunResult:
        final = ""
        for message in reversed(self.history[self.start :]):
            if message.role == "assistant":
                final = message.content
                break
        return RunResult(
            final_text=final,
            messages=tuple(self.history),
            stop_reason=reason,
            trail=tuple(self.trail),
            usage=self.usage,
            output=output,
            iterations=self.iteration,
            mode=self.setup.mode,
            new_messages_start=self.start,
        )

    def request(self, at_limit: bool) -> Generate:
        """This turn's request: the offered tools, or none once the limit asks for an answer."""
        setup = self.setup
        choice: ToolChoice = "none" if at_limit and setup.final_answer_on_limit else self.choice
        offered = self.offered if setup.mode != "none" else ()
        return Generate(
            messages=tuple(self.history),
            tools=offered,
            tool_choice=choice if offered else "auto",
            params=setup.params,
            stream=setup.stream,
        )

    def take_turn(self, generated: GenerationResult) -> ChatMessage:
        """Append the model's turn (calls with unique ids) to the history."""
        self.usage = self.usage + generated.usage
        message = generated.to_message()
        if self.setup.mode == "none":
            # Tools were not offered: calls (if a backend sent any anyway) are not ours to run.
            message = dataclasses.replace(message, tool_calls=())
        fixed = _unique_ids(message.tool_calls, self.used_ids)
        if fixed != message.tool_calls:
            message = dataclasses.replace(message, tool_calls=fixed, parts=())
        self.history.append(message)
        return message

    def answer(self, call: ToolCall, result: ToolResult) -> None:
        self.history.append(ChatMessage.tool_result(result))
        self.trail.append(_trail_entry(call, result, self.iteration))

    def stop_at_limit(self, calls: Sequence[ToolCall]) -> RunResult:
        """No more tool rounds: every call is answered ``not executed``, except that a valid
        terminal call still ends the run as asked."""
        note = (
            f"not executed: the limit of {self.setup.max_tool_iters} tool rounds was reached; "
            "answer with what you have"
        )
        accepted: dict[str, Any] | None = None
        for call in calls:
            definition = self.by_name.get(call.name)
            if accepted is None and definition is not None and definition.is_terminal:
                result, accepted = _terminal_outcome(self.setup, call)
            else:
                result = ToolResult.failure(call.id, call.name, note)
            self.answer(call, result)
        if accepted is not None:
            return self.finish(StopReason.TERMINAL_TOOL, accepted)
        return self.finish(StopReason.MAX_TOOL_ITERS)

    def plan_round(self, calls: Sequence[ToolCall]) -> _Round:
        """Settle terminal calls and refused repeats; the rest is left to run."""
        plan = _Round()
        for call in calls:
            definition = self.by_name.get(call.name)
            if definition is not None and definition.is_terminal:
                if plan.terminal_output is not None:
                    plan.results[call.id] = ToolResult.failure(
                        call.id, call.name, "ignored: another final call was accepted first"
                    )
                else:
                    plan.results[call.id], plan.terminal_output = _terminal_outcome(
                        self.setup, call
                    )
                continue
            key = _call_key(call)
            if self.seen[key] >= self.setup.max_identical_calls:
                plan.refused += 1
                plan.results[call.id] = ToolResult.failure(
                    call.id,
                    call.name,
                    f"not executed: this exact call was already made {self.seen[key]} times; "
                    "use the earlier results, change the arguments, or answer",
                )
                continue
            self.seen[key] += 1
            plan.to_run.append(call)
        return plan

    def close_round(self, calls: Sequence[ToolCall], plan: _Round) -> RunResult | None:
        """Answer every call of the round in order; the result when the run ends here."""
        for call in calls:
            self.answer(call, plan.results[call.id])
        if plan.terminal_output is not None:
            return self.finish(StopReason.TERMINAL_TOOL, plan.terminal_output)
        if plan.refused == len(calls):
            return self.finish(StopReason.REPEATED_CALLS)
        if self.cancelled:
            return self.finish(StopReason.CANCELLED)
        if self.choice not in ("auto", "none"):
            forced = self.by_name.get(self.choice)
            # A forced call has been made; forcing again would loop forever, except for a
            # terminal tool whose arguments were rejected (the model must try again).
            if forced is None or not forced.is_terminal:
                self.choice = "auto"
        return None


def loop_steps(setup: LoopSetup, history: list[ChatMessage]) -> Generator[Step, Any, RunResult]:
    """The tool loop; ``history`` (already valid) is extended in place with the new turns."""
    run = _Run(setup, history)
    while True:
        if run.cancelled:
            return run.finish(StopReason.CANCELLED)
        at_limit = run.iteration >= setup.max_tool_iters
        try:
            generated: GenerationResult = yield run.request(at_limit)
        except Exception as exc:
            # The driver throws the backend's error in here so that the caller keeps what the
            # run did so far (tools may have had effects): ``exc.partial_result``.
            _attach_partial_result(exc, run.finish(StopReason.ERROR))
            raise
        message = run.take_turn(generated)
        yield ModelTurnFinished(message=message, usage=generated.usage, iteration=run.iteration)
        calls = message.tool_calls
        if not calls:
            if generated.parse_errors and not at_limit:
                history.append(_parse_errors_message(generated.parse_errors))
                run.iteration += 1
                continue
            return run.finish(StopReason.FINAL_TEXT)
        if at_limit:
            return run.stop_at_limit(calls)
        run.iteration += 1
        plan = run.plan_round(calls)
        if plan.to_run:
            for call in plan.to_run:
                yield ToolExecutionStarted(call=call, iteration=run.iteration)
            executed: Sequence[ToolResult] = yield Execute(
                calls=tuple(plan.to_run), iteration=run.iteration
            )
            for call, result in zip(plan.to_run, executed, strict=True):
                plan.results[call.id] = result
        ended = run.close_round(calls, plan)
        if ended is not None:
            return ended


def finished_event(step: Execute, index: int, result: ToolResult) -> ToolExecutionFinished:
    """The event a driver yields when call ``index`` of ``step`` has its result."""
    return ToolExecutionFinished(
        call=step.calls[index],
        result=result,
        iteration=step.iteration,
        duration=float(result.metadata.get("duration", 0.0)),
    )


def _attach_partial_result(exc: BaseException, result: RunResult) -> None:
    try:
        exc.partial_result = result  # type: ignore[attr-defined]
    except AttributeError:  # exceptions with __slots__ cannot carry it
        pass


def _trail_entry(call: ToolCall, result: ToolResult, iteration: int) -> TrailEntry:
    return TrailEntry(
        call_id=call.id,
        name=call.name,
        arguments=dict(call.arguments)
        if call.arguments or call.raw_arguments is None
        else {"_raw": call.raw_arguments},
        output=result.output,
        is_error=result.is_error,
        duration=float(result.metadata.get("duration", 0.0)),
        iteration=iteration,
    )
