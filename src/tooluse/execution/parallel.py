"""The parallel batch runs of :class:`~tooluse.execution.local.ToolExecutor`, async and
blocking: every call of a batch at once (up to ``max_concurrency``), each under its own timeout,
each one's result handed on as soon as it ends, and exactly one result per call, also when the
batch is cancelled through a :class:`CancellationToken` or its consumer stops early.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import time
from collections.abc import AsyncGenerator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED
from typing import Any, Protocol

from tooluse.execution.base import CancellationToken, PreparedCall, run_with_call_token
from tooluse.messages import ToolCall, ToolResult

__all__ = ["CallRunner", "aiter_parallel", "iter_parallel"]


class CallRunner(Protocol):
    """The single-call steps of an executor that the batch runs build on."""

    max_concurrency: int | None

    async def aexecute(self, call: ToolCall) -> ToolResult: ...
    def timeout_for(self, name: str) -> float | None: ...
    def _start_sync(self, call: ToolCall) -> tuple[ToolCall, ToolResult | PreparedCall]: ...
    def _body_sync(self, prepared: PreparedCall) -> Any: ...
    def _thread_pool(self) -> concurrent.futures.Executor: ...
    def _run_hooks_after(self, call: ToolCall, result: ToolResult) -> ToolResult: ...
    def _finish(self, call: ToolCall, output: Any, started: float) -> ToolResult: ...
    def _failure(self, call: ToolCall, error: Any, duration: float = 0.0) -> ToolResult: ...
    def _timed_out(self, call: ToolCall, timeout: float, started: float) -> ToolResult: ...
    def _cancelled(self, call: ToolCall, started: float) -> ToolResult: ...


def _all_cancelled(
    runner: CallRunner, calls: Sequence[ToolCall], started: float
) -> Iterator[tuple[int, ToolResult]]:
    for index, call in enumerate(calls):
        yield index, runner._cancelled(call, started)


async def aiter_parallel(
    runner: CallRunner, calls: Sequence[ToolCall], cancel: CancellationToken | None
) -> AsyncGenerator[tuple[int, ToolResult], None]:
    """``(index, result)`` of each call as it ends, the calls running concurrently on the
    event loop (sync tools in worker threads)."""
    if not calls:
        return
    started = time.perf_counter()
    if cancel is not None and cancel.cancelled:
        for item in _all_cancelled(runner, calls, started):
            yield item
        return
    batch = _AsyncBatch(runner, calls, started)
    if cancel is not None:
        cancel.add_callback(batch.on_cancel)
    try:
        while batch.running:
            for item in await batch.next_ended():
                yield item
    finally:
        if cancel is not None:
            cancel.remove_callback(batch.on_cancel)
        await batch.close()


class _AsyncBatch:
    """The tasks of one async batch and the future that the cancellation token fires."""

    def __init__(self, runner: CallRunner, calls: Sequence[ToolCall], started: float) -> None:
        self.runner = runner
        self.calls = calls
        self.started = started
        limit = runner.max_concurrency
        self.semaphore = asyncio.Semaphore(limit) if limit else None
        self.running = {asyncio.ensure_future(self._bounded(c)): i for i, c in enumerate(calls)}
        self.loop = asyncio.get_running_loop()
        self.fired: asyncio.Future[None] = self.loop.create_future()

    async def _bounded(self, call: ToolCall) -> ToolResult:
        if self.semaphore is None:
            return await self.runner.aexecute(call)
        async with self.semaphore:
            return await self.runner.aexecute(call)

    def _set_fired(self) -> None:
        if not self.fired.done():
            self.fired.set_result(None)

    def on_cancel(self) -> None:  # the token may fire in any thread
        self.loop.call_soon_threadsafe(self._set_fired)

    async def next_ended(self) -> list[tuple[int, ToolResult]]:
        """Wait until calls end (or the token fires, which cancels the rest); their results."""
        waiting: set[asyncio.Future[Any]] = {*self.running, self.fired}
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if self.fired in done:
            for task in self.running:
                task.cancel()
            await asyncio.wait(self.running)
        ended = []
        for task in [t for t in self.running if t.done()]:
            index = self.running.pop(task)
            ended.append((index, self._outcome(task, self.calls[index])))
        return ended

    def _outcome(self, task: asyncio.Future[ToolResult], call: ToolCall) -> ToolResult:
        if task.cancelled():
            return self.runner._cancelled(call, self.started)
        error = task.exception()
        if error is not None:  # only a hook can raise here; the call still gets its answer
            return self.runner._failure(call, error)
        return task.result()

    async def close(self) -> None:
        if not self.fired.done():
            self.fired.cancel()
        if self.running:  # the consumer stopped early or was cancelled
            for task in self.running:
                task.cancel()
            await asyncio.gather(*self.running, return_exceptions=True)


def iter_parallel(
    runner: CallRunner, calls: Sequence[ToolCall], cancel: CancellationToken | None
) -> Iterator[tuple[int, ToolResult]]:
    """``(index, result)`` of each call as it ends, the calls running in worker threads; hooks
    run in the calling thread and each call's timeout counts from the batch start."""
    if not calls:
        return
    started = time.perf_counter()
    if cancel is not None and cancel.cancelled:
        yield from _all_cancelled(runner, calls, started)
        return
    batch = _ThreadBatch(runner, started)
    yield from batch.start(calls)
    if cancel is not None:
        cancel.add_callback(batch.set_fired)
    try:
        while batch.running:
            yield from batch.next_ended()
    finally:
        if cancel is not None:
            cancel.remove_callback(batch.set_fired)
        for future in list(batch.running):  # the consumer stopped early: nothing more is read
            batch.give_up(future)


