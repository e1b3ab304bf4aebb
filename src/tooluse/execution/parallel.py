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

from tooluse.execution.base import CancellationToken, PreparedCall
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


async def aiter_parallel(
    runner: CallRunner, calls: Sequence[ToolCall], cancel: CancellationToken | None
) -> AsyncGenerator[tuple[int, ToolResult], None]:
    """``(index, result)`` of each call as it ends, the calls running concurrently on the
    event loop (sync tools in worker threads)."""
    if not calls:
        return
    started = time.perf_counter()
    if cancel is not None and cancel.cancelled:
        for index, call in enumerate(calls):
            yield index, runner._cancelled(call, started)
        return
    semaphore = asyncio.Semaphore(runner.max_concurrency) if runner.max_concurrency else None

    async def bounded(call: ToolCall) -> ToolResult:
        if semaphore is None:
            return await runner.aexecute(call)
        async with semaphore:
            return await runner.aexecute(call)

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
                    yield index, runner._cancelled(call, started)
                elif task.exception() is not None:
                    # Only a hook can raise here; the call still gets its answer.
                    yield index, runner._failure(call, task.exception())
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


def iter_parallel(
    runner: CallRunner, calls: Sequence[ToolCall], cancel: CancellationToken | None
) -> Iterator[tuple[int, ToolResult]]:
    """``(index, result)`` of each call as it ends, the calls running in worker threads; hooks
    run in the calling thread and each call's timeout counts from the batch start."""
    if not calls:
        return
    started = time.perf_counter()
    if cancel is not None and cancel.cancelled:
        for index, call in enumerate(calls):
            yield index, runner._cancelled(call, started)
        return
    pool = runner._thread_pool()
    running: dict[concurrent.futures.Future[Any], int] = {}
    deadlines: dict[int, float] = {}
    ran: dict[int, ToolCall] = {}  # the call as it ran (a before-hook may rewrite it)
    for index, original in enumerate(calls):
        call, state = runner._start_sync(original)
        if isinstance(state, ToolResult):
            state = dataclasses.replace(state, call_id=call.id)
            yield index, runner._run_hooks_after(original, state)
            continue
        ran[index] = call
        running[pool.submit(runner._body_sync, state)] = index
        timeout = runner.timeout_for(call.name)
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
                        result = runner._finish(call, future.result(), started)
                    except Exception as exc:
                        result = runner._failure(call, exc, now - started)
                elif fired in done:
                    future.cancel()
                    result = runner._cancelled(call, started)
                elif index in deadlines and deadlines[index] <= now:
                    future.cancel()
                    result = runner._timed_out(call, runner.timeout_for(call.name) or 0.0, started)
                else:
                    continue
                del running[future]
                yield index, runner._run_hooks_after(call, result)
    finally:
        if cancel is not None:
            cancel.remove_callback(set_fired)
        for future in running:  # the consumer stopped early: nothing more will be read
            future.cancel()
