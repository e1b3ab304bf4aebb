"""``tooluse.run`` / ``tooluse.arun``: call the model, run its tools, repeat until it answers.

::

    result = tooluse.run(backend, "What's the weather in Paris?", tools=[get_weather])
    result.final_text, result.stop_reason, result.trail, result.usage

Both drive the same state machine (:mod:`tooluse.loop.core`); only the I/O differs. How tools
reach the model follows a three-way priority:

1. native function calling when ``backend.capabilities.supports_function_calling``;
2. otherwise a text ``tool_call_parser``: the backend is wrapped in a
   :class:`~tooluse.providers.text_tools.TextToolsBackend`, which formats the tools into the
   system prompt and reads the calls from the reply as it streams;
3. otherwise tools are ignored, with a logged warning naming the backend.

``iter_run`` / ``aiter_run`` yield the loop's events as they happen (text deltas when
``stream=True`` and the backend streams, model turns, tool calls started and finished) and end
with :class:`RunFinished`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, TypeVar

from tooluse.execution.code_mode import (
    CodeModeExecutor,
    ProgramJournal,
    program_journal,
    suspended_journal,
    without_program_data,
)
from tooluse.loop.core import LoopSetup, Resumption, finished_event, loop_steps
from tooluse.loop.programs import inner_events, program_finished
from tooluse.loop.run_log import log_requested
from tooluse.loop.run_state import RunState
from tooluse.loop.setup import (
    AfterHooks,
    Hooks,
    Prompt,
    RunOptions,
    backend_label,
    build_setup,
    choose_mode,
    initial_history,
)
from tooluse.loop.types import (
    ApprovalRequested,
    Checkpoint,
    Execute,
    Generate,
    LoopEvent,
    ModelTurnFinished,
    RunFinished,
    RunResult,
    StopReason,
    ToolExecutionFinished,
    ToolExecutionStarted,
    TrailEntry,
)
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.providers.base import Backend, GenerationDone, GenerationResult, as_backend

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "AfterHooks",
    "ApprovalRequested",
    "Hooks",
    "LoopEvent",
    "ModelTurnFinished",
    "Prompt",
    "ResultCollector",
    "RunFinished",
    "RunOptions",
    "RunResult",
    "StopReason",
    "ToolExecutionFinished",
    "ToolExecutionStarted",
    "TrailEntry",
    "aiter_run",
    "arun",
    "backend_label",
    "build_setup",
    "choose_mode",
    "drive_async",
    "drive_sync",
    "initial_history",
    "iter_run",
    "run",
]

T = TypeVar("T")
_END: Any = object()
_UNTRACED = contextlib.nullcontext()

# -- drivers -----------------------------------------------------------------------------------
#
# Python cannot write one function that is both blocking and awaiting, so there are two thin
# drivers of the same shape. Everything they share (stepping the core, what is sent back to
# it, the ending) is in ``_Driving``; each driver only does its own kind of I/O.


class _Driving:
    """The bookkeeping both drivers share around :func:`loop_steps`."""

    def __init__(
        self,
        backend: Backend,
        setup: LoopSetup,
        history: list[ChatMessage],
        resumption: Resumption | None = None,
    ) -> None:
        self.backend = setup.model(as_backend(backend))
        self.setup = setup
        self._core = loop_steps(setup, history, resumption)
        self._outcome: Any = None
        self._result: RunResult | None = None
        self._saved: RunState | None = None
        self._saving = threading.Lock()  # programs report their calls from worker threads
        self.trace = setup.tracer.start_run(self.backend) if setup.tracer is not None else None
        if isinstance(setup.executor, CodeModeExecutor):
            setup.executor.on_progress = self.program_progress

    def checkpoint(self, step: Checkpoint) -> None:
        """Write the core's state (``checkpoint=PATH``); kept to update call by call."""
        assert self.setup.checkpoint_path is not None
        with self._saving:
            self._saved = step.state
            step.state.save(self.setup.checkpoint_path)

    def call_ended(self, call: ToolCall, result: ToolResult) -> None:
        """One call of the running round ended: traced, and the saved state says so at once,
        so that a crash from here on neither repeats nor loses it."""
        if self.trace is not None:
            self.trace.tool_finished(call, result)
        with self._saving:
            saved = self._saved
            if saved is None or saved.round is None or self.setup.checkpoint_path is None:
                return
            waiting, journal = suspended_journal(result), program_journal(result)
            if waiting is not None:  # a program that waits for decisions: its call waits too
                updated = saved.round.with_waiting(waiting)
            else:
                updated = saved.round.with_result(without_program_data(result))
                updated = updated.with_program(journal) if journal is not None else updated
            self._saved = dataclasses.replace(saved, round=updated)
            self._saved.save(self.setup.checkpoint_path)

    def program_progress(self, journal: ProgramJournal) -> None:
        """A program's call is about to run or has ended: the saved state says so at once, so
        that a crash from here on never repeats a call that finished (nor silently reruns one
        that may have had effects)."""
        with self._saving:
            saved = self._saved
            if saved is None or saved.round is None or self.setup.checkpoint_path is None:
                return
            self._saved = dataclasses.replace(saved, round=saved.round.with_program(journal))
            self._saved.save(self.setup.checkpoint_path)

    def steps(self) -> Iterator[Any]:
        """The core's requests and events, each request's outcome sent back on the next step."""
        while True:
            try:
                step = self._core.send(self._outcome)
            except StopIteration as stop:
                self._result = stop.value
                return
            self._outcome = None
            yield step

    def take(self, item: Any) -> LoopEvent | None:
        """One item of a model turn: a stream event to pass on, or the turn's result (kept)."""
        if isinstance(item, GenerationDone):
            item = item.result
        if isinstance(item, GenerationResult):
            self._outcome = item
            return None
        return item  # type: ignore[no-any-return]

    @contextlib.contextmanager
    def model_turn(self, step: Generate) -> Iterator[None]:
        """Around one model turn: a backend error goes to the core, which attaches the run so
        far to it (``partial_result``) and re-raises it."""
        if self.trace is not None:
            self.trace.chat_started(step.messages)
        try:
            yield
            if self._outcome is None:
                raise RuntimeError(
                    f"{backend_label(self.backend)} stream ended without a GenerationDone event"
                )
        except Exception as exc:
            if self.trace is not None:
                self.trace.chat_failed(exc)
                self.trace.failed(exc)
                self.trace = None
            self._core.throw(exc)
            raise
        if self.trace is not None:
            self.trace.chat_finished(self._outcome)

    def tracing(self, step: Execute) -> contextlib.AbstractContextManager[Any]:
        """Around the executor's work on ``step``: the run's trace context (when traced), which
        the executor's tasks and worker threads inherit."""
        return _UNTRACED if self.trace is None else self.trace.executing(step.calls)

    def event(self, step: Any) -> Any:
        """A core event on its way out (tool calls starting are traced)."""
        if self.trace is not None and isinstance(step, ToolExecutionStarted):
            self.trace.tool_started(step.call)
        return step

    def executed(
        self, step: Execute, results: Sequence[ToolResult], reported: Collection[int] = ()
    ) -> list[LoopEvent]:
        """Keep a batch's results for the core; the finished events not yet ``reported``."""
        self._outcome = results
        return [
            event
            for i, r in enumerate(results)
            if i not in reported
            for event in finished_events(step, i, r)
        ]

    def finished(self) -> RunFinished:
        assert self._result is not None
        path, state = self.setup.checkpoint_path, self._result.state
        if path is not None and state is not None:
            state.save(path)  # the ended run: resuming it changes nothing
        if self.trace is not None:
            self.trace.finished(self._result)
            self.trace = None
        return RunFinished(result=self._result)

    def close(self) -> None:
        if isinstance(self.setup.executor, CodeModeExecutor):
            self.setup.executor.on_progress = None
        if self.trace is not None:  # the consumer left before the run ended
            self.trace.failed(RuntimeError("the run was not consumed to its end"))
            self.trace = None
        if self.setup.close_executor:
            self.setup.executor.close()


