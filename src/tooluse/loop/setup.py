"""The setup of a run: the options every loop entry point takes (:class:`RunOptions`), their
checks and defaults (:func:`build_setup`), how tools reach the model (:func:`choose_mode`) and
the starting history (:func:`initial_history`)."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, Union

from tooluse.execution.base import (
    DEFAULT_MAX_OUTPUT_CHARS,
    AbstractToolExecutor,
    AfterHook,
    BeforeHook,
    CancellationToken,
    ToolsArg,
)
from tooluse.execution.code_mode import CodeMode, CodeModeExecutor
from tooluse.execution.local import ToolExecutor
from tooluse.loop.core import ApprovalPolicy, LoopSetup, logger
from tooluse.loop.types import TerminalValidator, ToolMode
from tooluse.messages import ChatMessage
from tooluse.providers.base import Backend, SamplingParams, ToolChoice
from tooluse.retrieval.tool_search import ToolSearch

__all__ = [
    "AfterHooks",
    "Hooks",
    "Prompt",
    "RunOptions",
    "backend_label",
    "build_setup",
    "choose_mode",
    "initial_history",
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


def backend_label(backend: object) -> str:
    """How warnings name a backend: its class, plus its ``name`` when it has one."""
    cls = type(backend).__name__
    name = getattr(backend, "name", None)
    return f"{cls}({name!r})" if isinstance(name, str) and name and name != cls else cls


def choose_mode(backend: Backend, has_tools: bool, parser: Any) -> ToolMode:
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


class RunOptions(TypedDict, total=False):
    """The options of every loop entry point (:func:`run`, :func:`arun`, :func:`iter_run`,
    :func:`aiter_run`); :func:`run` documents each one, :func:`build_setup` holds the defaults."""

    tools: ToolsArg | ToolSearch | None
    tool_choice: ToolChoice
    max_tool_iters: int
    tool_call_parser: Any
    params: SamplingParams | None
    before_tool_call: Hooks
    after_tool_call: AfterHooks
    stream: bool
    tool_timeout: float | None
    tool_timeouts: Mapping[str, float] | None
    max_concurrency: int | None
    max_output_chars: int
    injected: Mapping[str, Any] | None
    max_identical_calls: int
    final_answer_on_limit: bool
    cancel: CancellationToken | None
    tools_top_k: int | None
    tool_scorer: Any
    approve: ApprovalPolicy | None
    checkpoint: str | os.PathLike[str] | None
    tracer: Any
    code_mode: bool | CodeMode


def build_setup(  # noqa: PLR0913 - the run options (RunOptions), all keyword-only
    backend: Backend,
    *,
    tools: ToolsArg | ToolSearch | None = None,
    tool_choice: ToolChoice = "auto",
    max_tool_iters: int = 10,
    tool_call_parser: Any = None,
    params: SamplingParams | None = None,
    before_tool_call: Hooks = None,
    after_tool_call: AfterHooks = None,
    tool_timeout: float | None = 30.0,
    tool_timeouts: Mapping[str, float] | None = None,
    max_concurrency: int | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    injected: Mapping[str, Any] | None = None,
    max_identical_calls: int = 3,
    final_answer_on_limit: bool = False,
    cancel: CancellationToken | None = None,
    stream: bool = False,
    terminal_validators: Mapping[str, TerminalValidator] | None = None,
    executor: AbstractToolExecutor | None = None,
    tools_top_k: int | None = None,
    tool_scorer: Any = None,
    approve: ApprovalPolicy | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    tracer: Any = None,
    code_mode: bool | CodeMode = False,
) -> LoopSetup:
    """Check the options and build the loop's setup (shared by every entry point)."""
    _check_limits(max_tool_iters, tools_top_k, max_identical_calls)
    tool_search = tools if isinstance(tools, ToolSearch) else None
    plain_tools = tool_search.tools if tool_search is not None else tools
    assert not isinstance(plain_tools, ToolSearch)
    owns_executor = executor is None
    if executor is None:
        executor = ToolExecutor(
            plain_tools,
            timeout=tool_timeout,
            timeouts=tool_timeouts,
            max_concurrency=max_concurrency,
            max_output_chars=max_output_chars,
            injected=injected,
            before=_hooks(before_tool_call),
            after=_hooks(after_tool_call),
        )
    executor = _with_code_mode(executor, code_mode, approve, owns_executor)
    names = {d.name for d in executor.definitions}
    if tool_choice not in ("auto", "none", "required") and tool_choice not in names:
        raise ValueError(
            f"tool_choice {tool_choice!r} names no given tool (tools: {', '.join(sorted(names))})"
        )
    mode = choose_mode(backend, bool(names), tool_call_parser)
    params, tool_search = _with_native_search(backend, mode, tool_search, params, names)
    params = _with_provider_programs(backend, mode, code_mode, params)
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
        tools_top_k=tools_top_k,
        tool_scorer=tool_scorer,
        approve=approve,
        checkpoint_path=Path(checkpoint) if checkpoint is not None else None,
        tracer=_run_tracer(tracer),
        tool_search=tool_search,
    )


