"""Executors for Python tools: validate a call, run it, and always answer it with a ToolResult.

Every path ends in exactly one :class:`ToolResult` per call id: unknown tools, arguments that
fail validation, exceptions, timeouts, cancellation, unrenderable or huge outputs all become
``ToolResult.failure`` (``error: ...`` text meant for the model) or a truncated success.

- :class:`SimpleToolExecutor` (here) runs calls one after another in the calling thread.
- :class:`~tooluse.execution.parallel.AsyncToolExecutor` runs a batch in parallel.

Hooks run around each call: ``before`` hooks may rewrite the call, answer it themselves
(return a :class:`ToolResult`) or refuse it (return :class:`Veto`); ``after`` hooks may
rewrite the result. Hooks may be plain or ``async`` functions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from tooluse.errors import ToolDefinitionError, ToolExecutionError, ToolNotFoundError
from tooluse.execution.worker_threads import DaemonThreadPool
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "AfterHook",
    "BeforeHook",
    "CancellationToken",
    "SimpleToolExecutor",
    "ToolsArg",
    "Veto",
    "normalize_tools",
    "run_coroutine_blocking",
    "truncate_output",
]

T = TypeVar("T")

#: Tool outputs longer than this (in characters) are cut, keeping the head and the tail.
DEFAULT_MAX_OUTPUT_CHARS = 20_000

#: What callers may pass as tools: ``{name: function}`` or a sequence of tool-like objects
#: (functions, ``Tool`` objects, ``ToolDefinition``s with a ``function``).
ToolsArg = Union[Mapping[str, Any], Iterable[Any]]


@dataclass(frozen=True, kw_only=True)
class Veto:
    """Returned by a ``before`` hook to refuse a call; ``reason`` goes to the model."""

    reason: str = "refused by policy"


BeforeHook = Callable[[ToolCall], Any]
"""``hook(call)`` -> ``None`` (run as is), a rewritten ``ToolCall``, a ``ToolResult`` or a
:class:`Veto` (possibly awaitable)."""

AfterHook = Callable[[ToolCall, ToolResult], Any]
"""``hook(call, result)`` -> ``None`` (keep) or a replacement ``ToolResult`` (possibly awaitable)."""


class CancellationToken:
    """A thread-safe flag that asks running tool calls (and the loop) to stop.

    Calls still running when it fires are answered with ``error: cancelled`` results, so a
    history built from them stays valid.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Fire the token (idempotent); registered callbacks run once, in this thread."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the token fires (right away if it already has)."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def remove_callback(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)


def run_coroutine_blocking(awaitable: Awaitable[T]) -> T:
    """Run an awaitable to completion from synchronous code.

    Uses ``asyncio.run`` when this thread has no running loop; otherwise (sync code called
    from inside a loop, as in notebooks) runs it on a fresh loop in a helper thread.
    """

    async def _wrap() -> T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_wrap())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _wrap()).result()


def truncate_output(text: str, limit: int) -> tuple[str, int]:
    """Cut ``text`` to about ``limit`` characters, keeping head and tail around a marker.

    Returns the text and the number of characters removed (0 when nothing was cut).
    """
    if limit <= 0 or len(text) <= limit:
        return text, 0
    removed = len(text) - limit
    marker = f"\n[... output truncated: {removed} of {len(text)} characters removed ...]\n"
    head = (limit * 3) // 4
    tail = limit - head
    return text[:head] + marker + (text[-tail:] if tail else ""), removed


def normalize_tools(tools: ToolsArg | None) -> tuple[ToolDefinition, ...]:
    """Tool-like objects as ``ToolDefinition``s; ``{name: fn}`` names each tool by its key.

    Raises :class:`ToolDefinitionError` when two tools share a name.
    """
    if tools is None:
        return ()
    definitions: list[ToolDefinition] = []
    if isinstance(tools, Mapping):
        for name, obj in tools.items():
            if isinstance(obj, ToolDefinition):
                definition = obj if obj.name == name else dataclasses.replace(obj, name=name)
            elif callable(obj) and not hasattr(obj, "schema") and not isinstance(obj, type):
                # The key names the tool, so lambdas and partials work too (as in llenvs).
                definition = ToolDefinition.from_callable(obj, name=name)
            else:
                definition = _as_tool(obj)
                if definition.name != name:
                    definition = dataclasses.replace(definition, name=name)
            definitions.append(definition)
    else:
        definitions = [d if isinstance(d, ToolDefinition) else _as_tool(d) for d in tools]
    seen: set[str] = set()
    for definition in definitions:
        if definition.name in seen:
            raise ToolDefinitionError(
                f"two tools are named {definition.name!r}; names must be unique"
            )
        seen.add(definition.name)
    return tuple(definitions)


def _as_tool(obj: Any) -> ToolDefinition:
    # Imported on use: the normaliser pulls in the schema and validation stack.
    from tooluse.tools import as_tool

    return as_tool(obj)  # type: ignore[no-any-return]