def finished_events(step: Execute, index: int, result: ToolResult) -> list[LoopEvent]:
    """The events of call ``index`` of ``step`` ending: the calls a program made (each
    started and finished), then the call's own finished event (none for a program that waits
    for decisions: it has not finished)."""
    events: list[Any] = list(inner_events(result, step.iteration))
    if suspended_journal(result) is None:
        events.append(finished_event(step, index, result))
    ended = program_finished(step.calls[index], result, step.iteration)
    if ended is not None:
        events.append(ended)
    return events


def _request(step: Generate) -> tuple[Any, ...]:
    return (step.messages, step.tools, step.params, step.tool_choice)


def _model_turn_sync(backend: Backend, step: Generate) -> Iterable[Any]:
    if step.stream:
        return backend.stream(*_request(step))
    return (backend.generate(*_request(step)),)


async def _model_turn_async(backend: Backend, step: Generate) -> AsyncIterator[Any]:
    if not step.stream:
        yield await backend.agenerate(*_request(step))
        return
    async for item in backend.astream(*_request(step)):
        yield item


def _each_traced(driving: _Driving, step: Execute, batch: Iterator[T]) -> Iterator[T]:
    """``batch``'s items, each produced inside the run's trace context: it is set and reset
    around each step, since a context must not stay set across a yield to the run's consumer."""
    while True:
        with driving.tracing(step):
            item = next(batch, _END)
        if item is _END:
            return
        yield item


