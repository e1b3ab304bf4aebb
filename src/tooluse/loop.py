"""``tooluse.run`` / ``tooluse.arun``: call the model, run its tools, repeat until it answers.

::

    result = tooluse.run(backend, "What's the weather in Paris?", tools=[get_weather])
    result.final_text, result.stop_reason, result.trail, result.usage

Both drive the same state machine (:mod:`tooluse.loop_core`); only the I/O differs. How tools
reach the model follows a three-way priority:

1. native function calling when ``backend.capabilities.supports_function_calling``;
2. otherwise a text ``tool_call_parser``: tools are formatted into the system prompt with
   ``parser.format_tools`` and calls are read from the reply with ``parser.parse``;
3. otherwise tools are ignored, with a logged warning naming the backend.

``iter_run`` / ``aiter_run`` yield the loop's events as they happen (text deltas when
``stream=True`` and the backend streams, model turns, tool calls started and finished) and end
with :class:`RunFinished`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Union

from tooluse.execution.local import (
    DEFAULT_MAX_OUTPUT_CHARS,
    AfterHook,
    BeforeHook,
    CancellationToken,
    ToolsArg,
)
from tooluse.execution.parallel import AsyncToolExecutor
from tooluse.loop_core import (
    Execute,
    Generate,
    LoopEvent,
    LoopSetup,
    ModelTurnFinished,
    RunFinished,
    RunResult,
    StopReason,
    TerminalValidator,
    ToolExecutionFinished,
    ToolExecutionStarted,
    ToolMode,
    TrailEntry,
    logger,
    loop_steps,
)
from tooluse.messages import ChatMessage
from tooluse.providers.base import GenerationDone, GenerationResult, SamplingParams, ToolChoice

__all__ = [
    "LoopEvent",
    "ModelTurnFinished",
    "Prompt",
    "RunFinished",
    "RunResult",
    "StopReason",
    "ToolExecutionFinished",
    "ToolExecutionStarted",
    "TrailEntry",
    "aiter_run",
    "arun",
    "iter_run",
    "run",
]

#: A prompt: user text, one message, or a whole history.
Prompt = Union[str, ChatMessage, Sequence[ChatMessage]]

Hooks = Union[BeforeHook, Sequence[BeforeHook], None]
AfterHooks = Union[AfterHook, Sequence[AfterHook], None]


def _hooks(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if callable(value):
        return (value,)
    return tuple(value)


def backend_label(backend: Any) -> str:
    """How warnings name a backend: its class, plus its ``name`` when it has one."""
    cls = type(backend).__name__
    name = getattr(backend, "name", None)
    return f"{cls}({name!r})" if isinstance(name, str) and name and name != cls else cls


def choose_mode(backend: Any, has_tools: bool, parser: Any) -> ToolMode:
    """The runner priority: native calling, else a text parser, else no tools (warned)."""
    if not has_tools:
        return "native"
    capabilities = getattr(backend, "capabilities", None)
    if capabilities is None or capabilities.supports_function_calling:
        return "native"
    if parser is not None:
        return "text"
    return "none"


def initial_history(prompt: Prompt, system_prompt: str | None) -> list[ChatMessage]:
    """The starting history: the prompt as messages, the system prompt first, checked valid.

    Calls left unanswered by an earlier, interrupted run are closed with error results;
    orphaned or duplicated results raise :class:`HistoryError`.
    """
    if isinstance(prompt, str):
        messages = [ChatMessage.user(prompt)]
    elif isinstance(prompt, ChatMessage):
        messages = [prompt]
    else:
        messages = list(prompt)
        bad = [type(m).__name__ for m in messages if not isinstance(m, ChatMessage)]
        if bad:
            raise TypeError(
                f"messages must be ChatMessage objects, got {', '.join(sorted(set(bad)))}"
            )
    if system_prompt is not None:
        if messages and messages[0].role == "system":
            raise ValueError(
                "the messages already start with a system message; pass system_prompt=None "
                "or drop that message"
            )
        messages.insert(0, ChatMessage.system(system_prompt))
    if not messages:
        raise ValueError("nothing to send: the prompt is empty")
    from tooluse.providers.history import validate_history

    return validate_history(messages, repair=True)


def build_setup(
    backend: Any,
    *,
    tools: ToolsArg | None,
    tool_choice: ToolChoice,
    max_tool_iters: int,
    tool_call_parser: Any,
    params: SamplingParams | None,
    before_tool_call: Hooks,
    after_tool_call: AfterHooks,
    tool_timeout: float | None,
    tool_timeouts: Mapping[str, float] | None,
    max_concurrency: int | None,
    max_output_chars: int,
    injected: Mapping[str, Any] | None,
    max_identical_calls: int,
    final_answer_on_limit: bool,
    cancel: CancellationToken | None,
    stream: bool,
    terminal_validators: Mapping[str, TerminalValidator] | None = None,
    executor: AsyncToolExecutor | None = None,
) -> LoopSetup:
    """Check the options and build the loop's setup (shared by every entry point)."""
    if max_tool_iters < 0:
        raise ValueError("max_tool_iters must be >= 0")
    if max_identical_calls < 1:
        raise ValueError("max_identical_calls must be >= 1")
    owns_executor = executor is None
    if executor is None:
        executor = AsyncToolExecutor(
            tools,
            timeout=tool_timeout,
            timeouts=tool_timeouts,
            max_concurrency=max_concurrency,
            max_output_chars=max_output_chars,
            injected=injected,
            before=_hooks(before_tool_call),
            after=_hooks(after_tool_call),
        )
    names = {d.name for d in executor.definitions}
    if tool_choice not in ("auto", "none", "required") and tool_choice not in names:
        raise ValueError(
            f"tool_choice {tool_choice!r} names no given tool (tools: {', '.join(sorted(names))})"
        )
    mode = choose_mode(backend, bool(names), tool_call_parser)
    if mode == "none":
        logger.warning(
            "%d tools given but backend %s does not support function calling and no "
            "tool_call_parser is configured; tools will be ignored",
            len(names),
            backend_label(backend),
        )
    return LoopSetup(
        executor=executor,
        mode=mode,
        tool_choice=tool_choice if names else "auto",
        max_tool_iters=max_tool_iters,
        params=params,
        parser=tool_call_parser,
        stream=stream,
        max_identical_calls=max_identical_calls,
        final_answer_on_limit=final_answer_on_limit,
        cancel=cancel,
        terminal_validators=dict(terminal_validators or {}),
        close_executor=owns_executor,
    )


