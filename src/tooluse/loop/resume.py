"""``tooluse.resume`` / ``tooluse.aresume``: continue a run from its :class:`RunState`, after it
paused for approval or after the process running it died.

::

    result = tooluse.run(backend, "Delete the old logs", tools=[delete_files])
    if result.stop_reason is StopReason.APPROVAL_REQUIRED:
        decisions = {call.id: Approve() for call in result.pending}
        result = tooluse.resume(backend, result.state, tools=[delete_files], decisions=decisions)

    # after a crash of a run started with checkpoint="run.json":
    result = tooluse.resume(backend, RunState.load("run.json"), tools=tools, checkpoint="run.json")

Each call id is answered once: calls that completed keep their results, approved and edited
calls run, denied ones are answered with the reason, and a call that was running when the
state was written runs again only if its tool is ``idempotent`` (else it is answered with an
error saying it was interrupted).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tooluse.loop.core import LoopSetup, Resumption
from tooluse.loop.drivers import ResultCollector, drive_async, drive_sync
from tooluse.loop.run_state import Decision, RunState, RunStateError
from tooluse.loop.setup import build_setup
from tooluse.loop.types import LoopEvent, RunFinished, RunResult, StopReason, TrailEntry
from tooluse.messages import ChatMessage
from tooluse.providers.base import Backend

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from tooluse.loop.setup import RunOptions

__all__ = ["aiter_resume", "aresume", "iter_resume", "resume"]


def _prepare(
    backend: Backend,
    state: RunState,
    decisions: Mapping[str, Decision] | None,
    options: Mapping[str, Any],
) -> tuple[LoopSetup, list[ChatMessage], Resumption]:
    setup = build_setup(backend, **options)
    offered = {d.name for d in setup.tools}
    missing = [name for name in state.tool_names if name not in offered]
    if missing:
        programs = state.round is not None and bool(state.round.programs)
        hint = " (a run in code mode resumes with code_mode= as it ran)" if programs else ""
        raise RunStateError(
            f"the run used tools that were not given to resume it: {', '.join(missing)}{hint}"
        )
    waiting = {call.id for call in state.pending}
    unknown = sorted(set(decisions or {}) - waiting)
    if unknown:
        raise RunStateError(
            f"decisions for calls that wait for none: {', '.join(unknown)} (waiting: "
            f"{', '.join(sorted(waiting)) or 'nothing'})"
        )
    resumption = Resumption(state=state, decisions=dict(decisions or {}))
    return setup, list(state.messages), resumption


def _ended(state: RunState) -> RunResult:
    """The result of a run whose state says it has ended (resuming it runs nothing)."""
    start = state.new_messages_start
    final = next((m.content for m in reversed(state.messages[start:]) if m.role == "assistant"), "")
    return RunResult(
        final_text=final,
        messages=state.messages,
        stop_reason=StopReason(state.stop_reason),
        trail=tuple(TrailEntry.from_dict(t) for t in state.trail),
        usage=state.usage,
        output=state.output,
        iterations=state.iteration,
        new_messages_start=start,
        state=state,
    )


def iter_resume(
    backend: Backend,
    state: RunState,
    *,
    decisions: Mapping[str, Decision] | None = None,
    **options: Unpack[RunOptions],
) -> Iterator[LoopEvent]:
    """Like :func:`resume`, but yields the loop's events; the last one is ``RunFinished``."""
    if state.stop_reason is not None:
        return iter((RunFinished(result=_ended(state)),))
    setup, history, resumption = _prepare(backend, state, decisions, options)
    return drive_sync(backend, setup, history, resumption)


def aiter_resume(
    backend: Backend,
    state: RunState,
    *,
    decisions: Mapping[str, Decision] | None = None,
    **options: Unpack[RunOptions],
) -> AsyncIterator[LoopEvent]:
    """The async twin of :func:`iter_resume`."""
    if state.stop_reason is not None:
        return _one(RunFinished(result=_ended(state)))
    setup, history, resumption = _prepare(backend, state, decisions, options)
    return drive_async(backend, setup, history, resumption)


async def _one(event: LoopEvent) -> AsyncIterator[LoopEvent]:
    yield event


def resume(
    backend: Backend,
    state: RunState,
    *,
    decisions: Mapping[str, Decision] | None = None,
    on_event: Callable[[Any], Any] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Continue a run from ``state`` (``result.state`` or ``RunState.load(path)``).

    ``decisions`` answers the calls that wait (``state.pending``), by call id: ``Approve()``,
    ``Deny(reason)`` or ``Edit(arguments)``; a call left without one keeps waiting (the run
    stops again with ``StopReason.APPROVAL_REQUIRED``). ``tools`` must hold every tool the run
    had; the other options are :func:`tooluse.run`'s (``checkpoint=`` goes on writing the
    state). Raises :class:`RunStateError` for missing tools or decisions on unknown call ids.
    """
    events = iter_resume(backend, state, decisions=decisions, **options)
    return ResultCollector(on_event).drain(events)


async def aresume(
    backend: Backend,
    state: RunState,
    *,
    decisions: Mapping[str, Decision] | None = None,
    on_event: Callable[[Any], Any] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """The async twin of :func:`resume`."""
    events = aiter_resume(backend, state, decisions=decisions, **options)
    return await ResultCollector(on_event).adrain(events)