def _tool_exit(name: str, exc: SystemExit) -> ToolExecutionError:
    """A tool's ``sys.exit()`` as an ordinary tool failure (the run goes on).

    ``KeyboardInterrupt`` is not converted: Ctrl-C still stops the run.
    """
    status = "()" if exc.code is None else f"({exc.code!r})"
    return ToolExecutionError(
        f"tool {name!r} called sys.exit{status}; a tool must return or raise instead",
        tool_name=name,
    )


@dataclass(frozen=True, kw_only=True)
class PreparedCall:
    """A call that passed lookup and validation and is ready to run."""

    call: ToolCall
    definition: ToolDefinition
    arguments: dict[str, Any]


def _call_arguments(call: ToolCall) -> Any:
    """What to validate: the decoded object, or the raw text when the model's JSON was broken."""
    raw = call.raw_arguments
    if not call.arguments and raw is not None and raw.strip() not in ("", "null", "{}"):
        return raw
    return call.arguments


class SimpleToolExecutor:
    """Runs tool calls in the calling thread, one after another.

    ``tools`` is ``{name: function}`` (as in llenvs) or a sequence of tool-like objects.
    ``injected`` values (e.g. ``{"agent": agent}``) are passed to parameters marked injected.
    ``timeout`` (seconds, ``None`` for none) applies to every tool unless ``timeouts`` names a
    tool; a sync tool that times out keeps running in its worker thread (threads cannot be
    killed; it runs in a daemon thread, so it never keeps the program from exiting) but its
    result is discarded. Outputs longer than ``max_output_chars`` are truncated.
    """

    def __init__(
        self,
        tools: ToolsArg | None = None,
        *,
        timeout: float | None = None,
        timeouts: Mapping[str, float] | None = None,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        injected: Mapping[str, Any] | None = None,
        before: Sequence[BeforeHook] = (),
        after: Sequence[AfterHook] = (),
        max_workers: int = 64,
    ) -> None:
        self._definitions = normalize_tools(tools)
        self._by_name = {d.name: d for d in self._definitions}
        self.timeout = timeout
        self.timeouts = dict(timeouts or {})
        self.max_output_chars = max_output_chars
        self.injected = dict(injected or {})
        self.before = tuple(before)
        self.after = tuple(after)
        self._max_workers = max_workers
        self._pool: DaemonThreadPool | None = None
        self._pool_lock = threading.Lock()

    # -- description ---------------------------------------------------------------------------

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        return self._definitions

    def has_tool(self, name: str) -> bool:
        return name in self._by_name

    def get(self, name: str) -> ToolDefinition | None:
        return self._by_name.get(name)

    def timeout_for(self, name: str) -> float | None:
        return self.timeouts.get(name, self.timeout)

    # -- shared steps (pure) -------------------------------------------------------------------

    def prepare(self, call: ToolCall) -> PreparedCall | ToolResult:
        """Look the tool up and validate the arguments; a failure result when either fails."""
        definition = self._by_name.get(call.name)
        if definition is None:
            return ToolResult.failure(
                call.id, call.name, ToolNotFoundError(call.name, tuple(self._by_name))
            )
        try:
            arguments = definition.validate_arguments(_call_arguments(call))
        except Exception as exc:  # every validation problem is the model's to fix
            return ToolResult.failure(call.id, call.name, exc)
        return PreparedCall(call=call, definition=definition, arguments=dict(arguments))

    def _finish(self, call: ToolCall, output: Any, started: float) -> ToolResult:
        """Turn what a tool returned into its result: passthrough, render, truncate, time."""
        duration = time.perf_counter() - started
        if isinstance(output, ToolResult):
            result = dataclasses.replace(output, call_id=call.id, tool_name=call.name)
        else:
            try:
                result = ToolResult.success(call.id, call.name, output)
            except Exception as exc:  # __str__ of the output raised: not showable
                return self._failure(
                    call,
                    f"the tool returned a {type(output).__name__} that cannot be shown as text ({exc})",
                    duration,
                )
        text, removed = truncate_output(result.output, self.max_output_chars)
        metadata = dict(result.metadata)
        metadata["duration"] = duration
        if removed:
            metadata["truncated_chars"] = removed
        return dataclasses.replace(result, output=text, metadata=metadata)

    def _failure(self, call: ToolCall, error: Any, duration: float = 0.0) -> ToolResult:
        result = ToolResult.failure(call.id, call.name, error)
        return dataclasses.replace(result, metadata={**result.metadata, "duration": duration})

    def _timed_out(self, call: ToolCall, timeout: float, started: float) -> ToolResult:
        return self._failure(
            call,
            f"tool {call.name!r} timed out after {timeout:g} s and was stopped",
            time.perf_counter() - started,
        )

    def _cancelled(self, call: ToolCall, started: float) -> ToolResult:
        return self._failure(
            call, "cancelled before it finished", max(0.0, time.perf_counter() - started)
        )

    def _apply_before(self, call: ToolCall, verdict: Any) -> ToolCall | ToolResult:
        if verdict is None or verdict is True:
            return call
        if isinstance(verdict, Veto):
            return self._failure(call, f"call refused: {verdict.reason}")
        if verdict is False:
            return self._failure(call, "call refused")
        if isinstance(verdict, ToolResult):
            return dataclasses.replace(verdict, call_id=call.id, tool_name=call.name)
        if isinstance(verdict, ToolCall):
            # A rewrite may change name and arguments, never the id the model is waiting on.
            return dataclasses.replace(verdict, id=call.id)
        raise TypeError(
            "a before-call hook returns None, a ToolCall, a ToolResult or a Veto, "
            f"not {type(verdict).__name__}"
        )

    @staticmethod
    def _apply_after(result: ToolResult, verdict: Any) -> ToolResult:
        if verdict is None:
            return result
        if isinstance(verdict, ToolResult):
            return dataclasses.replace(verdict, call_id=result.call_id)
        raise TypeError(
            f"an after-call hook returns None or a ToolResult, not {type(verdict).__name__}"
        )

    def _is_async_tool(self, definition: ToolDefinition) -> bool:
        fn = definition.function
        return fn is not None and (
            inspect.iscoroutinefunction(fn)
            or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
        )

    def _no_implementation(self, prepared: PreparedCall) -> ToolResult | None:
        if prepared.definition.function is None:
            return self._failure(
                prepared.call, f"tool {prepared.call.name!r} has no implementation to run"
            )
        return None

    def _invoke_sync(self, prepared: PreparedCall) -> Any:
        try:
            return prepared.definition.invoke(
                prepared.arguments, injected=self.injected, call_id=prepared.call.id, validate=False
            )
        except SystemExit as exc:
            raise _tool_exit(prepared.call.name, exc) from None

    async def _invoke_async(self, prepared: PreparedCall) -> Any:
        # Converted here, inside the task: a SystemExit reaching asyncio's task machinery
        # would stop the event loop itself.
        try:
            return await prepared.definition.ainvoke(
                prepared.arguments, injected=self.injected, call_id=prepared.call.id, validate=False
            )
        except SystemExit as exc:
            raise _tool_exit(prepared.call.name, exc) from None

    # -- sync path -----------------------------------------------------------------------------

    def _thread_pool(self) -> DaemonThreadPool:
        with self._pool_lock:
            if self._pool is None:
                self._pool = DaemonThreadPool(self._max_workers)
            return self._pool

    def _run_hooks_before(self, call: ToolCall) -> ToolCall | ToolResult:
        for hook in self.before:
            verdict = hook(call)
            if inspect.isawaitable(verdict):
                verdict = run_coroutine_blocking(verdict)
            outcome = self._apply_before(call, verdict)
            if isinstance(outcome, ToolResult):
                return outcome
            call = outcome
        return call

    def _run_hooks_after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        for hook in self.after:
            verdict = hook(call, result)
            if inspect.isawaitable(verdict):
                verdict = run_coroutine_blocking(verdict)
            result = self._apply_after(result, verdict)
        return result

    def _start_sync(self, call: ToolCall) -> tuple[ToolCall, ToolResult | PreparedCall]:
        """Hooks, lookup and validation; a result when the call ends before it runs."""
        outcome = self._run_hooks_before(call)
        if isinstance(outcome, ToolResult):
            return call, outcome
        call = outcome
        prepared = self.prepare(call)
        if isinstance(prepared, ToolResult):
            return call, prepared
        missing = self._no_implementation(prepared)
        return call, (missing if missing is not None else prepared)

    def _body_sync(self, prepared: PreparedCall) -> Any:
        """Run one prepared call to its raw output (in whatever thread calls this)."""
        if self._is_async_tool(prepared.definition):
            return run_coroutine_blocking(self._invoke_async(prepared))
        return self._invoke_sync(prepared)

    def execute(self, call: ToolCall) -> ToolResult:
        """Run one call and return its result (never raises for tool or model mistakes)."""
        original = call
        call, state = self._start_sync(call)
        if isinstance(state, ToolResult):
            return self._run_hooks_after(original, dataclasses.replace(state, call_id=original.id))
        started = time.perf_counter()
        timeout = self.timeout_for(call.name)
        try:
            if timeout is None:
                output = self._body_sync(state)
            else:
                future = self._thread_pool().submit(self._body_sync, state)
                try:
                    output = future.result(timeout=timeout)
                except concurrent.futures.TimeoutError:
                    future.cancel()
                    result = self._timed_out(call, timeout, started)
                    return self._run_hooks_after(call, result)
        except Exception as exc:
            result = self._failure(call, exc, time.perf_counter() - started)
        else:
            result = self._finish(call, output, started)
        return self._run_hooks_after(call, result)

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run calls one after another; once ``cancel`` fires, the rest answer ``cancelled``."""
        results: list[ToolResult] = []
        for call in calls:
            if cancel is not None and cancel.cancelled:
                results.append(self._cancelled(call, time.perf_counter()))
            else:
                results.append(self.execute(call))
        return tuple(results)

    def close(self) -> None:
        """Release the worker threads (calls still running finish in the background)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> SimpleToolExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def __getattr__(name: str) -> Any:
    # AsyncToolExecutor lives in tooluse.execution.parallel (it builds on this module); older
    # imports from here keep working.
    if name == "AsyncToolExecutor":
        from tooluse.execution.parallel import AsyncToolExecutor

        return AsyncToolExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
