"""A run's state between two steps: what a paused or crashed run needs to go on.

A run stops with ``StopReason.APPROVAL_REQUIRED`` and ``result.state`` when a call needs a
person's decision; ``run(..., checkpoint=PATH)`` writes the state after every model turn and
every tool result. ``tooluse.resume(backend, state, tools=..., decisions=...)`` continues
either: each call id is answered once, completed calls never run again, and a call that was
running when the process died runs again only if its tool is ``idempotent``.

The state is versioned JSON (:meth:`RunState.to_json`); :meth:`RunState.save` writes it
atomically (a temporary file, fsync, rename), so a crash leaves the previous state or the new
one, never half of one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from tooluse.errors import ToolUseError
from tooluse.execution.code_mode.journal import InnerCall, ProgramJournal
from tooluse.loop.message_data import (
    call_from_data,
    call_to_data,
    message_from_data,
    message_to_data,
    result_from_data,
    result_to_data,
)
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage
from tooluse.version import __version__

__all__ = [
    "STATE_FORMAT",
    "Approve",
    "Decision",
    "Deny",
    "Edit",
    "RoundState",
    "RunState",
    "RunStateError",
]

#: The layout of the JSON :meth:`RunState.to_json` writes; a state of another layout is refused.
STATE_FORMAT = 1


class RunStateError(ToolUseError):
    """A run state that cannot be used: corrupt, truncated, from another tooluse version, or
    not matching the tools and decisions given to resume it."""


@dataclass(frozen=True, kw_only=True)
class Approve:
    """Run the call as the model wrote it."""


@dataclass(frozen=True, kw_only=True)
class Deny:
    """Do not run the call; the model reads ``reason``."""

    reason: str = "the user denied this call"


@dataclass(frozen=True, kw_only=True)
class Edit:
    """Run the call with these arguments instead (validated like the model's)."""

    arguments: dict[str, Any]


Decision = Union[Approve, Deny, Edit]


@dataclass(frozen=True, kw_only=True)
class RoundState:
    """The tool round a run stopped in: every call of the model's turn, the answers known so
    far, the calls waiting for a decision and those that were running, and the journals of
    its programs (code mode) that were running or wait for decisions on their calls."""

    calls: tuple[ToolCall, ...]
    results: Mapping[str, ToolResult] = field(default_factory=dict)
    pending: tuple[str, ...] = ()
    in_flight: tuple[str, ...] = ()
    terminal_output: dict[str, Any] | None = None
    refused: int = 0
    programs: Mapping[str, ProgramJournal] = field(default_factory=dict)

    def with_waiting(self, journal: ProgramJournal) -> RoundState:
        """This round with a program that waits for decisions on its calls (no longer
        running)."""
        program = journal.program_id
        return dataclasses.replace(
            self,
            programs={**self.programs, program: journal},
            pending=(*(i for i in self.pending if i != program), program),
            in_flight=tuple(i for i in self.in_flight if i != program),
        )

    def with_program(self, journal: ProgramJournal) -> RoundState:
        """This round with a program's journal as it stands now."""
        return dataclasses.replace(self, programs={**self.programs, journal.program_id: journal})

    def with_result(self, result: ToolResult) -> RoundState:
        """This round with one more call answered (no longer running)."""
        return dataclasses.replace(
            self,
            results={**self.results, result.call_id: result},
            in_flight=tuple(i for i in self.in_flight if i != result.call_id),
        )


@dataclass(frozen=True, kw_only=True)
class RunState:
    """Everything a run needs to continue: the history, the loop's counters, the usage so far
    and the round it stopped in (``None`` between rounds)."""

    messages: tuple[ChatMessage, ...]
    tool_names: tuple[str, ...] = ()
    iteration: int = 0
    new_messages_start: int = 0
    tool_choice: str = "auto"
    seen: Mapping[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    trail: tuple[dict[str, Any], ...] = ()
    round: RoundState | None = None
    #: The tools a ``ToolSearch`` found so far (offered from the next request on).
    discovered: tuple[str, ...] = ()
    #: Rounds made only of calls a provider's program asked for (not counted as tool rounds).
    relayed_rounds: int = 0
    #: Set once the run has ended (the value of its ``StopReason``); resuming it changes nothing.
    stop_reason: str | None = None
    output: Any = None
    version: str = __version__

    @property
    def pending(self) -> tuple[ToolCall, ...]:
        """The calls waiting for a person's decision: the model's own, and the calls its
        programs made (``call.caller`` names the program; :meth:`program_of` gives its code)."""
        if self.round is None:
            return ()
        waiting = set(self.round.pending)
        out: list[ToolCall] = []
        for call in self.round.calls:
            if call.id not in waiting:
                continue
            journal = self.round.programs.get(call.id)
            out.extend(journal.pending if journal is not None else (call,))
        return tuple(out)

    def program_of(self, call: ToolCall) -> str | None:
        """The source of the program that made ``call`` (``None`` for a direct call)."""
        if call.caller is None or self.round is None:
            return None
        for made in self.round.calls:
            if made.id == call.caller:
                code = made.arguments.get("code")
                return code if isinstance(code, str) else None
        return None

    # -- JSON -----------------------------------------------------------------------------------

    def to_json(self) -> str:
        """The state as versioned JSON text."""
        return json.dumps(_state_to_data(self), ensure_ascii=False, default=str)

    @classmethod
    def from_json(cls, text: str) -> RunState:
        """The state :meth:`to_json` wrote; anything else raises :class:`RunStateError`."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RunStateError(f"not a tooluse run state (corrupt or cut short): {exc}") from None
        if not isinstance(data, dict) or data.get("kind") != "tooluse.run_state":
            raise RunStateError("not a tooluse run state (no 'kind': 'tooluse.run_state')")
        if data.get("format") != STATE_FORMAT or data.get("version") != __version__:
            raise RunStateError(
                f"this run state was written by tooluse {data.get('version')} (state format "
                f"{data.get('format')}); this is tooluse {__version__} (state format "
                f"{STATE_FORMAT}): resume it with the version that wrote it"
            )
        try:
            return _state_from_data(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise RunStateError(f"a malformed run state: {type(exc).__name__}: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state to ``path`` atomically (temporary file, fsync, rename)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(self.to_json())
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _fsync_directory(target.parent)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunState:
        """The state saved at ``path``."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise RunStateError(f"cannot read the run state {str(path)!r}: {exc}") from None
        return cls.from_json(text)


def _fsync_directory(directory: Path) -> None:
    # The rename itself is durable only once the directory entry is on disk.
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _round_to_data(state: RoundState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {
        "calls": [call_to_data(c) for c in state.calls],
        "results": {key: result_to_data(r) for key, r in state.results.items()},
        "pending": list(state.pending),
        "in_flight": list(state.in_flight),
        "terminal_output": state.terminal_output,
        "refused": state.refused,
        "programs": {key: _journal_to_data(j) for key, j in state.programs.items()},
    }


def _journal_to_data(journal: ProgramJournal) -> list[dict[str, Any]]:
    return [
        {
            "call": call_to_data(inner.call),
            "status": inner.status,
            "result": None if inner.result is None else result_to_data(inner.result),
            "edited": inner.edited,
        }
        for inner in journal.calls
    ]


def _journal_from_data(program_id: str, data: Any) -> ProgramJournal:
    calls = tuple(
        InnerCall(
            call=call_from_data(item["call"]),
            status=item.get("status", "done"),
            result=None if item.get("result") is None else result_from_data(item["result"]),
            edited=item.get("edited"),
        )
        for item in data
    )
    return ProgramJournal(program_id=program_id, calls=calls)


def _round_from_data(data: Mapping[str, Any] | None) -> RoundState | None:
    if data is None:
        return None
    return RoundState(
        calls=tuple(call_from_data(c) for c in data["calls"]),
        results={key: result_from_data(r) for key, r in data["results"].items()},
        pending=tuple(data.get("pending") or ()),
        in_flight=tuple(data.get("in_flight") or ()),
        terminal_output=data.get("terminal_output"),
        refused=int(data.get("refused", 0)),
        programs={
            key: _journal_from_data(key, value)
            for key, value in (data.get("programs") or {}).items()
        },
    )


def _state_to_data(state: RunState) -> dict[str, Any]:
    return {
        "kind": "tooluse.run_state",
        "format": STATE_FORMAT,
        "version": state.version,
        "messages": [message_to_data(m) for m in state.messages],
        "tool_names": list(state.tool_names),
        "iteration": state.iteration,
        "new_messages_start": state.new_messages_start,
        "tool_choice": state.tool_choice,
        "seen": dict(state.seen),
        "usage": dataclasses.asdict(state.usage),
        "trail": list(state.trail),
        "round": _round_to_data(state.round),
        "discovered": list(state.discovered),
        "relayed_rounds": state.relayed_rounds,
        "stop_reason": state.stop_reason,
        "output": state.output,
    }


def _state_from_data(data: Mapping[str, Any]) -> RunState:
    return RunState(
        messages=tuple(message_from_data(m) for m in data["messages"]),
        tool_names=tuple(data.get("tool_names") or ()),
        iteration=int(data["iteration"]),
        new_messages_start=int(data.get("new_messages_start", 0)),
        tool_choice=str(data.get("tool_choice", "auto")),
        seen={str(k): int(v) for k, v in (data.get("seen") or {}).items()},
        usage=Usage(**data.get("usage", {})),
        trail=tuple(dict(t) for t in data.get("trail") or ()),
        round=_round_from_data(data.get("round")),
        discovered=tuple(data.get("discovered") or ()),
        relayed_rounds=int(data.get("relayed_rounds", 0)),
        stop_reason=data.get("stop_reason"),
        output=data.get("output"),
        version=str(data["version"]),
    )
