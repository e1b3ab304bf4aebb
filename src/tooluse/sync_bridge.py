"""Bridges between blocking and async code, shared by the backends, the executors and the server.

- :func:`run_coroutine_blocking`: an awaitable run to completion from synchronous code.
- :func:`aiter_on_thread`: a blocking iterator consumed from async code; it runs on a thread of
  its own (one thread for the whole iteration, so thread-bound state such as a model's lock
  stays with it) and its items reach the event loop as they come.
- :func:`iter_async_on_thread`: the reverse, an async iterator consumed from blocking code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

__all__ = ["aiter_on_thread", "iter_async_on_thread", "run_coroutine_blocking"]

T = TypeVar("T")


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


def iter_async_on_thread(
    make: Callable[[], AsyncIterator[T]], *, name: str = "tooluse-async-stream"
) -> Iterator[T]:
    """Items of the async iterator ``make()``, driven on an event loop in a daemon thread and
    handed to the blocking consumer as they come. Errors are raised in the consumer; a consumer
    that stops early closes the async iterator (its ``finally`` blocks run)."""
    items: queue.Queue[tuple[str, Any]] = queue.Queue()
    stopped = threading.Event()

    async def drive() -> None:
        iterator = make()
        try:
            async for item in iterator:
                items.put(("item", item))
                if stopped.is_set():
                    break
        finally:
            close = getattr(iterator, "aclose", None)
            if callable(close):
                await close()

    def produce() -> None:
        try:
            asyncio.run(drive())
        except BaseException as exc:  # handed to the consumer, raised there
            items.put(("error", exc))
        else:
            items.put(("end", None))

    threading.Thread(target=produce, name=name, daemon=True).start()
    try:
        while True:
            kind, payload = items.get()
            if kind == "item":
                yield payload
            elif kind == "error":
                raise payload
            else:
                return
    finally:
        stopped.set()


async def aiter_on_thread(
    make: Callable[[], Iterator[T]],
    *,
    name: str = "tooluse-stream",
    stop: threading.Event | None = None,
) -> AsyncIterator[T]:
    """Items of ``make()`` produced on a daemon thread. Errors are raised in the consumer.

    When the consumer stops early, or ``stop`` is set (a client went away), the iterator is
    closed before its next item, which ends a generator such as a model's token loop.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stopped = stop if stop is not None else threading.Event()

    def put(kind: str, payload: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (kind, payload))

    def produce() -> None:
        try:
            iterator = make()
            try:
                for item in iterator:
                    if stopped.is_set():
                        break
                    put("item", item)
            finally:
                close = getattr(iterator, "close", None)
                if callable(close):
                    close()
        except BaseException as exc:  # handed to the consumer, raised there
            put("error", exc)
        else:
            put("end", None)

    threading.Thread(target=produce, name=name, daemon=True).start()
    try:
        while True:
            kind, payload = await queue.get()
            if kind == "item":
                yield payload
            elif kind == "error":
                raise payload
            else:
                return
    finally:
        stopped.set()
