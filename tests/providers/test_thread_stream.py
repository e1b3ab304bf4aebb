"""``aiter_on_thread``: a blocking iterator on its own thread, consumed from async code."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tooluse.sync_bridge import aiter_on_thread


async def test_items_errors_and_thread():
    seen_threads = set()

    def numbers():
        for i in range(3):
            seen_threads.add(threading.current_thread().name)
            yield i

    assert [i async for i in aiter_on_thread(numbers, name="t-test")] == [0, 1, 2]
    assert seen_threads == {"t-test"}

    def broken():
        yield 1
        raise ValueError("boom")

    got = []
    with pytest.raises(ValueError, match="boom"):
        async for item in aiter_on_thread(broken):
            got.append(item)
    assert got == [1]


async def test_stopping_early_closes_the_generator():
    closed = threading.Event()

    def endless():
        try:
            while True:
                time.sleep(0.01)
                yield "token"
        finally:
            closed.set()

    stream = aiter_on_thread(endless)
    async for _ in stream:
        break
    await stream.aclose()
    assert closed.wait(5), "the producer kept generating after the consumer left"


async def test_stop_event_ends_the_producer():
    stop = threading.Event()
    produced = []

    def endless():
        while True:
            time.sleep(0.01)
            produced.append(1)
            yield 1

    count = 0
    async for _ in aiter_on_thread(endless, stop=stop):
        count += 1
        if count == 3:
            stop.set()
            break
    await asyncio.sleep(0.2)
    before = len(produced)
    await asyncio.sleep(0.2)
    assert len(produced) == before  # nothing more was generated