async def _each_traced_async(driving: _Driving, step: Execute, batch: Any) -> AsyncIterator[Any]:
    """The async twin of :func:`_each_traced` (``batch`` is closed by its caller)."""
    while True:
        with driving.tracing(step):
            try:
                item = await batch.__anext__()
            except StopAsyncIteration:
                return
        yield item


def _execute_sync(driving: _Driving, step: Execute) -> Iterator[LoopEvent]:
    """Run a batch, yielding each call's finished event as soon as that call ends."""
    setup = driving.setup
    if len(step.calls) == 1 and setup.cancel is None:
        # one call and nothing to cancel it: the executor's single call, without a batch
        with driving.tracing(step):
            result = setup.executor.execute(step.calls[0])
        driving.call_ended(step.calls[0], result)
        yield from driving.executed(step, [result])
        return
    results: dict[int, ToolResult] = {}
    batch = iter(setup.executor.iter_batch(step.calls, cancel=setup.cancel))
    steps = batch if driving.trace is None else _each_traced(driving, step, batch)
    for index, result in steps:
        results[index] = result
        driving.call_ended(step.calls[index], result)
        yield from finished_events(step, index, result)
    yield from driving.executed(step, _in_order(step, results), results)


async def _execute_async(driving: _Driving, step: Execute) -> AsyncGenerator[LoopEvent, None]:
    """The async twin of :func:`_execute_sync`."""
    setup = driving.setup
    ended: dict[int, ToolResult] = {}
    if len(step.calls) == 1 and setup.cancel is None:
        # one call and nothing to cancel it: the executor's single call, without a batch
        with driving.tracing(step):
            ended[0] = await setup.executor.aexecute(step.calls[0])
        driving.call_ended(step.calls[0], ended[0])
        for event in driving.executed(step, [ended[0]]):
            yield event
        return
    # aclosing: when this stops early (the run's consumer left), the running calls are cancelled.
    batch = setup.executor.aiter_batch(step.calls, cancel=setup.cancel)
    async with contextlib.aclosing(batch) as each:  # type: ignore[type-var]
        steps = each if driving.trace is None else _each_traced_async(driving, step, each)
        async for index, result in steps:
            ended[index] = result
            driving.call_ended(step.calls[index], result)
            for event in finished_events(step, index, result):
                yield event
    for event in driving.executed(step, _in_order(step, ended), ended):
        yield event


def _in_order(step: Execute, results: Mapping[int, ToolResult]) -> list[ToolResult]:
    """A batch's results in call order; an executor that left a call unanswered is a bug in
    that executor, named here rather than as a history the next request would refuse."""
    missing = [step.calls[i].name for i in range(len(step.calls)) if i not in results]
    if missing:
        raise RuntimeError(f"the tool executor gave no result for: {', '.join(missing)}")
    return [results[i] for i in range(len(step.calls))]


def drive_sync(
    backend: Backend,
    setup: LoopSetup,
    history: list[ChatMessage],
    resumption: Resumption | None = None,
) -> Iterator[LoopEvent]:
    """Run the loop with blocking calls, yielding its events; the last is ``RunFinished``.

    The calls of a round run in parallel worker threads and each one's
    ``ToolExecutionFinished`` arrives as soon as it ends.
    """
    driving = _Driving(backend, setup, history, resumption)
    try:
        for step in driving.steps():
            if isinstance(step, Generate):
                with driving.model_turn(step):
                    for item in _model_turn_sync(driving.backend, step):
                        if (event := driving.take(item)) is not None:
                            yield event
            elif isinstance(step, Execute):
                yield from _execute_sync(driving, step)
            elif isinstance(step, Checkpoint):
                driving.checkpoint(step)
            else:
                yield driving.event(step)
        yield driving.finished()
    finally:
        driving.close()


