"""The process's stop request: set when a run is interrupted (Ctrl-C, SIGTERM), checked by
long loops that run on worker threads, where the signal itself never arrives.

Python delivers a signal only to the main thread; a model's token loop on a worker thread
would go on to the end of its turn. The run engine sets the request when its main thread is
interrupted and clears it when the run has ended; the local model checks it between tokens
and stops with :class:`GenerationInterrupted`.
"""

from __future__ import annotations

import threading

__all__ = [
    "GenerationInterrupted",
    "clear_stop_request",
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
