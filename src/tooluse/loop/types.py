"""The types of the tool loop: requests the core makes of its driver, the events it yields,
and the result of a run (:class:`RunResult`, saved and loaded as JSON for the trace viewer)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, Union

from tooluse.events import StreamEvent
from tooluse.loop.run_state import RunState
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage
from tooluse.providers.base import SamplingParams, ToolChoice
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ApprovalRequested",
    "Checkpoint",
    "Execute",
    "Generate",
    "LoopEvent",
    "ModelTurnFinished",
    "ProgramFinished",
    "ProgramStarted",
    "RunFinished",
    "RunResult",
    "Step",
    "StopReason",
    "TerminalValidator",
    "ToolExecutionFinished",
    "ToolExecutionStarted",
    "ToolMode",
    "TrailEntry",
]

ToolMode = Literal["native", "text", "none"]


class StopReason(str, Enum):
    """Why a run ended."""

    FINAL_TEXT = "final_text"  # the model answered without calling a tool
    TERMINAL_TOOL = "terminal_tool"  # a terminal tool was called with valid arguments
    MAX_TOOL_ITERS = "max_tool_iters"  # the model still wanted tools after the last allowed round
    REPEATED_CALLS = "repeated_calls"  # a round consisted only of refused identical repeats
    CANCELLED = "cancelled"  # the cancellation token fired
    APPROVAL_REQUIRED = "approval_required"  # calls wait for a decision (``result.state``)
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
    #: The id of the program call that made this call (code mode); ``""`` for a direct call.
    caller: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrailEntry:
        """The entry :meth:`to_dict` wrote."""
        return cls(
            call_id=data["id"],
            name=data["name"],
            arguments=data.get("arguments") or {},
            output=data.get("output", ""),
            is_error=bool(data.get("error")),
            duration=float(data.get("duration", 0.0)),
            iteration=int(data.get("iteration", 0)),
            caller=str(data.get("caller") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the shape stored in ``metadata["tool_trail"]``)."""
        out = {
            "id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "output": self.output,
            "error": self.is_error,
            "duration": round(self.duration, 6),
            "iteration": self.iteration,
        }
        if self.caller:
            out["caller"] = self.caller
        return out


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
    #: Where the run stopped, to continue it with ``tooluse.resume`` (set when it paused for
    #: approval; the finished state otherwise).
    state: RunState | None = field(default=None, compare=False, repr=False)

    @property
    def pending(self) -> tuple[ToolCall, ...]:
        """The calls waiting for a decision (``StopReason.APPROVAL_REQUIRED``)."""
        return self.state.pending if self.state is not None else ()

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
            trail=tuple(TrailEntry.from_dict(t) for t in data.get("trail", ())),
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


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """Write this state (``run(..., checkpoint=PATH)``); the driver sends nothing back. While
    the listed ``round.in_flight`` calls run, the driver rewrites it after each result."""

    state: RunState


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
class ProgramStarted:
    """A program the model wrote starts: run by tooluse (``runner="tooluse"``; ``program_id``
    is the program call's id) or by the provider (``runner`` names it). The calls it makes are
    reported as ``ToolExecutionStarted`` / ``ToolExecutionFinished`` whose ``call.caller`` is
    ``program_id``."""

    program_id: str
    code: str
    runner: str
    iteration: int


@dataclass(frozen=True, kw_only=True)
class ProgramFinished:
    """A program ended with ``output`` (what it printed and returned, or its error)."""

    program_id: str
    output: str
    is_error: bool
    runner: str
    iteration: int


@dataclass(frozen=True, kw_only=True)
class ApprovalRequested:
    """The run stops: ``calls`` wait for a decision; continue with ``tooluse.resume``."""

    calls: tuple[ToolCall, ...]
    state: RunState


@dataclass(frozen=True, kw_only=True)
class RunFinished:
    result: RunResult


LoopEvent = Union[
    StreamEvent,
    ModelTurnFinished,
    ToolExecutionStarted,
    ToolExecutionFinished,
    ProgramStarted,
    ProgramFinished,
    ApprovalRequested,
    RunFinished,
]

Step = Union[Generate, Execute, Checkpoint, LoopEvent]

#: Checks a terminal call's validated arguments; raise to send the error back to the model.
TerminalValidator = Callable[[dict[str, Any]], Any]