# -- drivers -----------------------------------------------------------------------------------


def _generate_sync(backend: Any, request: Generate) -> Iterator[Any]:
    """Yield stream events (if streaming), then the ``GenerationResult`` last."""
    stream = getattr(backend, "stream_with_tools", None) if request.stream else None
    if stream is None:
        yield backend.generate_with_tools(
            request.messages, request.tools, request.params, request.tool_choice
        )
        return
    result: GenerationResult | None = None
    for event in stream(request.messages, request.tools, request.params, request.tool_choice):
        if isinstance(event, GenerationDone):
            result = event.result
        else:
            yield event
    if result is None:
        raise RuntimeError(f"{backend_label(backend)} stream ended without a GenerationDone event")
    yield result


async def _generate_async(backend: Any, request: Generate) -> AsyncIterator[Any]:
    stream = getattr(backend, "astream_with_tools", None) if request.stream else None
    if stream is None:
        yield await backend.agenerate_with_tools(
            request.messages, request.tools, request.params, request.tool_choice
        )
        return
    result: GenerationResult | None = None
    async for event in stream(request.messages, request.tools, request.params, request.tool_choice):
        if isinstance(event, GenerationDone):
            result = event.result
        else:
            yield event
    if result is None:
        raise RuntimeError(f"{backend_label(backend)} stream ended without a GenerationDone event")
    yield result


def drive_sync(backend: Any, setup: LoopSetup, history: list[ChatMessage]) -> Iterator[LoopEvent]:
    """Run the loop with blocking calls, yielding its events; the last is ``RunFinished``."""
    steps = loop_steps(setup, history)
    outcome: Any = None
    try:
        while True:
            step = steps.send(outcome)
            outcome = None
            if isinstance(step, Generate):
                try:
                    for item in _generate_sync(backend, step):
                        if isinstance(item, GenerationResult):
                            outcome = item
                        else:
                            yield item
                except Exception as exc:
                    steps.throw(exc)  # the core attaches the partial run, then re-raises
                    raise
            elif isinstance(step, Execute):
                outcome = setup.executor.execute_batch(step.calls, cancel=setup.cancel)
            else:
                yield step
    except StopIteration as stop:
        yield RunFinished(result=stop.value)
    finally:
        if setup.close_executor:
            setup.executor.close()


