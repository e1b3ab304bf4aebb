"""A blocking tool whose call the local executor gives up (timed out, batch cancelled) sees its
call token fire, so it can stop the work it waits on; outside a call there is no token."""

from __future__ import annotations

import asyncio
import threading
import time

from tooluse.execution.base import CancellationToken, current_call_token
from tooluse.execution.local import ToolExecutor
from tooluse.messages import ToolCall

STOPPED: list[str] = []


def stopped(*labels: str) -> bool:
    """Whether the calls ``labels`` were told to stop (their threads may take a moment)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if set(labels) <= set(STOPPED):
            return True
        time.sleep(0.05)
    return False


def wait_for_stop(label: str) -> str:
    """Wait until the executor gives this call up.

    Args:
        label: A name for the call.
    """
    token = current_call_token()
    assert token is not None
    stopped = threading.Event()
    token.add_callback(stopped.set)
    if stopped.wait(timeout=30):
        STOPPED.append(label)
        return "stopped"
    return "never told"


def test_a_timed_out_call_fires_its_token():
    STOPPED.clear()
    executor = ToolExecutor([wait_for_stop], timeout=0.2)
    result = executor.execute(ToolCall(name="wait_for_stop", arguments={"label": "single"}))
    assert result.is_error and "timed out" in result.output
    assert stopped("single")


def test_a_cancelled_batch_fires_the_tokens_of_its_running_calls():
    STOPPED.clear()
    executor = ToolExecutor([wait_for_stop], timeout=None)
    token = CancellationToken()
    threading.Timer(0.3, token.cancel).start()
    calls = [ToolCall(name="wait_for_stop", arguments={"label": f"b{i}"}) for i in range(2)]
    results = executor.execute_batch(calls, cancel=token)
    assert all("cancelled" in r.output for r in results)
    assert stopped("b0", "b1")


def test_an_async_batch_fires_the_token_of_a_blocking_tool():
    STOPPED.clear()
    executor = ToolExecutor([wait_for_stop], timeout=None)

    async def main() -> None:
        token = CancellationToken()
        asyncio.get_running_loop().call_later(0.3, token.cancel)
        calls = [ToolCall(name="wait_for_stop", arguments={"label": f"a{i}"}) for i in range(2)]
        results = await executor.aexecute_batch(calls, cancel=token)
        assert all("cancelled" in r.output for r in results)

    asyncio.run(main())
    assert stopped("a0", "a1")


def test_there_is_no_token_outside_a_call():
    assert current_call_token() is None
