"""A per-call time limit for parser tests: a parse that hangs fails its test instead of blocking
the suite. The limit is generous (seconds for work of microseconds): it catches hangs, it is
not a speed check."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager


class ParseHang(AssertionError):
    """A parse did not return within the watchdog's limit."""


@contextmanager
def watchdog(seconds: float, what: str = "parse") -> Iterator[None]:
    """Raise :class:`ParseHang` inside the block when it runs longer than ``seconds``.

    Uses ``SIGALRM`` (main thread only); a timer already running (pytest-timeout's) is put
    back afterwards with the time it had left.
    """

    def expire(signum: int, frame: object) -> None:
        raise ParseHang(f"{what} did not return within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay:
            left = max(outer_delay - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
