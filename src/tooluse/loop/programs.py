"""Code mode in the loop: the steps of a round that concern the model's programs.

A program is one call of the program tool (``run_python``), run by a
:class:`~tooluse.execution.code_mode.CodeModeExecutor`. Its result carries the calls it made;
the loop puts them in the trail (each once, with the program as ``caller``) and reports each
as a :class:`ToolExecutionStarted` / :class:`ToolExecutionFinished` pair whose call names the
program in ``call.caller``. A program that waits for decisions on some of its calls leaves
its call waiting (the run pauses), with its journal in the round's state; resuming hands the
journal and the decisions back to the executor, which runs the program again without
repeating a call. A program that ended with ``final_answer(text)`` ends the run with that
text as the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from tooluse.execution.base import AbstractToolExecutor
from tooluse.execution.code_mode import (
    CodeModeExecutor,
    ProgramJournal,
    Resolution,
    done_calls,
    final_answer_of,
    new_calls,
    program_journal,
    suspended_journal,
)
from tooluse.loop.run_state import Approve, Decision, Deny, Edit, RoundState
from tooluse.loop.types import (
    ProgramFinished,
    ProgramStarted,
    ToolExecutionFinished,
    ToolExecutionStarted,
    TrailEntry,
)
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.providers.base import GenerationResult

__all__ = [
    "answer_message",
    "program_finished",
    "program_started",
    "provider_programs",
    "inner_entries",
    "inner_events",
    "resume_program",
    "running_programs",
]


def inner_entries(journal: ProgramJournal, iteration: int) -> list[TrailEntry]:
    """Trail entries for the calls a program made that have their result."""
    entries = []
    for inner in done_calls(journal):
        answer = inner.result
        assert answer is not None
        call = inner.effective
        entries.append(
            TrailEntry(
                call_id=call.id,
                name=call.name,
                arguments=dict(call.arguments),
                output=answer.output,
                is_error=answer.is_error,
                duration=float(answer.metadata.get("duration", 0.0)),
                iteration=iteration,
                caller=call.caller or journal.program_id,
            )
        )
    return entries


def inner_events(
    result: ToolResult, iteration: int
) -> list[ToolExecutionStarted | ToolExecutionFinished]:
    """A started and a finished event for each call a program made in this run of it (the
    calls answered from an earlier run's journal were reported then)."""
    events: list[ToolExecutionStarted | ToolExecutionFinished] = []
    for inner in new_calls(result):
        answer = inner.result
        assert answer is not None
        events.append(ToolExecutionStarted(call=inner.effective, iteration=iteration))
        events.append(
            ToolExecutionFinished(
                call=inner.effective,
                result=answer,
                iteration=iteration,
                duration=float(answer.metadata.get("duration", 0.0)),
            )
        )
    return events


def program_started(
    executor: AbstractToolExecutor, call: ToolCall, iteration: int
) -> ProgramStarted | None:
    """The event of a program of tooluse's starting (``None`` for any other call)."""
    if not isinstance(executor, CodeModeExecutor) or call.name != executor.settings.tool_name:
        return None
    code = call.arguments.get("code")
    return ProgramStarted(
        program_id=call.id,
        code=code if isinstance(code, str) else "",
        runner="tooluse",
        iteration=iteration,
    )


def program_finished(call: ToolCall, result: ToolResult, iteration: int) -> ProgramFinished | None:
    """The event of a program of tooluse's ending (``None`` for any other result, and for a
    program that waits for decisions)."""
    if program_journal(result) is None or suspended_journal(result) is not None:
        return None
    return ProgramFinished(
        program_id=call.id,
        output=result.output,
        is_error=result.is_error,
        runner="tooluse",
        iteration=iteration,
    )


def provider_programs(
    generated: GenerationResult, iteration: int
) -> list[ProgramStarted | ProgramFinished]:
    """The events of the programs the provider started or ended in a model turn."""
    events: list[ProgramStarted | ProgramFinished] = []
    for program in generated.programs:
        if program.code is not None:
            events.append(
                ProgramStarted(
                    program_id=program.id,
                    code=program.code,
                    runner=program.runner,
                    iteration=iteration,
                )
            )
        if program.output is not None:
            events.append(
                ProgramFinished(
                    program_id=program.id,
                    output=program.output,
                    is_error=program.is_error,
                    runner=program.runner,
                    iteration=iteration,
                )
            )
    return events


def answer_message(
    calls: Sequence[ToolCall], results: Mapping[str, ToolResult]
) -> ChatMessage | None:
    """The assistant message ending the run when a program of the round gave a final answer
    (the first one, in call order)."""
    for call in calls:
        result = results.get(call.id)
        answer = final_answer_of(result) if result is not None else None
        if answer is not None:
            return ChatMessage(
                role="assistant", content=answer, metadata={"final_answer_of": call.id}
            )
    return None


def running_programs(executor: AbstractToolExecutor, saved: RoundState) -> None:
    """Hand the journals of the programs that were running when the state was written to the
    executor: they run again without repeating a call that finished."""
    if not isinstance(executor, CodeModeExecutor):
        return
    for call_id in saved.in_flight:
        journal = saved.programs.get(call_id)
        if journal is not None:
            executor.resume_program(call_id, journal)


def resume_program(
    executor: AbstractToolExecutor,
    journal: ProgramJournal,
    decisions: Mapping[str, Decision],
) -> bool:
    """Hand a waiting program's journal and the decisions on its calls to the executor;
    ``False`` (the program keeps waiting) when none of its calls was decided."""
    waiting = journal.pending
    resolutions: dict[str, Resolution] = {}
    for call in waiting:
        decision = decisions.get(call.id)
        if decision is not None:
            resolutions[call.id] = _resolution(call, decision)
    if not resolutions or not isinstance(executor, CodeModeExecutor):
        return False
    executor.resume_program(journal.program_id, journal, resolutions)
    return True


def _resolution(call: ToolCall, decision: Decision) -> Resolution:
    if isinstance(decision, Deny):
        return ToolResult.failure(call.id, call.name, f"denied: {decision.reason}")
    if isinstance(decision, Edit):
        return dataclasses.replace(call, arguments=dict(decision.arguments))
    if isinstance(decision, Approve):
        return call
    raise TypeError(f"a decision is Approve(), Deny(reason) or Edit(arguments), not {decision!r}")
