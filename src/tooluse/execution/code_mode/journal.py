"""What a program did, kept so that it can run again without repeating a call: the journal.

A program that stops (it waits for a person's decision, or the process running it died) is
continued by running it again from its start: the calls in its journal are answered from there
instead of running again (deterministic replay). A call of the new run matches a journal call
by name and arguments, in order among equal calls, so calls awaited together may come back in
any order. A journal call that was still running when the process died runs again only if its
tool is idempotent (else the program gets an error saying it may or may not have happened); a
call that waited for a decision gets it (run, run with edited arguments, or refused).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from tooluse.messages import ToolCall, ToolResult, call_key

__all__ = [
    "INTERRUPTED",
    "InnerCall",
    "ProgramJournal",
    "Replay",
    "Resolution",
]

#: The answer to a call a crash interrupted (its tool not idempotent), as for direct calls.
INTERRUPTED = (
    "interrupted: the run stopped while this call was running, so it may or may not have "
    "taken effect; it was not run again"
)

CallStatus = Literal["done", "running", "pending", "approved"]

#: A decision on a waiting call: the call to run (approved, or edited) or its answer (denied).
Resolution = Union[ToolCall, ToolResult]


@dataclass(frozen=True, kw_only=True)
class InnerCall:
    """One call a program made, as the program asked for it (``call``; a new run of the
    program matches it by name and arguments): ``done`` (with its ``result``), ``running``
    (started, no result yet), ``pending`` (waiting for a decision) or ``approved`` (decided,
    not run yet). ``edited`` holds the arguments a person gave it instead of the program's."""

    call: ToolCall
    status: CallStatus = "done"
    result: ToolResult | None = None
    edited: dict[str, Any] | None = None

    @property
    def effective(self) -> ToolCall:
        """The call as it runs (with the edited arguments, if any)."""
        if self.edited is None:
            return self.call
        return dataclasses.replace(self.call, arguments=dict(self.edited))

    def finished(self, result: ToolResult) -> InnerCall:
        return dataclasses.replace(self, status="done", result=result)

    def resolved(self, resolution: Resolution) -> InnerCall:
        """This waiting call with a decision: refused (done, with its answer) or approved."""
        if isinstance(resolution, ToolResult):
            return self.finished(resolution)
        edited = None if resolution.arguments == self.call.arguments else resolution.arguments
        return dataclasses.replace(self, status="approved", edited=edited)


@dataclass(frozen=True, kw_only=True)
class ProgramJournal:
    """The calls of one program (``program_id``: the model's call of the program tool), in the
    order they were made."""

    program_id: str
    calls: tuple[InnerCall, ...] = ()

    @property
    def pending(self) -> tuple[ToolCall, ...]:
        """The calls waiting for a decision."""
        return tuple(c.call for c in self.calls if c.status == "pending")

    def with_call(self, inner: InnerCall) -> ProgramJournal:
        """This journal with ``inner`` added, or put in place of the entry with its id."""
        calls = list(self.calls)
        for index, known in enumerate(calls):
            if known.call.id == inner.call.id:
                calls[index] = inner
                break
        else:
            calls.append(inner)
        return dataclasses.replace(self, calls=tuple(calls))

    def resolved(self, resolutions: Mapping[str, Resolution]) -> ProgramJournal:
        """This journal with decisions on its waiting calls (by call id)."""
        calls = tuple(
            c.resolved(resolutions[c.call.id])
            if c.status == "pending" and c.call.id in resolutions
            else c
            for c in self.calls
        )
        return dataclasses.replace(self, calls=calls)


def _key(call: ToolCall) -> str:
    return call_key(dataclasses.replace(call, raw_arguments=None))


class Replay:
    """A journal being replayed by a new run of its program (thread-safe): :meth:`claim`
    hands out each entry once, matched by name and arguments in order among equal calls."""

    def __init__(self, journal: ProgramJournal) -> None:
        self._seen: dict[str, int] = {}
        self._by_key: dict[str, list[InnerCall]] = {}
        self._lock = threading.Lock()
        for inner in journal.calls:
            self._by_key.setdefault(_key(inner.call), []).append(inner)
        numbers = [_number(c.call.id) for c in journal.calls]
        self.next_number = max(numbers, default=0) + 1

    def claim(self, call: ToolCall) -> InnerCall | None:
        """The journal entry a new call of the program stands for, if any."""
        key = _key(call)
        with self._lock:
            number = self._seen.get(key, 0)
            self._seen[key] = number + 1
            known = self._by_key.get(key, [])
            return known[number] if number < len(known) else None


def _number(call_id: str) -> int:
    tail = call_id.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0