def _with_code_mode(
    executor: AbstractToolExecutor,
    code_mode: bool | CodeMode,
    approve: ApprovalPolicy | None,
    owns_executor: bool,
) -> AbstractToolExecutor:
    """The executor, behind the program tool in code mode; without code mode a tool only
    programs may call is refused (nothing could call it)."""
    if code_mode is not False and not isinstance(code_mode, CodeMode) and code_mode is not True:
        raise TypeError(f"code_mode is True, False or a CodeMode, not {code_mode!r}")
    if isinstance(code_mode, CodeMode) and code_mode.provider:
        return executor  # the provider runs the programs; their calls come as calls
    if isinstance(code_mode, CodeMode) or code_mode is True:
        settings = code_mode if isinstance(code_mode, CodeMode) else CodeMode()
        return CodeModeExecutor(executor, settings, approve=approve, close_inner=owns_executor)
    only_code = sorted(
        d.name for d in executor.definitions if d.callers is not None and "direct" not in d.callers
    )
    if only_code:
        raise ValueError(
            f"{', '.join(only_code)} can be called only from programs (callers=('code',)); "
            "pass code_mode=True"
        )
    return executor


def _with_provider_programs(
    backend: Backend, mode: ToolMode, code_mode: bool | CodeMode, params: SamplingParams | None
) -> SamplingParams | None:
    """The run's params with ``code_execution`` on for ``CodeMode(provider=True)``; a backend
    without code execution of its own is refused."""
    if not (isinstance(code_mode, CodeMode) and code_mode.provider):
        return params
    capabilities = getattr(backend, "capabilities", None)
    if mode != "native" or not getattr(capabilities, "supports_code_execution", False):
        raise ValueError(
            f"{backend_label(backend)} runs no programs of its own (supports_code_execution is "
            "off); use code_mode=True to run them in tooluse's sandbox"
        )
    return dataclasses.replace(params or SamplingParams(), code_execution=True)


def _with_native_search(
    backend: Backend,
    mode: ToolMode,
    search: ToolSearch | None,
    params: SamplingParams | None,
    names: set[str],
) -> tuple[SamplingParams | None, ToolSearch | None]:
    """The run's params and tool search: where the provider searches tools itself, every tool
    goes out deferred (but those named ``always``) and the loop answers no ``search_tools``."""
    capabilities = getattr(backend, "capabilities", None)
    supported = mode == "native" and bool(getattr(capabilities, "supports_tool_search", False))
    if search is None or not search.uses_native(supported):
        return params, search
    deferred = frozenset(names - set(search.always))
    return dataclasses.replace(params or SamplingParams(), deferred_tools=deferred), None


def _run_tracer(tracer: Any) -> Any:
    """The run's tracer: ``tracer`` (an OpenTelemetry tracer), else the one
    ``tooluse.instrument()`` set, else none."""
    if tracer is not None:
        from tooluse.loop.telemetry import RunTracer

        return tracer if isinstance(tracer, RunTracer) else RunTracer(tracer)
    # Looked up without importing: a program that never called instrument() never loads
    # OpenTelemetry for its runs.
    telemetry = sys.modules.get("tooluse.loop.telemetry")
    return telemetry.current() if telemetry is not None else None


def _check_limits(max_tool_iters: int, tools_top_k: int | None, max_identical_calls: int) -> None:
    if max_tool_iters < 0:
        raise ValueError("max_tool_iters must be >= 0")
    if tools_top_k is not None and tools_top_k < 1:
        raise ValueError("tools_top_k must be >= 1")
    if max_identical_calls < 1:
        raise ValueError("max_identical_calls must be >= 1")