class _ThreadBatch:
    """The futures of one threaded batch, their deadlines and the cancellation future."""

    def __init__(self, runner: CallRunner, started: float) -> None:
        self.runner = runner
        self.started = started
        self.running: dict[concurrent.futures.Future[Any], int] = {}
        self.deadlines: dict[int, float] = {}
        self.ran: dict[int, ToolCall] = {}  # the call as it ran (a before-hook may rewrite it)
        # fired when a call is given up, so a blocking tool can stop (see current_call_token)
        self.tokens: dict[int, CancellationToken] = {}
        self.fired: concurrent.futures.Future[None] = concurrent.futures.Future()

    def set_fired(self) -> None:
        if not self.fired.done():
            self.fired.set_result(None)

    def start(self, calls: Sequence[ToolCall]) -> Iterator[tuple[int, ToolResult]]:
        """Submit every call; those answered before they run (hooks, validation) are yielded."""
        runner, pool = self.runner, self.runner._thread_pool()
        for index, original in enumerate(calls):
            call, state = runner._start_sync(original)
            if isinstance(state, ToolResult):
                state = dataclasses.replace(state, call_id=call.id)
                yield index, runner._run_hooks_after(original, state)
                continue
            self.ran[index] = call
            token = self.tokens[index] = CancellationToken()
            self.running[pool.submit(run_with_call_token, token, runner._body_sync, state)] = index
            timeout = runner.timeout_for(call.name)
            if timeout is not None:
                self.deadlines[index] = self.started + timeout

    def next_ended(self) -> Iterator[tuple[int, ToolResult]]:
        """Wait for the next call to end, a deadline or the token; what ended meanwhile."""
        waiting = [self.deadlines[i] for i in self.running.values() if i in self.deadlines]
        wait_for = max(0.0, min(waiting) - time.perf_counter()) if waiting else None
        done, _ = concurrent.futures.wait(
            {*self.running, self.fired}, timeout=wait_for, return_when=FIRST_COMPLETED
        )
        now = time.perf_counter()
        for future in list(self.running):
            index = self.running[future]
            result = self._outcome(future, self.ran[index], done, now)
            if result is not None:
                del self.running[future]
                yield index, self.runner._run_hooks_after(self.ran[index], result)

    def _outcome(
        self, future: concurrent.futures.Future[Any], call: ToolCall, done: set[Any], now: float
    ) -> ToolResult | None:
        """The call's result if it has one now: finished, cancelled or past its deadline."""
        runner, started = self.runner, self.started
        if future in done:
            try:
                return runner._finish(call, future.result(), started)
            except Exception as exc:
                return runner._failure(call, exc, now - started)
        index = self.running[future]
        if self.fired in done:
            self.give_up(future)
            return runner._cancelled(call, started)
        if index in self.deadlines and self.deadlines[index] <= now:
            self.give_up(future)
            return runner._timed_out(call, runner.timeout_for(call.name) or 0.0, started)
        return None

    def give_up(self, future: concurrent.futures.Future[Any]) -> None:
        """Stop waiting for a call: cancel it if it has not started, else tell it."""
        future.cancel()
        self.tokens[self.running[future]].cancel()
