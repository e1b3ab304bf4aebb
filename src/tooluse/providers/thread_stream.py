"""A blocking iterator consumed from async code: it runs on a thread of its own (one thread for
the whole iteration, so thread-bound state such as a model's lock stays with it) and its items
reach the event loop as they come."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

__all__ = ["aiter_on_thread"]

T = TypeVar("T")


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