async def drive_async(
    backend: Any, setup: LoopSetup, history: list[ChatMessage]
) -> AsyncIterator[LoopEvent]:
    """Run the loop with awaits, yielding its events; the last is ``RunFinished``."""
    steps = loop_steps(setup, history)
    outcome: Any = None
    try:
        while True:
            step = steps.send(outcome)
            outcome = None
            if isinstance(step, Generate):
                try:
                    async for item in _generate_async(backend, step):
                        if isinstance(item, GenerationResult):
                            outcome = item
                        else:
                            yield item
                except Exception as exc:
                    steps.throw(exc)  # the core attaches the partial run, then re-raises
                    raise
            elif isinstance(step, Execute):
                outcome = await setup.executor.execute_batch_async(step.calls, cancel=setup.cancel)
            else:
                yield step
    except StopIteration as stop:
        yield RunFinished(result=stop.value)
    finally:
        if setup.close_executor:
            setup.executor.close()


def _finish_sync(events: Iterator[LoopEvent], on_event: Callable[[Any], Any] | None) -> RunResult:
    result: RunResult | None = None
    for event in events:
        if on_event is not None:
            on_event(event)
        if isinstance(event, RunFinished):
            result = event.result
    if result is None:  # pragma: no cover - the drivers always end with RunFinished
        raise RuntimeError("the tool loop ended without a result")
    return result


# -- public entry points -------------------------------------------------------------------------


def iter_run(
    backend: Any,
    prompt: Prompt,
    *,
    tools: ToolsArg | None = None,
    tool_choice: ToolChoice = "auto",
    max_tool_iters: int = 10,
    system_prompt: str | None = None,
    tool_call_parser: Any = None,
    params: SamplingParams | None = None,
    before_tool_call: Hooks = None,
    after_tool_call: AfterHooks = None,
    stream: bool = False,
    tool_timeout: float | None = 30.0,
    tool_timeouts: Mapping[str, float] | None = None,
    max_concurrency: int | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    injected: Mapping[str, Any] | None = None,
    max_identical_calls: int = 3,
    final_answer_on_limit: bool = False,
    cancel: CancellationToken | None = None,
) -> Iterator[LoopEvent]:
    """Like :func:`run`, but yields the loop's events; the last one is :class:`RunFinished`."""
    setup = build_setup(
        backend,
        tools=tools,
        tool_choice=tool_choice,
        max_tool_iters=max_tool_iters,
        tool_call_parser=tool_call_parser,
        params=params,
        before_tool_call=before_tool_call,
        after_tool_call=after_tool_call,
        tool_timeout=tool_timeout,
        tool_timeouts=tool_timeouts,
        max_concurrency=max_concurrency,
        max_output_chars=max_output_chars,
        injected=injected,
        max_identical_calls=max_identical_calls,
        final_answer_on_limit=final_answer_on_limit,
        cancel=cancel,
        stream=stream,
    )
    return drive_sync(backend, setup, initial_history(prompt, system_prompt))


def run(
    backend: Any,
    prompt: Prompt,
    *,
    tools: ToolsArg | None = None,
    tool_choice: ToolChoice = "auto",
    max_tool_iters: int = 10,
    system_prompt: str | None = None,
    tool_call_parser: Any = None,
    params: SamplingParams | None = None,
    before_tool_call: Hooks = None,
    after_tool_call: AfterHooks = None,
    on_event: Callable[[Any], Any] | None = None,
    stream: bool = False,
    tool_timeout: float | None = 30.0,
    tool_timeouts: Mapping[str, float] | None = None,
    max_concurrency: int | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    injected: Mapping[str, Any] | None = None,
    max_identical_calls: int = 3,
    final_answer_on_limit: bool = False,
    cancel: CancellationToken | None = None,
) -> RunResult:
    """Run the tool loop to the end and return its :class:`RunResult`.

    - ``prompt``: user text, a ``ChatMessage`` or a history (left unchanged; the result's
      ``messages`` is the extended copy). ``system_prompt`` is put first.
    - ``tools``: functions, ``Tool`` objects, ``ToolDefinition``s with a ``function`` (terminal
      ones need none), or ``{name: function}``.
    - ``tool_choice``: ``"auto"``, ``"none"``, ``"required"`` or a tool name; a forced choice
      applies to the first round only (then ``"auto"``), except a terminal tool, which stays
      forced until its arguments pass validation.
    - ``max_tool_iters``: rounds of tool execution allowed; calls beyond are answered
      ``not executed`` and the run stops with ``StopReason.MAX_TOOL_ITERS`` (with
      ``final_answer_on_limit=True`` the last request forbids tools instead).
    - ``before_tool_call(call)`` may return a rewritten ``ToolCall``, a ``ToolResult`` or a
      ``Veto``; ``after_tool_call(call, result)`` may return a replacement ``ToolResult``.
    - ``on_event`` receives every loop event; ``stream=True`` asks a streaming backend for
      text deltas.
    - ``tool_timeout`` / ``tool_timeouts`` (per tool name), ``max_concurrency``,
      ``max_output_chars`` and ``injected`` configure the executor.
    - ``max_identical_calls``: how often the same call (name and arguments) runs before
      repeats are refused; a round of only refused repeats ends the run.
    - ``cancel``: a :class:`CancellationToken`; running calls are answered ``cancelled``.

    Errors of the backend propagate; the run so far (messages, trail, usage) is attached to
    the exception as ``partial_result`` (``stop_reason=StopReason.ERROR``).
    """
    events = iter_run(
        backend,
        prompt,
        tools=tools,
        tool_choice=tool_choice,
        max_tool_iters=max_tool_iters,
        system_prompt=system_prompt,
        tool_call_parser=tool_call_parser,
        params=params,
        before_tool_call=before_tool_call,
        after_tool_call=after_tool_call,
        stream=stream,
        tool_timeout=tool_timeout,
        tool_timeouts=tool_timeouts,
        max_concurrency=max_concurrency,
        max_output_chars=max_output_chars,
        injected=injected,
        max_identical_calls=max_identical_calls,
        final_answer_on_limit=final_answer_on_limit,
        cancel=cancel,
    )
    return _finish_sync(events, on_event)


