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
import logging
from collections import Counter
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooluse.events import ParseError
from tooluse.execution.base import AbstractToolExecutor, CancellationToken
from tooluse.execution.code_mode import (
    ProgramJournal,
    program_journal,
    suspended_journal,
    without_program_data,
)
from tooluse.loop.programs import (
    answer_message,
    inner_entries,
    program_started,
    provider_programs,
    resume_program,
    running_programs,
)
from tooluse.loop.run_state import Approve, Decision, Deny, Edit, RoundState, RunState
from tooluse.loop.types import (
    ApprovalRequested,
    Checkpoint,
    Execute,
    Generate,
    LoopEvent,
    ModelTurnFinished,
    RunFinished,
    RunResult,
    Step,
    StopReason,
    TerminalValidator,
    ToolExecutionFinished,
    ToolExecutionStarted,
    ToolMode,
    TrailEntry,
)
from tooluse.messages import (
    ChatMessage,
    ToolCall,
    ToolResult,
    Usage,
    call_key,
    new_call_id,
    render_output,
)
from tooluse.providers.base import Backend, GenerationResult, SamplingParams, ToolChoice
from tooluse.providers.text_tools import TextToolsBackend
from tooluse.retrieval.tool_search import SEARCH_TOOL, ToolSearch
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ApprovalRequested",
    "Checkpoint",
    "Execute",
    "Generate",
    "LoopEvent",
    "LoopSetup",
    "ModelTurnFinished",
    "Resumption",
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

#: Decides a call before it runs: ``True`` run it, ``False`` refuse it, ``None`` the tool's
#: own ``requires_approval`` decides (ask a person, or run).
ApprovalPolicy = Callable[[ToolCall], "bool | None"]

_INTERRUPTED = (
    "interrupted: the run stopped while this call was running, so it may or may not have "
    "taken effect; it was not run again"
)


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
    approve: ApprovalPolicy | None = None
    checkpoint_path: Path | None = None
    # a tooluse.loop.telemetry.RunTracer: the run's spans (None: not traced)
    tracer: Any = None
    tool_search: ToolSearch | None = None
    # True: terminal calls go to the executor like any other (an environment grades them and
    # ends the run by cancelling it); the model still sees which tools are terminal
    run_terminal_calls: bool = False

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        return self.executor.definitions

    def settles(self, definition: ToolDefinition | None) -> bool:
        """Whether the loop itself settles calls of ``definition`` (a terminal tool whose
        calls do not go to the executor)."""
        return definition is not None and definition.is_terminal and not self.run_terminal_calls

    def model(self, backend: Backend) -> Backend:
        """The backend the run talks to: ``backend``, or in text mode ``backend`` behind a
        :class:`TextToolsBackend` that writes the tools into the prompt with ``parser``."""
        if self.mode == "text":
            return TextToolsBackend(backend, self.parser)
        return backend

    def offered_tools(
        self, history: Sequence[ChatMessage], discovered: Sequence[str] = ()
    ) -> tuple[ToolDefinition, ...]:
        """The tools shown to the model: all of them, the ``tools_top_k`` best for the
        request, or the search tool and what it found (every tool still runs if called)."""
        if self.tool_search is not None:
            names = [*self.tool_search.always, *discovered]
            by_name = {d.name: d for d in self.tools}
            return (self.tool_search.search_tool, *(by_name[n] for n in names if n in by_name))
        if self.tools_top_k is None:
            return self.tools
        from tooluse.retrieval.scorers import latest_request_text, select_tools

        query = latest_request_text(history)
        return select_tools(self.tools, query, self.tools_top_k, scorer=self.tool_scorer)


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


@dataclass(frozen=True, kw_only=True)
class Resumption:
    """A run to continue (``tooluse.resume``): its saved state and the decisions on the calls
    that wait for one, by call id."""

    state: RunState
    decisions: Mapping[str, Decision] = field(default_factory=dict)


