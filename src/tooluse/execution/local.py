"""``ToolExecutor``: runs Python tools; validates each call, runs it, and always answers it.

Every path ends in exactly one :class:`ToolResult` per call id: unknown tools, arguments that
fail validation, exceptions, timeouts, cancellation, unrenderable or huge outputs all become
``ToolResult.failure`` (``error: ...`` text meant for the model) or a truncated success.

The calls of a batch run in parallel (:mod:`tooluse.execution.parallel`): coroutine tools on
the event loop, plain functions in worker threads, at most ``max_concurrency`` at once.
:class:`SimpleToolExecutor` runs them one after another in the calling thread instead.

Hooks run around each call: ``before`` hooks may rewrite the call, answer it themselves
(return a :class:`ToolResult`) or refuse it (return :class:`Veto`); ``after`` hooks may
rewrite the result. Hooks may be plain or ``async`` functions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import inspect
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from tooluse.errors import ToolExecutionError
from tooluse.execution.base import (
    DEFAULT_MAX_OUTPUT_CHARS,
    AbstractToolExecutor,
    AfterHook,
    BeforeHook,
    CancellationToken,
    PreparedCall,
    ToolsArg,
    Veto,
    normalize_tools,
    run_with_call_token,
    traced_call,
    truncate_output,
)
from tooluse.execution.parallel import aiter_parallel, iter_parallel
from tooluse.execution.worker_threads import DaemonThreadPool
from tooluse.messages import ToolCall, ToolResult
from tooluse.sync_bridge import run_coroutine_blocking
from tooluse.tools.definition import ToolDefinition

__all__ = ["AsyncToolExecutor", "SimpleToolExecutor", "ToolExecutor"]


def _tool_exit(name: str, exc: SystemExit) -> ToolExecutionError:
    """A tool's ``sys.exit()`` as an ordinary tool failure (the run goes on).

    ``KeyboardInterrupt`` is not converted: Ctrl-C still stops the run.
    """
    status = "()" if exc.code is None else f"({exc.code!r})"
    return ToolExecutionError(
        f"tool {name!r} called sys.exit{status}; a tool must return or raise instead",
        tool_name=name,
    )


class ToolExecutor(AbstractToolExecutor):
    """Runs Python tools; the calls of a batch in parallel, each under its own timeout.

    ``tools`` is ``{name: function}`` (as in llenvs) or a sequence of tool-like objects.
    ``injected`` values (e.g. ``{"agent": agent}``) are passed to parameters marked injected.
    ``timeout`` (seconds, ``None`` for none; 30 by default) applies to every tool unless
    ``timeouts`` names a tool; a sync tool that times out keeps running in its worker thread
    (threads cannot be killed; it runs in a daemon thread, so it never keeps the program from
    exiting) but its result is discarded. ``max_concurrency`` bounds how many calls of a batch
    run at once (``None``: all). Outputs longer than ``max_output_chars`` are truncated.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass that runs whole batches itself (an environment stepping a round at once;
        # the names of earlier releases included) reports a batch's results when it is done.
        for old, new in (("execute_batch_async", "aexecute_batch"), ("execute_async", "aexecute")):
            if old in cls.__dict__ and new not in cls.__dict__:
                setattr(cls, new, cls.__dict__[old])
        if "aexecute_batch" in cls.__dict__ and "aiter_batch" not in cls.__dict__:
            cls.aiter_batch = AbstractToolExecutor.aiter_batch  # type: ignore[method-assign]
        if "execute_batch" in cls.__dict__ and "iter_batch" not in cls.__dict__:
            cls.iter_batch = AbstractToolExecutor.iter_batch  # type: ignore[method-assign]

    def __init__(
        self,
        tools: ToolsArg | None = None,
        *,
        timeout: float | None = 30.0,
        timeouts: Mapping[str, float] | None = None,
        max_concurrency: int | None = None,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        injected: Mapping[str, Any] | None = None,
        before: Sequence[BeforeHook] = (),
        after: Sequence[AfterHook] = (),
    ) -> None:
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1 (or None for no limit)")
        self._definitions = normalize_tools(tools)
        self._by_name = {d.name: d for d in self._definitions}
        self.timeout = timeout
        self.timeouts = dict(timeouts or {})
        self.max_concurrency = max_concurrency
        self.max_output_chars = max_output_chars
        self.injected = dict(injected or {})
        self.before = tuple(before)
        self.after = tuple(after)
        self._max_workers = max_concurrency or 64
        self._pool: DaemonThreadPool | None = None
        self._pool_lock = threading.Lock()

    # -- description ---------------------------------------------------------------------------

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        return self._definitions

    def get(self, name: str) -> ToolDefinition | None:
        return self._by_name.get(name)

    def timeout_for(self, name: str) -> float | None:
        return self.timeouts.get(name, self.timeout)

    # -- batches -------------------------------------------------------------------------------

    async def aexecute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run calls in parallel; results come back in call order, one per call.

        When ``cancel`` fires, calls still running are cancelled and answered ``cancelled``.
        If the awaiting task itself is cancelled, the running calls are cancelled too and the
        ``CancelledError`` propagates.
        """
        results: dict[int, ToolResult] = {}
        batch = self.aiter_batch(calls, cancel=cancel)
        async with contextlib.aclosing(batch) as ended:  # type: ignore[type-var]
            async for index, result in ended:
                results[index] = result
        return tuple(results[i] for i in range(len(calls)))

    def aiter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> AsyncIterator[tuple[int, ToolResult]]:
        """Run calls in parallel, yielding ``(index, result)`` as each call ends (completed,
        failed, timed out or cancelled); every call gets exactly one result.

        Closing the iterator early, or cancelling the task iterating it, cancels the calls
        still running.
        """
        if len(calls) == 1 and cancel is None:
            return self._aone(calls[0])
        return aiter_parallel(self, calls, cancel)

    async def _aone(self, call: ToolCall) -> AsyncIterator[tuple[int, ToolResult]]:
        yield 0, await self.aexecute(call)

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run calls in parallel worker threads (sync code); results in call order."""
        results: dict[int, ToolResult] = dict(self.iter_batch(calls, cancel=cancel))
        return tuple(results[i] for i in range(len(calls)))

    def iter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> Iterator[tuple[int, ToolResult]]:
        """Run calls in parallel worker threads, yielding ``(index, result)`` as each call
        ends; every call gets exactly one result. Hooks run in the calling thread; each call's
        timeout counts from the batch start."""
        if len(calls) == 1 and cancel is None:
            # one call runs as a single call does (in this thread when it has no timeout)
            return iter(((0, self.execute(calls[0])),))
        return iter_parallel(self, calls, cancel)

    # -- the names of earlier releases -----------------------------------------------------------

    async def execute_async(self, call: ToolCall) -> ToolResult:
        """Same as :meth:`aexecute`."""
        return await self.aexecute(call)

    async def execute_batch_async(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Same as :meth:`aexecute_batch`."""
        return await self.aexecute_batch(calls, cancel=cancel)

    # -- one call: shared steps ------------------------------------------------------------------

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
            with traced_call(prepared.call.id):
                return prepared.definition.invoke(
                    prepared.arguments,
                    injected=self.injected,
                    call_id=prepared.call.id,
                    validate=False,
                )
        except SystemExit as exc:
            raise _tool_exit(prepared.call.name, exc) from None

    async def _invoke_async(self, prepared: PreparedCall) -> Any:
        # Converted here, inside the task: a SystemExit reaching asyncio's task machinery
        # would stop the event loop itself.
        try:
            with traced_call(prepared.call.id):
                return await prepared.definition.ainvoke(
                    prepared.arguments,
                    injected=self.injected,
                    call_id=prepared.call.id,
                    validate=False,
                )
        except SystemExit as exc:
            raise _tool_exit(prepared.call.name, exc) from None

    # -- one call: blocking -----------------------------------------------------------------------------

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
                token = CancellationToken()
                future = self._thread_pool().submit(
                    run_with_call_token, token, self._body_sync, state
                )
                try:
                    output = future.result(timeout=timeout)
                except concurrent.futures.TimeoutError:
                    future.cancel()
                    token.cancel()  # the tool may stop its own work (see current_call_token)
                    result = self._timed_out(call, timeout, started)
                    return self._run_hooks_after(call, result)
        except Exception as exc:
            result = self._failure(call, exc, time.perf_counter() - started)
        else:
            result = self._finish(call, output, started)
        return self._run_hooks_after(call, result)

    # -- one call: async ----------------------------------------------------------------------

    async def _hooks_before_async(self, call: ToolCall) -> ToolCall | ToolResult:
        for hook in self.before:
            verdict = hook(call)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            outcome = self._apply_before(call, verdict)
            if isinstance(outcome, ToolResult):
                return outcome
            call = outcome
        return call

    async def _hooks_after_async(self, call: ToolCall, result: ToolResult) -> ToolResult:
        for hook in self.after:
            verdict = hook(call, result)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            result = self._apply_after(result, verdict)
        return result

    async def _run_prepared_async(self, prepared: PreparedCall) -> Any:
        if self._is_async_tool(prepared.definition):
            return await self._invoke_async(prepared)
        loop = asyncio.get_running_loop()
        token = CancellationToken()
        try:
            return await loop.run_in_executor(
                self._thread_pool(), run_with_call_token, token, self._invoke_sync, prepared
            )
        except asyncio.CancelledError:  # cancelled or timed out: the thread runs on, told so
            token.cancel()
            raise

    async def aexecute(self, call: ToolCall) -> ToolResult:
        """Run one call on the running loop and return its result."""
        original = call
        outcome = await self._hooks_before_async(call)
        if isinstance(outcome, ToolResult):
            return await self._hooks_after_async(original, outcome)
        call = outcome
        prepared = self.prepare(call)
        if isinstance(prepared, ToolResult):
            return await self._hooks_after_async(call, prepared)
        missing = self._no_implementation(prepared)
        if missing is not None:
            return await self._hooks_after_async(call, missing)
        started = time.perf_counter()
        timeout = self.timeout_for(call.name)
        try:
            if timeout is None:
                output = await self._run_prepared_async(prepared)
            else:
                output = await asyncio.wait_for(self._run_prepared_async(prepared), timeout)
        except asyncio.TimeoutError:
            result = self._timed_out(call, timeout or 0.0, started)
        except Exception as exc:
            result = self._failure(call, exc, time.perf_counter() - started)
        else:
            result = self._finish(call, output, started)
        return await self._hooks_after_async(call, result)

    def close(self) -> None:
        """Release the worker threads (calls still running finish in the background)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


#: The name of earlier releases for the parallel executor.
AsyncToolExecutor = ToolExecutor


class SimpleToolExecutor(ToolExecutor):
    """Runs tool calls in the calling thread, one after another (no timeout by default)."""

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
        super().__init__(
            tools,
            timeout=timeout,
            timeouts=timeouts,
            max_output_chars=max_output_chars,
            injected=injected,
            before=before,
            after=after,
        )
        self._max_workers = max_workers

    def iter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> Iterator[tuple[int, ToolResult]]:
        """Run calls one after another; once ``cancel`` fires, the rest answer ``cancelled``."""
        for index, call in enumerate(calls):
            if cancel is not None and cancel.cancelled:
                yield index, self._cancelled(call, time.perf_counter())
            else:
                yield index, self.execute(call)

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        return tuple(result for _, result in self.iter_batch(calls, cancel=cancel))