def aiter_run(
    backend: Any,
    prompt: Prompt,
    *,
    tools: ToolsArg | None = None,
    tool_choice: ToolChoice = "auto",
    max_tool_iters: int = 10,
    system_prompt: str | None = None,
    tool_call_parser: Any = None,
    params: SamplingParams | None = None,
    before_tool_call: Hooks = None,
    after_tool_call: AfterHooks = None,
    stream: bool = False,
    tool_timeout: float | None = 30.0,
    tool_timeouts: Mapping[str, float] | None = None,
    max_concurrency: int | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    injected: Mapping[str, Any] | None = None,
    max_identical_calls: int = 3,
    final_answer_on_limit: bool = False,
    cancel: CancellationToken | None = None,
) -> AsyncIterator[LoopEvent]:
    """Like :func:`arun`, but an async iterator of the loop's events (last: ``RunFinished``)."""
    setup = build_setup(
        backend,
        tools=tools,
        tool_choice=tool_choice,
        max_tool_iters=max_tool_iters,
        tool_call_parser=tool_call_parser,
        params=params,
        before_tool_call=before_tool_call,
        after_tool_call=after_tool_call,
        tool_timeout=tool_timeout,
        tool_timeouts=tool_timeouts,
        max_concurrency=max_concurrency,
        max_output_chars=max_output_chars,
        injected=injected,
        max_identical_calls=max_identical_calls,
        final_answer_on_limit=final_answer_on_limit,
        cancel=cancel,
        stream=stream,
    )
    return drive_async(backend, setup, initial_history(prompt, system_prompt))


async def arun(
    backend: Any,
    prompt: Prompt,
    *,
    tools: ToolsArg | None = None,
    tool_choice: ToolChoice = "auto",
    max_tool_iters: int = 10,
    system_prompt: str | None = None,
    tool_call_parser: Any = None,
    params: SamplingParams | None = None,
    before_tool_call: Hooks = None,
    after_tool_call: AfterHooks = None,
    on_event: Callable[[Any], Any] | None = None,
    stream: bool = False,
    tool_timeout: float | None = 30.0,
    tool_timeouts: Mapping[str, float] | None = None,
    max_concurrency: int | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    injected: Mapping[str, Any] | None = None,
    max_identical_calls: int = 3,
    final_answer_on_limit: bool = False,
    cancel: CancellationToken | None = None,
) -> RunResult:
    """The async twin of :func:`run` (same options, same state machine); tools of a round run
    in parallel on the event loop and in worker threads."""
    events = aiter_run(
        backend,
        prompt,
        tools=tools,
        tool_choice=tool_choice,
        max_tool_iters=max_tool_iters,
        system_prompt=system_prompt,
        tool_call_parser=tool_call_parser,
        params=params,
        before_tool_call=before_tool_call,
        after_tool_call=after_tool_call,
        stream=stream,
        tool_timeout=tool_timeout,
        tool_timeouts=tool_timeouts,
        max_concurrency=max_concurrency,
        max_output_chars=max_output_chars,
        injected=injected,
        max_identical_calls=max_identical_calls,
        final_answer_on_limit=final_answer_on_limit,
        cancel=cancel,
    )
    result: RunResult | None = None
    async for event in events:
        if on_event is not None:
            on_event(event)
        if isinstance(event, RunFinished):
            result = event.result
    if result is None:  # pragma: no cover - the drivers always end with RunFinished
        raise RuntimeError("the tool loop ended without a result")
    return result
