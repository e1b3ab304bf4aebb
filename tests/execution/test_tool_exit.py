"""A tool calling ``sys.exit()`` fails its call; it never ends the run. Ctrl-C still does."""

from __future__ import annotations

import asyncio
import sys

import pytest

import tooluse
from tooluse import ScriptedBackend, ToolCall
from tooluse.execution import AsyncToolExecutor, SimpleToolExecutor


def quit_sync(code: int = 3) -> str:
    sys.exit(code)


async def quit_async(code: int = 4) -> str:
    await asyncio.sleep(0)
    sys.exit(code)


def interrupt() -> str:
    raise KeyboardInterrupt


def fine() -> str:
    return "still here"


TOOLS = {"quit_sync": quit_sync, "quit_async": quit_async, "fine": fine}


def call(name: str, id: str = "c1") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={})


def assert_exit_failure(result, name: str, code: int) -> None:
    assert result.is_error
    assert f"called sys.exit({code})" in result.output
    assert result.tool_name == name


@pytest.mark.parametrize("timeout", [None, 5.0])  # None: calling thread; 5.0: worker thread
@pytest.mark.parametrize(("name", "code"), [("quit_sync", 3), ("quit_async", 4)])
def test_simple_executor_turns_sys_exit_into_a_failed_result(timeout, name, code):
    with SimpleToolExecutor(TOOLS, timeout=timeout) as executor:
        result = executor.execute(call(name))
    assert_exit_failure(result, name, code)


def test_sync_batch_in_worker_threads_answers_every_call():
    with AsyncToolExecutor(TOOLS, timeout=5.0) as executor:
        results = executor.execute_batch(
            [call("quit_sync", "a"), call("fine", "b"), call("quit_async", "c")]
        )
    assert [r.call_id for r in results] == ["a", "b", "c"]
    assert_exit_failure(results[0], "quit_sync", 3)
    assert results[1].output == "still here" and not results[1].is_error
    assert_exit_failure(results[2], "quit_async", 4)


@pytest.mark.parametrize("timeout", [None, 5.0])
async def test_async_executor_keeps_the_event_loop_alive(timeout):
    executor = AsyncToolExecutor(TOOLS, timeout=timeout)
    results = await executor.execute_batch_async(
        [call("quit_async", "a"), call("quit_sync", "b"), call("fine", "c")]
    )
    assert_exit_failure(results[0], "quit_async", 4)
    assert_exit_failure(results[1], "quit_sync", 3)
    assert results[2].output == "still here"
    single = await executor.execute_async(call("quit_async"))
    assert_exit_failure(single, "quit_async", 4)
    executor.close()


def test_sys_exit_with_a_message_is_shown():
    def bye() -> str:
        sys.exit("bye now")

    result = SimpleToolExecutor({"bye": bye}).execute(call("bye"))
    assert result.is_error
    assert "sys.exit('bye now')" in result.output


def script() -> ScriptedBackend:
    return ScriptedBackend([[call("quit_sync", "a"), call("quit_async", "b")], "the run went on"])


def test_the_loop_goes_on_after_a_tool_exits():
    result = tooluse.run(script(), "go", tools=[quit_sync, quit_async])
    assert result.final_text == "the run went on"
    answers = {m.result.call_id: m.result for m in result.messages if m.result is not None}
    assert set(answers) == {"a", "b"}
    assert all(r.is_error and "sys.exit" in r.output for r in answers.values())


async def test_the_async_loop_goes_on_after_a_tool_exits():
    result = await tooluse.arun(script(), "go", tools=[quit_sync, quit_async])
    assert result.final_text == "the run went on"


def test_keyboard_interrupt_still_stops_the_run():
    backend = ScriptedBackend([[call("interrupt")], "never reached"])
    with pytest.raises(KeyboardInterrupt):
        tooluse.run(backend, "go", tools=[interrupt])
    with pytest.raises(KeyboardInterrupt):
        SimpleToolExecutor({"interrupt": interrupt}).execute(call("interrupt"))
