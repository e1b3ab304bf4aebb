"""``AsyncToolExecutor``: the calls of a batch in parallel, each under its own timeout.

Coroutine tools run on the event loop, plain functions in worker threads, at most
``max_concurrency`` at once. Every call gets exactly one result, also when the batch is
cancelled through a :class:`CancellationToken`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import inspect
import time
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED
from typing import Any

from tooluse.execution.local import (
    DEFAULT_MAX_OUTPUT_CHARS,
    AfterHook,
    BeforeHook,
    CancellationToken,
    PreparedCall,
    SimpleToolExecutor,
    ToolsArg,
)
from tooluse.messages import ToolCall, ToolResult

__all__ = ["AsyncToolExecutor"]


class AsyncToolExecutor(SimpleToolExecutor):
    """Runs the calls of a batch in parallel, each under its own timeout.

    Coroutine tools run on the event loop; plain functions run in worker threads (so one slow
    sync tool does not block the others). ``max_concurrency`` bounds how many calls of a batch
    run at once (``None``: all). ``timeout`` defaults to 30 s per call.
    """

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
        super().__init__(
            tools,
            timeout=timeout,
            timeouts=timeouts,
            max_output_chars=max_output_chars,
            injected=injected,
            before=before,
            after=after,
            max_workers=max_concurrency or 64,
        )
        self.max_concurrency = max_concurrency

    # -- async path ----------------------------------------------------------------------------

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
        return await loop.run_in_executor(self._thread_pool(), self._invoke_sync, prepared)

    async def execute_async(self, call: ToolCall) -> ToolResult:
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

    async def execute_batch_async(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run calls in parallel; results come back in call order, one per call.

        When ``cancel`` fires, calls still running are cancelled and answered ``cancelled``.
        If the awaiting task itself is cancelled, the running calls are cancelled too and the
        ``CancelledError`` propagates.
        """
        if len(calls) == 1 and cancel is None:
            return (await self.execute_async(calls[0]),)
        results: dict[int, ToolResult] = {}
        async with contextlib.aclosing(self.aiter_batch(calls, cancel=cancel)) as ended:
            async for index, result in ended:
                results[index] = result
        return tuple(results[i] for i in range(len(calls)))

    async def aiter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> AsyncGenerator[tuple[int, ToolResult], None]:
        """Run calls in parallel, yielding ``(index, result)`` as each call ends (completed,
        failed, timed out or cancelled); every call gets exactly one result.

        Closing the iterator early, or cancelling the task iterating it, cancels the calls
        still running.
        """
        if not calls:
            return
        started = time.perf_counter()
        if cancel is not None and cancel.cancelled:
            for index, call in enumerate(calls):
                yield index, self._cancelled(call, started)
            return
        semaphore = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else None

        async def bounded(call: ToolCall) -> ToolResult:
            if semaphore is None:
                return await self.execute_async(call)
            async with semaphore:
                return await self.execute_async(call)

        running = {asyncio.ensure_future(bounded(call)): i for i, call in enumerate(calls)}
        loop = asyncio.get_running_loop()
        fired: asyncio.Future[None] = loop.create_future()

        def set_fired() -> None:
            if not fired.done():
                fired.set_result(None)

        def on_cancel() -> None:  # the token may fire in any thread
            loop.call_soon_threadsafe(set_fired)

        if cancel is not None:
            cancel.add_callback(on_cancel)
        try:
            while running:
                waiting: set[asyncio.Future[Any]] = {*running, fired}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if fired in done:
                    for task in running:
                        task.cancel()
                    await asyncio.wait(running)
                for task in [t for t in running if t.done()]:
                    index = running.pop(task)
                    call = calls[index]
                    if task.cancelled():
                        yield index, self._cancelled(call, started)
                    elif task.exception() is not None:
                        # Only a hook can raise here; the call still gets its answer.
                        yield index, self._failure(call, task.exception())
                    else:
                        yield index, task.result()
        finally:
            if cancel is not None:
                cancel.remove_callback(on_cancel)
            if not fired.done():
                fired.cancel()
            if running:  # the consumer stopped early or was cancelled
                for task in running:
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)

    # -- sync facade: the same batch semantics from synchronous code -----------------------------

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run calls in parallel worker threads (sync code); results in call order."""
        if len(calls) == 1 and cancel is None:
            return (self.execute(calls[0]),)
        results: dict[int, ToolResult] = dict(self.iter_batch(calls, cancel=cancel))
        return tuple(results[i] for i in range(len(calls)))

    def iter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> Iterator[tuple[int, ToolResult]]:
        """Run calls in parallel worker threads, yielding ``(index, result)`` as each call
        ends (completed, failed, timed out or cancelled); every call gets exactly one result.

        Hooks run in the calling thread; each call's timeout counts from the batch start.
        """
        if not calls:
            return
        started = time.perf_counter()
        if cancel is not None and cancel.cancelled:
            for index, call in enumerate(calls):
                yield index, self._cancelled(call, started)
            return
        pool = self._thread_pool()
        running: dict[concurrent.futures.Future[Any], int] = {}
        deadlines: dict[int, float] = {}
        ran: dict[int, ToolCall] = {}  # the call as it ran (a before-hook may rewrite it)
        for index, original in enumerate(calls):
            call, state = self._start_sync(original)
            if isinstance(state, ToolResult):
                state = dataclasses.replace(state, call_id=call.id)
                yield index, self._run_hooks_after(original, state)
                continue
            ran[index] = call
            running[pool.submit(self._body_sync, state)] = index
            timeout = self.timeout_for(call.name)
            if timeout is not None:
                deadlines[index] = started + timeout
        fired: concurrent.futures.Future[None] = concurrent.futures.Future()

        def set_fired() -> None:
            if not fired.done():
                fired.set_result(None)

        if cancel is not None:
            cancel.add_callback(set_fired)
        try:
            while running:
                waiting = [deadlines[i] for i in running.values() if i in deadlines]
                wait_for = max(0.0, min(waiting) - time.perf_counter()) if waiting else None
                done, _ = concurrent.futures.wait(
                    {*running, fired}, timeout=wait_for, return_when=FIRST_COMPLETED
                )
                now = time.perf_counter()
                for future in list(running):
                    index = running[future]
                    call = ran[index]
                    if future in done:
                        try:
                            result = self._finish(call, future.result(), started)
                        except Exception as exc:
                            result = self._failure(call, exc, now - started)
                    elif fired in done:
                        future.cancel()
                        result = self._cancelled(call, started)
                    elif index in deadlines and deadlines[index] <= now:
                        future.cancel()
                        result = self._timed_out(call, self.timeout_for(call.name) or 0.0, started)
                    else:
                        continue
                    del running[future]
                    yield index, self._run_hooks_after(call, result)
        finally:
            if cancel is not None:
                cancel.remove_callback(set_fired)
            for future in running:  # the consumer stopped early: nothing more will be read
                future.cancel()
