"""Ctrl-C held to the points a loop chooses (``interrupts_at_safe_points``)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from tooluse.interrupts import interrupts_at_safe_points


@pytest.fixture(autouse=True)
def python_default_handler():
    # Other tests in the same worker process may have left a library's own SIGINT handler
    # in place; these tests are about Python's default one.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def ctrl_c() -> None:
    # The handler runs in the main thread at the next bytecode after the signal arrives.
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):
        pass


def test_ctrl_c_waits_for_the_check_and_is_raised_once_per_press():
    with interrupts_at_safe_points() as check:
        ctrl_c()
        ctrl_c()
        reached = True  # not raised where it landed
        with pytest.raises(KeyboardInterrupt):
            check()
        with pytest.raises(KeyboardInterrupt):
            check()
        check()  # two presses, two raises: nothing is left
    assert reached
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_press_left_unchecked_is_raised_when_the_block_ends():
    with pytest.raises(KeyboardInterrupt):
        with interrupts_at_safe_points():
            ctrl_c()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_handler_of_the_callers_own_is_left_in_place():
    seen = []
    previous = signal.signal(signal.SIGINT, lambda *_: seen.append(1))
    try:
        with interrupts_at_safe_points() as check:
            ctrl_c()
            check()  # the caller's handler took it
        assert seen == [1]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_nothing_changes():
    handlers = []

    def body() -> None:
        with interrupts_at_safe_points() as check:
            handlers.append(signal.getsignal(signal.SIGINT))
            check()

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert handlers == [signal.default_int_handler]
