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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Union

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

CallStatus = Literal["done", "running", "pending"]

#: A decision on a waiting call: the call to run (approved, or edited) or its answer (denied).
Resolution = Union[ToolCall, ToolResult]


@dataclass(frozen=True, kw_only=True)
class InnerCall:
    """One call a program made: ``done`` (with its result), ``running`` (started, no result
    yet) or ``pending`` (waiting for a decision)."""

    call: ToolCall
    status: CallStatus = "done"
    result: ToolResult | None = None

    def finished(self, result: ToolResult) -> InnerCall:
        return dataclasses.replace(self, status="done", result=result)


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


def _key(call: ToolCall) -> str:
    return call_key(dataclasses.replace(call, raw_arguments=None))


@dataclass
class Replay:
    """A journal being replayed by a new run of its program (thread-safe).

    :meth:`claim` hands out each journal entry once, matched by name and arguments in order;
    ``resolutions`` decide the entries that waited (by call id).
    """

    journal: ProgramJournal
    resolutions: Mapping[str, Resolution] = field(default_factory=dict)
    _seen: dict[str, int] = field(default_factory=dict, init=False)
    _by_key: dict[str, list[InnerCall]] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        for inner in self.journal.calls:
            self._by_key.setdefault(_key(inner.call), []).append(inner)

    def claim(self, call: ToolCall) -> InnerCall | None:
        """The journal entry a new call of the program stands for, if any."""
        key = _key(call)
        with self._lock:
            number = self._seen.get(key, 0)
            self._seen[key] = number + 1
            known = self._by_key.get(key, [])
            return known[number] if number < len(known) else None

    def next_number(self) -> int:
        """A number above every journal call's (new calls are numbered from it)."""
        numbers = [_number(c.call.id) for c in self.journal.calls]
        return max(numbers, default=0) + 1


def _number(call_id: str) -> int:
    tail = call_id.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def resolved_calls(journal: ProgramJournal, decided: Sequence[str]) -> tuple[str, ...]:
    """The ids among ``decided`` that wait in ``journal``."""
    waiting = {c.id for c in journal.pending}
    return tuple(i for i in decided if i in waiting)