@dataclass
class _Round:
    """One round of calls: the results known before execution (terminal, refused, denied),
    the calls left to run and those waiting for a decision."""

    results: dict[str, ToolResult] = field(default_factory=dict)
    to_run: list[ToolCall] = field(default_factory=list)
    pending: list[ToolCall] = field(default_factory=list)
    terminal_output: dict[str, Any] | None = None
    refused: int = 0
    programs: dict[str, ProgramJournal] = field(default_factory=dict)

    def state(self, calls: Sequence[ToolCall], *, running: bool = False) -> RoundState:
        return RoundState(
            calls=tuple(calls),
            results=dict(self.results),
            pending=tuple(c.id for c in self.pending),
            in_flight=tuple(c.id for c in self.to_run) if running else (),
            terminal_output=self.terminal_output,
            refused=self.refused,
            programs=dict(self.programs),
        )

    def executed(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        """Keep the results of the calls that ran; a program waiting for decisions on its
        calls keeps its call waiting, with its journal."""
        for call, result in zip(calls, results, strict=True):
            journal = program_journal(result)
            if journal is not None:
                self.programs[call.id] = journal  # its calls go to the trail from there
            if suspended_journal(result) is not None:
                self.pending.append(call)
            else:
                self.results[call.id] = without_program_data(result)


class _Run:
    """The state of one run, and the stages of a round that need no I/O."""

    def __init__(
        self, setup: LoopSetup, history: list[ChatMessage], state: RunState | None = None
    ) -> None:
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
        # Rounds of calls made by the provider's programs alone: not counted by max_tool_iters.
        self.relayed = 0
        self.discovered: list[str] = []
        if state is not None:
            self.discovered = list(state.discovered)
            self.offered = setup.offered_tools(history, self.discovered)
            self.start = state.new_messages_start
            self.seen.update(state.seen)
            self.trail = [TrailEntry.from_dict(t) for t in state.trail]
            self.usage = state.usage
            self.choice = state.tool_choice
            self.iteration = state.iteration
            self.relayed = state.relayed_rounds
            if state.round is not None:
                self.used_ids |= {c.id for c in state.round.calls}

    @property
    def cancelled(self) -> bool:
        return self.setup.cancel is not None and self.setup.cancel.cancelled

    def snapshot(self, round_state: RoundState | None = None) -> RunState:
        """The run as it stands, to save or to resume."""
        return RunState(
            messages=tuple(self.history),
            tool_names=tuple(self.by_name),
            iteration=self.iteration,
            new_messages_start=self.start,
            tool_choice=str(self.choice),
            seen=dict(self.seen),
            usage=self.usage,
            trail=tuple(t.to_dict() for t in self.trail),
            round=round_state,
            discovered=tuple(self.discovered),
            relayed_rounds=self.relayed,
        )

    def finish(
        self, reason: StopReason, output: Any = None, state: RunState | None = None
    ) -> RunResult:
        final = ""
        for message in reversed(self.history[self.start :]):
            if message.role == "assistant":
                final = message.content
                break
        if state is None and self.setup.checkpoint_path is not None:
            state = dataclasses.replace(self.snapshot(), stop_reason=reason.value, output=output)
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
            state=state,
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

    def answer(
        self, call: ToolCall, result: ToolResult, journal: ProgramJournal | None = None
    ) -> None:
        if journal is not None:  # a program's calls go to the trail just before it
            self.trail.extend(inner_entries(journal, self.iteration))
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
            if accepted is None and self.setup.settles(definition):
                result, accepted = _terminal_outcome(self.setup, call)
            else:
                result = ToolResult.failure(call.id, call.name, note)
            self.answer(call, result)
        if accepted is not None:
            return self.finish(StopReason.TERMINAL_TOOL, accepted)
        return self.finish(StopReason.MAX_TOOL_ITERS)

    def plan_round(self, calls: Sequence[ToolCall]) -> _Round:
        """Settle terminal calls, refused repeats and approvals; the rest is left to run."""
        plan = _Round()
        for call in calls:
            definition = self.by_name.get(call.name)
            if self.setup.settles(definition):
                if plan.terminal_output is not None:
                    plan.results[call.id] = ToolResult.failure(
                        call.id, call.name, "ignored: another final call was accepted first"
                    )
                else:
                    plan.results[call.id], plan.terminal_output = _terminal_outcome(
                        self.setup, call
                    )
                continue
            if call.name == SEARCH_TOOL and self.setup.tool_search is not None:
                plan.results[call.id] = self._search(call)
                continue
            key = call_key(call, sep="\x00")  # the separator of keys saved in a RunState
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
            self._approval(call, definition, plan)
        return plan

    def _search(self, call: ToolCall) -> ToolResult:
        """Answer a ``search_tools`` call; what it finds is offered from the next request."""
        search = self.setup.tool_search
        assert search is not None
        try:
            query = str(search.search_tool.validate_arguments(call.arguments)["query"])
        except Exception as exc:  # the model gets the problem and another chance
            return ToolResult.failure(call.id, call.name, exc)
        found = search.search(query, self.setup.tools)
        for definition in found:
            if definition.name not in self.discovered:
                self.discovered.append(definition.name)
        self.offered = self.setup.offered_tools(self.history, self.discovered)
        return ToolResult.success(call.id, call.name, search.answer(query, found))

    def _approval(self, call: ToolCall, definition: ToolDefinition | None, plan: _Round) -> None:
        """Put ``call`` where its approval says: to run, refused, or waiting for a person."""
        verdict = self.setup.approve(call) if self.setup.approve is not None else None
        if verdict is None and definition is not None and definition.requires_approval:
            plan.pending.append(call)
        elif verdict is None or verdict:
            plan.to_run.append(call)
        else:
            reason = "denied: the approval policy refused this call"
            plan.results[call.id] = ToolResult.failure(call.id, call.name, reason)

    def replan(self, resumption: Resumption) -> tuple[tuple[ToolCall, ...], _Round]:
        """The round a resumed run stopped in, with the decisions applied: approved and edited
        calls run, denied ones are answered, and a call that was running when the state was
        written runs again only if its tool is idempotent."""
        saved = resumption.state.round
        assert saved is not None
        plan = _Round(
            results=dict(saved.results),
            terminal_output=saved.terminal_output,
            refused=saved.refused,
            programs=dict(saved.programs),
        )
        by_id = {c.id: c for c in saved.calls}
        running_programs(self.setup.executor, saved)
        for call_id in saved.in_flight:
            call = by_id[call_id]
            definition = self.by_name.get(call.name)
            if definition is not None and definition.idempotent:
                plan.to_run.append(call)
            else:
                plan.results[call_id] = ToolResult.failure(call_id, call.name, _INTERRUPTED)
        for call_id in saved.pending:
            journal = saved.programs.get(call_id)
            if journal is None:
                _decide(by_id[call_id], resumption.decisions.get(call_id), plan)
            elif resume_program(self.setup.executor, journal, resumption.decisions):
                plan.to_run.append(by_id[call_id])  # runs again, replaying its journal
            else:
                plan.pending.append(by_id[call_id])
        return saved.calls, plan

    def close_round(self, calls: Sequence[ToolCall], plan: _Round) -> RunResult | None:
        """Answer every call of the round in order; the result when the run ends here."""
        for call in calls:
            self.answer(call, plan.results[call.id], plan.programs.get(call.id))
        if plan.terminal_output is not None:
            return self.finish(StopReason.TERMINAL_TOOL, plan.terminal_output)
        answered = answer_message(calls, plan.results)
        if answered is not None:  # a program ended the run with final_answer(...)
            self.history.append(answered)
            return self.finish(StopReason.FINAL_TEXT)
        if plan.refused == len(calls):
            return self.finish(StopReason.REPEATED_CALLS)
        if self.cancelled:
            return self.finish(StopReason.CANCELLED)
        searched_only = self.setup.tool_search is not None and all(
            call.name == SEARCH_TOOL for call in calls
        )
        if self.choice not in ("auto", "none") and not searched_only:
            # A search is a step towards the forced call, not the call: the choice holds.
            forced = self.by_name.get(self.choice)
            # A forced call has been made; forcing again would loop forever, except for a
            # terminal tool whose arguments were rejected (the model must try again).
            if not self.setup.settles(forced):
                self.choice = "auto"
        return None


def _decide(call: ToolCall, decision: Decision | None, plan: _Round) -> None:
    if decision is None:
        plan.pending.append(call)
    elif isinstance(decision, Deny):
        plan.results[call.id] = ToolResult.failure(call.id, call.name, f"denied: {decision.reason}")
    elif isinstance(decision, Edit):
        plan.to_run.append(dataclasses.replace(call, arguments=dict(decision.arguments)))
    elif isinstance(decision, Approve):
        plan.to_run.append(call)
    else:
        raise TypeError(
            f"a decision is Approve(), Deny(reason) or Edit(arguments), not {decision!r}"
        )


def _play_round(
    run: _Run, calls: Sequence[ToolCall], plan: _Round
) -> Generator[Step, Any, RunResult | None]:
    """Run the round's calls, then answer them all, or stop for the calls that wait."""
    if plan.to_run:
        if run.setup.checkpoint_path is not None:
            yield Checkpoint(state=run.snapshot(plan.state(calls, running=True)))
        for call in plan.to_run:
            started = program_started(run.setup.executor, call, run.iteration)
            if started is not None:
                yield started
            yield ToolExecutionStarted(call=call, iteration=run.iteration)
        executed: Sequence[ToolResult] = yield Execute(
            calls=tuple(plan.to_run), iteration=run.iteration
        )
        plan.executed(plan.to_run, executed)
        plan.to_run = []
    if plan.pending:
        state = run.snapshot(plan.state(calls))
        yield ApprovalRequested(calls=state.pending, state=state)
        return run.finish(StopReason.APPROVAL_REQUIRED, state=state)
    return run.close_round(calls, plan)


def loop_steps(
    setup: LoopSetup, history: list[ChatMessage], resumption: Resumption | None = None
) -> Generator[Step, Any, RunResult]:
    """The tool loop; ``history`` (already valid) is extended in place with the new turns.
    With a ``resumption``, the run goes on from its saved state (``history`` is its messages)."""
    run = _Run(setup, history, resumption.state if resumption is not None else None)
    if resumption is not None and resumption.state.round is not None:
        calls, plan = run.replan(resumption)
        ended = yield from _play_round(run, calls, plan)
        if ended is not None:
            return ended
    while True:
        if run.cancelled:
            return run.finish(StopReason.CANCELLED)
        if setup.checkpoint_path is not None:
            yield Checkpoint(state=run.snapshot())
        at_limit = run.iteration - run.relayed >= setup.max_tool_iters
        try:
            generated: GenerationResult = yield run.request(at_limit)
        except Exception as exc:
            # The driver throws the backend's error in here so that the caller keeps what the
            # run did so far (tools may have had effects): ``exc.partial_result``.
            _attach_partial_result(exc, run.finish(StopReason.ERROR))
            raise
        message = run.take_turn(generated)
        yield ModelTurnFinished(message=message, usage=generated.usage, iteration=run.iteration)
        yield from provider_programs(generated, run.iteration)
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
        if all(call.caller for call in calls):  # a provider's program asked; the model did not
            run.relayed += 1
        ended = yield from _play_round(run, calls, run.plan_round(calls))
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
        caller=call.caller or "",  # a call a provider's program made
    )