async def drive_async(
    backend: Backend,
    setup: LoopSetup,
    history: list[ChatMessage],
    resumption: Resumption | None = None,
) -> AsyncIterator[LoopEvent]:
    """Run the loop with awaits, yielding its events; the last is ``RunFinished``.

    The calls of a round run in parallel and each one's ``ToolExecutionFinished`` arrives as
    soon as it completes.
    """
    driving = _Driving(backend, setup, history, resumption)
    try:
        for step in driving.steps():
            if isinstance(step, Generate):
                with driving.model_turn(step):
                    async for item in _model_turn_async(driving.backend, step):
                        if (event := driving.take(item)) is not None:
                            yield event
            elif isinstance(step, Execute):
                # aclosing: a consumer that stops early cancels the running calls right away.
                async with contextlib.aclosing(_execute_async(driving, step)) as finished:
                    async for event in finished:
                        yield event
            elif isinstance(step, Checkpoint):
                driving.checkpoint(step)
            else:
                yield driving.event(step)
        yield driving.finished()
    finally:
        driving.close()


class ResultCollector:
    """Feeds loop events to ``on_event`` and keeps the :class:`RunResult` of the last one."""

    def __init__(self, on_event: Callable[[Any], Any] | None = None) -> None:
        self.on_event = on_event
        self._result: RunResult | None = None

    def __call__(self, event: LoopEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)
        if isinstance(event, RunFinished):
            self._result = event.result

    @property
    def result(self) -> RunResult:
        if self._result is None:  # pragma: no cover - the drivers always end with RunFinished
            raise RuntimeError("the tool loop ended without a result")
        return self._result

    def drain(self, events: Iterable[LoopEvent]) -> RunResult:
        """Consume a sync driver's events; the run's result."""
        for event in events:
            self(event)
        return self.result

    async def adrain(self, events: AsyncIterable[LoopEvent]) -> RunResult:
        """Consume an async driver's events; the run's result."""
        async for event in events:
            self(event)
        return self.result


# -- public entry points -------------------------------------------------------------------------


def iter_run(
    backend: Backend,
    prompt: Prompt,
    *,
    system_prompt: str | None = None,
    **options: Unpack[RunOptions],
) -> Iterator[LoopEvent]:
    """Like :func:`run`, but yields the loop's events; the last one is :class:`RunFinished`."""
    setup = build_setup(backend, **options)
    return drive_sync(backend, setup, initial_history(prompt, system_prompt))


def aiter_run(
    backend: Backend,
    prompt: Prompt,
    *,
    system_prompt: str | None = None,
    **options: Unpack[RunOptions],
) -> AsyncIterator[LoopEvent]:
    """Like :func:`arun`, but an async iterator of the loop's events (last: ``RunFinished``)."""
    setup = build_setup(backend, **options)
    return drive_async(backend, setup, initial_history(prompt, system_prompt))


