"""The process's stop request: set when a run is interrupted (Ctrl-C, SIGTERM), checked by
long loops that run on worker threads, where the signal itself never arrives.

Python delivers a signal only to the main thread; a model's token loop on a worker thread
would go on to the end of its turn. The run engine sets the request when its main thread is
interrupted and clears it when the run has ended; the local model checks it between tokens
and stops with :class:`GenerationInterrupted`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = [
    "GenerationInterrupted",
    "clear_stop_request",
    "interrupts_at_safe_points",
    "request_stop",
    "stop_requested",
]

_STOP = threading.Event()


class GenerationInterrupted(Exception):  # noqa: N818 - named for what happened, as its peers
    """A generation stopped early because the process was asked to stop."""


def request_stop() -> None:
    """Ask every running generation to stop at its next step."""
    _STOP.set()


def clear_stop_request() -> None:
    _STOP.clear()


def stop_requested() -> bool:
    return _STOP.is_set()


@contextmanager
def interrupts_at_safe_points() -> Iterator[Callable[[], None]]:
    """Inside the block Ctrl-C (SIGINT) is recorded, not raised where it lands; the yielded
    ``check()`` raises :class:`KeyboardInterrupt` once per recorded signal, where the caller
    calls it.

    Some native code a run waits in (Ray's ``wait``) does not survive an exception raised in
    the middle of it: it turned into a ``SystemError`` and a hung run. Outside the main thread,
    or under a handler other than Python's default, nothing changes and ``check()`` only
    raises what it recorded (nothing). A signal left unchecked when the block ends normally is
    raised then.
    """
    pending = [0]

    def check() -> None:
        if pending[0]:
            pending[0] -= 1
            raise KeyboardInterrupt

    def record(_signum: int, _frame: FrameType | None) -> None:
        pending[0] += 1

    ours = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    if ours:
        signal.signal(signal.SIGINT, record)
    try:
        yield check
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    check()
