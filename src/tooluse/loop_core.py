"""The tool loop as one state machine shared by the sync and the async driver.

:func:`loop_steps` is a generator that does no I/O: it yields *requests* (:class:`Generate`:
"ask the model", :class:`Execute`: "run these calls") and loop events, receives each request's
outcome through ``send``, and returns the :class:`RunResult`. ``tooluse.run`` drives it with
blocking calls, ``tooluse.arun`` with awaits, so both behave identically by construction.

Per round: generate, read the calls (natively or with a text parser), refuse repeats, validate
terminal calls, execute the rest in parallel, append one result per call id, continue.
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
from tooluse.execution.local import CancellationToken
from tooluse.execution.parallel import AsyncToolExecutor
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage, new_call_id, render_output
from tooluse.providers.base import GenerationResult, SamplingParams, ToolChoice
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

    executor: AsyncToolExecutor
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


def _tool_results_text(parser: Any, results: Sequence[ToolResult]) -> str:
    """Tool results as the text a model without native tools reads (the parser's own wording
    when it has ``format_tool_results``, else ``<tool_response>`` blocks as Hermes/Qwen use)."""
    render = getattr(parser, "format_tool_results", None)
    if callable(render):
        return str(render(list(results)))
    return "\n".join(f"<tool_response>\n{r.output}\n</tool_response>" for r in results)


def _calls_text(message: ChatMessage) -> str:
    """An assistant turn with calls but no recorded text (history from elsewhere), as text."""
    blocks = [
        "<tool_call>\n"
        + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
        + "\n</tool_call>"
        for c in message.tool_calls
    ]
    return "\n".join([message.content, *blocks]).strip()


def text_mode_view(
    history: Sequence[ChatMessage], tools_text: str, choice: ToolChoice, parser: Any
) -> tuple[ChatMessage, ...]:
    """The history as a model without native tools sees it: tools in the system prompt, its own
    turns as the text it wrote, and tool results as a user turn. Plain roles only, so the view
    is valid for any backend (no call ids to match)."""
    if choice == "required":
        tools_text += "\n\nYou must call at least one of these tools now."
    elif choice not in ("auto", "none"):
        tools_text += f"\n\nYou must call the tool {choice!r} now."
    out: list[ChatMessage] = []
    pending: list[ToolResult] = []
    for message in history:
        if message.role == "tool" and message.result is not None:
            pending.append(message.result)
            continue
        if pending:
            out.append(ChatMessage.user(_tool_results_text(parser, pending)))
            pending = []
        if message.role == "assistant" and message.tool_calls:
            text = message.metadata.get("raw_text")
            message = ChatMessage(
                role="assistant", content=text if text is not None else _calls_text(message)
            )
        out.append(message)
    if pending:
        out.append(ChatMessage.user(_tool_results_text(parser, pending)))
    if out and out[0].role == "system":
        out[0] = dataclasses.replace(out[0], content=f"{out[0].content}\n\n{tools_text}".strip())
    else:
        out.insert(0, ChatMessage.system(tools_text))
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


def loop_steps(setup: LoopSetup, history: list[ChatMessage]) -> Generator[Step, Any, RunResult]:
    """The tool loop; ``history`` (already valid) is extended in place with the new turns."""
    start = len(history)
    by_name = {d.name: d for d in setup.tools}
    offered = setup.offered_tools(history)
    tools_text = setup.parser.format_tools(offered) if setup.mode == "text" else ""
    used_ids = {c.id for m in history for c in m.tool_calls}
    seen: Counter[str] = Counter()
    trail: list[TrailEntry] = []
    usage = Usage()
    choice = setup.tool_choice
    iteration = 0

    def finish(reason: StopReason, output: Any = None) -> RunResult:
        final = ""
        for message in reversed(history[start:]):
            if message.role == "assistant":
                final = message.content
                break
        return RunResult(
            final_text=final,
            messages=tuple(history),
            stop_reason=reason,
            trail=tuple(trail),
            usage=usage,
            output=output,
            iterations=iteration,
            mode=setup.mode,
            new_messages_start=start,
        )

    while True:
        if setup.cancel is not None and setup.cancel.cancelled:
            return finish(StopReason.CANCELLED)
        at_limit = iteration >= setup.max_tool_iters
        turn_choice: ToolChoice = "none" if at_limit and setup.final_answer_on_limit else choice
        if setup.mode == "native":
            request = Generate(
                messages=tuple(history),
                tools=offered,
                tool_choice=turn_choice,
                params=setup.params,
                stream=setup.stream,
            )
        else:
            view = tuple(history)
            if setup.mode == "text" and turn_choice != "none":
                view = text_mode_view(history, tools_text, turn_choice, setup.parser)
            request = Generate(
                messages=view, tools=(), tool_choice="auto", params=setup.params, stream=False
            )
        try:
            generated: GenerationResult = yield request
        except Exception as exc:
            # The driver throws the backend's error in here so that the caller keeps what the
            # run did so far (tools may have had effects): ``exc.partial_result``.
            _attach_partial_result(exc, finish(StopReason.ERROR))
            raise
        if generated.usage is not None:
            usage = usage + generated.usage
        parse_errors: tuple[ParseError, ...] = ()
        if setup.mode == "text":
            parsed = setup.parser.parse(generated.text, setup.tools)
            parse_errors = tuple(parsed.errors)
            message = ChatMessage(
                role="assistant",
                content=parsed.text.strip() if parsed.tool_calls else parsed.text,
                tool_calls=_unique_ids(parsed.tool_calls, used_ids),
                reasoning=generated.reasoning or parsed.reasoning,
                metadata={"raw_text": generated.text},
            )
        elif setup.mode == "none":
            # Tools were not offered: calls (if a backend sent any anyway) are not ours to run.
            message = dataclasses.replace(generated.to_message(), tool_calls=())
        else:
            message = generated.to_message()
            fixed = _unique_ids(message.tool_calls, used_ids)
            if fixed != message.tool_calls:
                message = dataclasses.replace(message, tool_calls=fixed, parts=())
        history.append(message)
        yield ModelTurnFinished(message=message, usage=generated.usage, iteration=iteration)
        calls = message.tool_calls

        if not calls:
            if parse_errors and not at_limit:
                history.append(_parse_errors_message(parse_errors))
                iteration += 1
                continue
            return finish(StopReason.FINAL_TEXT)

        if at_limit:
            # No more tool rounds; a valid terminal call still ends the run as asked.
            note = (
                f"not executed: the limit of {setup.max_tool_iters} tool rounds was reached; "
                "answer with what you have"
            )
            accepted: dict[str, Any] | None = None
            for call in calls:
                definition = by_name.get(call.name)
                if accepted is None and definition is not None and definition.is_terminal:
                    result, accepted = _terminal_outcome(setup, call)
                else:
                    result = ToolResult.failure(call.id, call.name, note)
                history.append(ChatMessage.tool_result(result))
                trail.append(_trail_entry(call, result, iteration))
            if accepted is not None:
                return finish(StopReason.TERMINAL_TOOL, accepted)
            return finish(StopReason.MAX_TOOL_ITERS)

        iteration += 1
        results: dict[str, ToolResult] = {}
        terminal_output: dict[str, Any] | None = None
        refused = 0
        to_run: list[ToolCall] = []
        for call in calls:
            definition = by_name.get(call.name)
            if definition is not None and definition.is_terminal:
                if terminal_output is not None:
                    results[call.id] = ToolResult.failure(
                        call.id, call.name, "ignored: another final call was accepted first"
                    )
                    continue
                results[call.id], terminal_output = _terminal_outcome(setup, call)
                continue
            key = _call_key(call)
            if seen[key] >= setup.max_identical_calls:
                refused += 1
                results[call.id] = ToolResult.failure(
                    call.id,
                    call.name,
                    f"not executed: this exact call was already made {seen[key]} times; "
                    "use the earlier results, change the arguments, or answer",
                )
                continue
            seen[key] += 1
            to_run.append(call)

        if to_run:
            for call in to_run:
                yield ToolExecutionStarted(call=call, iteration=iteration)
            executed: Sequence[ToolResult] = yield Execute(calls=tuple(to_run), iteration=iteration)
            for call, result in zip(to_run, executed, strict=True):
                results[call.id] = result

        for call in calls:
            result = results[call.id]
            history.append(ChatMessage.tool_result(result))
            trail.append(_trail_entry(call, result, iteration))

        if terminal_output is not None:
            return finish(StopReason.TERMINAL_TOOL, terminal_output)
        if refused == len(calls):
            return finish(StopReason.REPEATED_CALLS)
        if setup.cancel is not None and setup.cancel.cancelled:
            return finish(StopReason.CANCELLED)
        if choice != "auto" and choice != "none":
            forced = by_name.get(choice)
            # A forced call has been made; forcing again would loop forever, except for a
            # terminal tool whose arguments were rejected (the model must try again).
            if forced is None or not forced.is_terminal:
                choice = "auto"


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