def run(
    backend: Backend,
    prompt: Prompt,
    *,
    system_prompt: str | None = None,
    on_event: Callable[[Any], Any] | None = None,
    log: bool | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Run the tool loop to the end and return its :class:`RunResult`.

    - ``prompt``: user text, a ``ChatMessage`` or a history (left unchanged; the result's
      ``messages`` is the extended copy). ``system_prompt`` is put first.
    - ``on_event`` receives every loop event (:data:`LoopEvent`) as it happens; the calls of a
      round run in parallel and each ``ToolExecutionFinished`` comes as soon as its call ends.
    - ``log=True`` (or ``TOOLUSE_LOG=1``) writes the run to the run log (``tooluse logs``).

    Options (:class:`RunOptions`, defaults in brackets):

    - ``tools``: functions, ``Tool`` objects, ``ToolDefinition``s with a ``function`` (terminal
      ones need none), or ``{name: function}`` [none].
    - ``tool_choice``: ``"auto"``, ``"none"``, ``"required"`` or a tool name; a forced choice
      applies to the first round only (then ``"auto"``), except a terminal tool, which stays
      forced until its arguments pass validation [``"auto"``].
    - ``max_tool_iters``: rounds of tool execution allowed; calls beyond are answered
      ``not executed`` and the run stops with ``StopReason.MAX_TOOL_ITERS`` (with
      ``final_answer_on_limit=True`` the last request forbids tools instead) [10].
    - ``tool_call_parser``: reads calls from the text of models without native function
      calling (tools are then described in the system prompt) [none].
    - ``params``: the :class:`SamplingParams` of every request [the backend's].
    - ``before_tool_call(call)`` may return a rewritten ``ToolCall``, a ``ToolResult`` or a
      ``Veto``; ``after_tool_call(call, result)`` may return a replacement ``ToolResult``
      (one hook or a sequence; plain or async) [none].
    - ``stream=True`` asks a streaming backend for text deltas [False].
    - ``tool_timeout`` (seconds, ``None`` for none) [30], ``tool_timeouts`` (per tool name),
      ``max_concurrency`` [unbounded], ``max_output_chars`` [20 000] and ``injected`` (values
      for injected parameters, e.g. ``{"agent": agent}``) configure the executor.
    - ``max_identical_calls``: how often the same call (name and arguments) runs before
      repeats are refused; a round of only refused repeats ends the run [3].
    - ``cancel``: a :class:`CancellationToken`; running calls are answered ``cancelled``.
    - ``tools_top_k``: offer the model only the K tools most relevant to the latest request
      (BM25 over names, descriptions and parameters; ``tool_scorer`` with
      ``score(query, tools) -> list[float]`` replaces it); all tools still run [all].
    - ``approve(call) -> bool | None``: a policy asked before each call runs: ``True`` runs it,
      ``False`` refuses it (the model is told), ``None`` leaves it to the tool: a tool made
      with ``requires_approval=True`` stops the run with ``StopReason.APPROVAL_REQUIRED``,
      ``result.pending`` (the waiting calls) and ``result.state``; the other calls of that turn
      run first. Continue with :func:`tooluse.resume` [none].
    - ``tracer``: an OpenTelemetry tracer for this run's spans (``invoke_agent``, ``chat``,
      ``execute_tool``; see :mod:`tooluse.loop.telemetry`) [the one ``tooluse.instrument()`` set].
    - ``checkpoint``: a path where the run's :class:`RunState` is written atomically before
      every model turn and after every tool result, to :func:`tooluse.resume` it after a crash
      [none].
    - ``code_mode``: ``True`` or a :class:`~tooluse.execution.code_mode.CodeMode`: the model
      writes one Python program (tool ``run_python``) that calls the tools, run in the sandbox;
      each call it makes is validated, hooked, approved (``approve`` sees the program call and
      each of its calls), traced, checkpointed and put in the trail (``caller``: the program)
      like a direct call. Tools with ``callers=("direct",)`` stay direct [False].

    An unknown option raises ``TypeError``. Errors of the backend propagate; the run so far
    (messages, trail, usage) is attached to the exception as ``partial_result``
    (``stop_reason=StopReason.ERROR``).
    """
    events = iter_run(backend, prompt, system_prompt=system_prompt, **options)
    if not log_requested(log):
        return ResultCollector(on_event).drain(events)
    started = time.monotonic()
    try:
        result = ResultCollector(on_event).drain(events)
    except Exception as exc:
        _log(getattr(exc, "partial_result", None), backend, prompt, options, started, exc)
        raise
    _log(result, backend, prompt, options, started)
    return result


async def arun(
    backend: Backend,
    prompt: Prompt,
    *,
    system_prompt: str | None = None,
    on_event: Callable[[Any], Any] | None = None,
    log: bool | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """The async twin of :func:`run` (same options, same state machine); tools of a round run
    in parallel on the event loop and in worker threads."""
    events = aiter_run(backend, prompt, system_prompt=system_prompt, **options)
    if not log_requested(log):
        return await ResultCollector(on_event).adrain(events)
    started = time.monotonic()
    try:
        result = await ResultCollector(on_event).adrain(events)
    except Exception as exc:
        _log(getattr(exc, "partial_result", None), backend, prompt, options, started, exc)
        raise
    _log(result, backend, prompt, options, started)
    return result


def _log(
    result: RunResult | None,
    backend: Backend,
    prompt: Any,
    options: Any,
    started: float,
    error: BaseException | None = None,
) -> None:
    """Write a run to the run log (``log=True`` or ``TOOLUSE_LOG=1``)."""
    from tooluse.loop.run_log import record_run

    record_run(
        result,
        backend=backend,
        prompt=prompt,
        tools=options.get("tools") or (),
        duration=time.monotonic() - started,
        error=error,
    )
