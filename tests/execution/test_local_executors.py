"""Executors: validation before running, errors as results, timeouts, parallelism, cancellation."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from tooluse import ToolCall, ToolExecutionError, ToolResult
from tooluse.execution import (
    AsyncToolExecutor,
    CancellationToken,
    SimpleToolExecutor,
    Veto,
    truncate_output,
)


def call(name: str, id: str = "c1", **arguments) -> ToolCall:
    return ToolCall(id=id, name=name, arguments=arguments)


# -- SimpleToolExecutor --------------------------------------------------------------------------


def test_simple_executor_runs_llenvs_style_mapping_of_lambdas():
    executor = SimpleToolExecutor(
        {"add": lambda a, b: str(a + b), "multiply": lambda a, b: str(a * b)}
    )
    result = executor.execute(ToolCall(id="1", name="add", arguments={"a": 5, "b": 3}))
    assert result.output == "8"
    assert not result.is_error
    assert result.call_id == "1"
    assert executor.execute(call("multiply", a=4, b=3)).output == "12"


def test_unknown_tool_is_a_failure_naming_the_available_tools():
    executor = SimpleToolExecutor({"add": lambda a, b: a + b})
    result = executor.execute(call("subtract", a=1, b=2))
    assert result.is_error
    assert result.output.startswith("error:")
    assert "subtract" in result.output and "add" in result.output


def test_invalid_arguments_are_rejected_before_the_tool_runs():
    ran = []

    def area(width: int, height: int) -> int:
        ran.append(1)
        return width * height

    executor = SimpleToolExecutor({"area": area})
    result = executor.execute(call("area", width="wide", height=2))
    assert result.is_error and result.output.startswith("error:")
    assert "width" in result.output
    assert ran == []
    missing = executor.execute(call("area", width=2))
    assert missing.is_error and "height" in missing.output
    assert ran == []


def test_broken_json_arguments_are_reported_to_the_model():
    executor = SimpleToolExecutor({"echo": lambda text: text})
    broken = ToolCall(id="b", name="echo", arguments={}, raw_arguments='{"text": "hi"')
    result = executor.execute(broken)
    assert result.is_error
    assert "JSON" in result.output
    assert result.call_id == "b"


def test_exceptions_become_error_results_for_the_model():
    def fails(x: int) -> int:
        raise ValueError(f"cannot handle {x}")

    def explains(x: int) -> int:
        raise ToolExecutionError("internal detail", model_message="the service is down, try later")

    executor = SimpleToolExecutor({"fails": fails, "explains": explains})
    result = executor.execute(call("fails", x=3))
    assert result.is_error
    assert result.output == "error: ValueError: cannot handle 3"
    explained = executor.execute(call("explains", x=1))
    assert explained.output == "error: the service is down, try later"


def test_a_tool_result_returned_by_the_tool_passes_through_with_its_error_flag():
    def remote(q: str) -> ToolResult:
        return ToolResult(call_id="whatever", tool_name="x", output="server says no", is_error=True)

    result = SimpleToolExecutor({"remote": remote}).execute(call("remote", id="c9", q="a"))
    assert result.call_id == "c9"
    assert result.tool_name == "remote"
    assert result.is_error and result.output == "server says no"


class Weather(BaseModel):
    city: str
    celsius: float


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque handle>"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text form")

    __repr__ = __str__


def test_outputs_are_rendered_json_or_text_and_unshowable_ones_fail():
    executor = SimpleToolExecutor(
        {
            "model": lambda: Weather(city="Paris", celsius=21.5),
            "data": lambda: {"a": [1, 2], "b": None},
            "opaque": lambda: Opaque(),
            "unprintable": lambda: Unprintable(),
            "nothing": lambda: None,
        }
    )
    assert executor.execute(call("model")).output == '{"city": "Paris", "celsius": 21.5}'
    assert executor.execute(call("data")).output == '{"a": [1, 2], "b": null}'
    assert executor.execute(call("opaque")).output == "<Opaque handle>"
    bad = executor.execute(call("unprintable"))
    assert bad.is_error and "Unprintable" in bad.output
    assert executor.execute(call("nothing")).output == ""


def test_huge_outputs_are_truncated_with_a_marker_and_a_configurable_limit():
    text = "A" * 5000 + "MIDDLE" + "Z" * 5000
    executor = SimpleToolExecutor({"big": lambda: text}, max_output_chars=1000)
    result = executor.execute(call("big"))
    assert not result.is_error
    assert len(result.output) < 1200
    assert result.output.startswith("A" * 700)
    assert result.output.endswith("Z" * 200)
    assert "truncated" in result.output and str(len(text) - 1000) in result.output
    assert result.metadata["truncated_chars"] == len(text) - 1000
    small = SimpleToolExecutor({"big": lambda: text}, max_output_chars=100_000)
    assert small.execute(call("big")).output == text


def test_truncate_output_keeps_short_text():
    assert truncate_output("short", 10) == ("short", 0)
    cut, removed = truncate_output("x" * 50, 20)
    assert removed == 30 and "30 of 50" in cut


def test_sync_timeout_answers_the_call():
    release = threading.Event()

    def stuck() -> str:
        release.wait(10)
        return "late"

    executor = SimpleToolExecutor({"stuck": stuck, "quick": lambda: "ok"}, timeouts={"stuck": 0.05})
    try:
        result = executor.execute(call("stuck"))
        assert result.is_error and "timed out" in result.output
        assert executor.execute(call("quick")).output == "ok"
    finally:
        release.set()
        executor.close()


def test_async_tool_in_sync_executor_runs_to_completion():
    async def double(x: int) -> int:
        await asyncio.sleep(0)
        return x * 2

    assert SimpleToolExecutor({"double": double}).execute(call("double", x=21)).output == "42"


def test_injected_agent_reaches_the_tool_and_stays_out_of_the_schema():
    class Agent:
        unique_id = 7

    def whoami(agent, greeting: str) -> str:
        return f"{greeting} {agent.unique_id}"

    executor = SimpleToolExecutor({"whoami": whoami}, injected={"agent": Agent()})
    schema = executor.get("whoami").parameters_schema
    assert "agent" not in schema["properties"]
    assert executor.execute(call("whoami", greeting="hi")).output == "hi 7"


# -- hooks ---------------------------------------------------------------------------------------


def test_before_hook_can_veto_rewrite_or_answer_and_after_hook_can_rewrite():
    ran: list[str] = []

    def delete(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    def guard(c: ToolCall):
        if c.arguments.get("path") == "/":
            return Veto(reason="deleting the root is not allowed")
        if c.arguments.get("path") == "cached":
            return ToolResult.success("ignored", "delete", "from cache")
        if c.arguments.get("path", "").startswith("~"):
            return ToolCall(
                id="other", name=c.name, arguments={"path": "/home/u" + c.arguments["path"][1:]}
            )
        return None

    def shout(c: ToolCall, r: ToolResult):
        return (
            ToolResult.success(r.call_id, r.tool_name, r.output.upper()) if not r.is_error else None
        )

    executor = SimpleToolExecutor({"delete": delete}, before=[guard], after=[shout])
    vetoed = executor.execute(call("delete", id="v", path="/"))
    assert vetoed.is_error and "not allowed" in vetoed.output and vetoed.call_id == "v"
    cached = executor.execute(call("delete", id="k", path="cached"))
    assert cached.output == "FROM CACHE" and cached.call_id == "k"
    rewritten = executor.execute(call("delete", id="r", path="~/x"))
    assert rewritten.call_id == "r"
    assert rewritten.output == "DELETED /HOME/U/X"
    assert ran == ["/home/u/x"]


async def test_async_hooks_run_in_the_async_path():
    async def deny_all(c: ToolCall):
        await asyncio.sleep(0)
        return Veto(reason="read-only mode")

    executor = AsyncToolExecutor({"write": lambda text: text}, before=[deny_all])
    result = await executor.execute_async(call("write", text="x"))
    assert result.is_error and "read-only mode" in result.output


# -- AsyncToolExecutor ---------------------------------------------------------------------------


async def test_async_batch_runs_coroutines_concurrently():
    n = 8
    arrived = 0
    everyone = asyncio.Event()

    async def meet(i: int) -> int:
        nonlocal arrived
        arrived += 1
        if arrived == n:
            everyone.set()
        # Sequential execution would never get everyone here: the first call would time out.
        await asyncio.wait_for(everyone.wait(), 5)
        return i

    executor = AsyncToolExecutor({"meet": meet}, timeout=10)
    results = await executor.execute_batch_async([call("meet", id=f"c{i}", i=i) for i in range(n)])
    assert [r.output for r in results] == [str(i) for i in range(n)]
    assert [r.call_id for r in results] == [f"c{i}" for i in range(n)]


async def test_sync_tools_run_in_worker_threads_in_parallel():
    n = 6
    barrier = threading.Barrier(n, timeout=5)
    threads: set[int] = set()

    def meet(i: int) -> int:
        threads.add(threading.get_ident())
        barrier.wait()  # raises BrokenBarrierError unless all n run at the same time
        return i

    executor = AsyncToolExecutor({"meet": meet}, timeout=10)
    results = await executor.execute_batch_async([call("meet", id=f"c{i}", i=i) for i in range(n)])
    assert all(not r.is_error for r in results), [r.output for r in results]
    assert threading.get_ident() not in threads
    assert len(threads) == n
    executor.close()


def test_sync_facade_batch_is_parallel_too():
    n = 5
    barrier = threading.Barrier(n, timeout=5)

    def meet(i: int) -> int:
        barrier.wait()
        return i

    with AsyncToolExecutor({"meet": meet}) as executor:
        results = executor.execute_batch([call("meet", id=f"c{i}", i=i) for i in range(n)])
    assert [r.output for r in results] == [str(i) for i in range(n)]


async def test_max_concurrency_bounds_the_calls_running_at_once():
    running = 0
    peak = 0

    async def work(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return i

    executor = AsyncToolExecutor({"work": work}, max_concurrency=2)
    results = await executor.execute_batch_async([call("work", id=f"c{i}", i=i) for i in range(6)])
    assert len(results) == 6 and not any(r.is_error for r in results)
    assert peak == 2


async def test_async_timeout_cancels_the_coroutine_and_answers_the_call():
    cleaned_up = asyncio.Event()

    async def hang() -> str:
        try:
            await asyncio.Event().wait()
        finally:
            cleaned_up.set()
        return "never"

    executor = AsyncToolExecutor({"hang": hang, "fast": lambda: "fast"}, timeouts={"hang": 0.05})
    results = await executor.execute_batch_async([call("hang", id="h"), call("fast", id="f")])
    assert results[0].is_error and "timed out after 0.05 s" in results[0].output
    assert results[1].output == "fast"
    assert cleaned_up.is_set()


async def test_every_failure_kind_in_one_batch_gets_exactly_one_result():
    async def boom() -> str:
        raise RuntimeError("boom")

    executor = AsyncToolExecutor({"boom": boom, "ok": lambda: "ok", "typed": lambda n: n})
    calls = [
        call("boom", id="1"),
        call("ok", id="2"),
        call("missing", id="3"),
        call("typed", id="4"),  # missing argument
        ToolCall(id="5", name="ok", raw_arguments="{{{"),
    ]
    results = await executor.execute_batch_async(calls)
    assert [r.call_id for r in results] == ["1", "2", "3", "4", "5"]
    assert [r.is_error for r in results] == [True, False, True, True, True]


def hang_until_cancelled(cleaned_up: asyncio.Event, started: asyncio.Event | None = None):
    """An async tool that never returns; it sets ``cleaned_up`` when it is cancelled."""

    async def hang() -> str:
        if started is not None:
            started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned_up.set()
        return "never"

    return hang


async def test_cancellation_token_closes_running_calls_with_results():
    token = CancellationToken()
    cleaned_up = asyncio.Event()

    async def trigger() -> str:
        token.cancel()
        return "fired"

    hang = hang_until_cancelled(cleaned_up)
    executor = AsyncToolExecutor({"trigger": trigger, "hang": hang}, timeout=None)
    results = await executor.execute_batch_async(
        [call("hang", id="h"), call("trigger", id="t")], cancel=token
    )
    assert results[0].is_error and "cancelled" in results[0].output
    assert results[1].output == "fired"
    assert cleaned_up.is_set()


async def test_aiter_batch_yields_each_call_as_it_ends_and_answers_every_call():
    token = CancellationToken()
    second_reported = asyncio.Event()

    async def first() -> str:
        await second_reported.wait()
        token.cancel()
        return "first"

    async def second() -> str:
        return "second"

    async def hang() -> str:
        await asyncio.Event().wait()
        return "never"

    executor = AsyncToolExecutor({"first": first, "second": second, "hang": hang}, timeout=None)
    seen: list[tuple[int, str]] = []
    async for index, result in executor.aiter_batch(
        [call("first", id="a"), call("second", id="b"), call("hang", id="c"), call("nope", id="d")],
        cancel=token,
    ):
        seen.append((index, result.output))
        if index == 1:
            second_reported.set()  # only now may "first" finish, and fire the token
    # The calls that end at once come first, then "first" (released by the report of
    # "second"), then "hang", cancelled when "first" fired the token.
    assert sorted(i for i, _ in seen[:2]) == [1, 3]
    assert dict(seen)[3].startswith("error: unknown tool 'nope'")
    assert seen[2] == (0, "first")
    assert seen[3][0] == 2 and "cancelled" in seen[3][1]


def test_iter_batch_yields_each_call_as_it_ends_and_answers_every_call():
    release = threading.Event()

    def wait_for_release() -> str:
        return "released" if release.wait(10) else "never released"

    def quick() -> str:
        return "quick"

    def hang() -> str:
        threading.Event().wait(10)
        return "late"

    executor = AsyncToolExecutor(
        {"wait_for_release": wait_for_release, "quick": quick, "hang": hang},
        timeouts={"hang": 0.2},
    )
    seen: list[tuple[int, str]] = []
    try:
        for index, result in executor.iter_batch(
            [
                call("wait_for_release", id="w"),
                call("quick", id="q"),
                call("missing", id="m"),
                call("hang", id="h"),
            ]
        ):
            seen.append((index, result.call_id))
            if result.call_id == "q":
                release.set()  # only now may the first call finish
            if index == 0:
                assert result.output == "released"
            if index == 3:
                assert result.is_error and "timed out" in result.output
    finally:
        executor.close()
    # The unknown tool is answered before anything runs; the rest as they end.
    assert seen[0] == (2, "m")
    assert seen.index((1, "q")) < seen.index((0, "w"))
    assert sorted(seen) == [(0, "w"), (1, "q"), (2, "m"), (3, "h")]


def test_cancellation_token_in_the_sync_facade():
    token = CancellationToken()
    release = threading.Event()

    def hang() -> str:
        release.wait(10)
        return "late"

    def trigger() -> str:
        token.cancel()
        return "fired"

    executor = AsyncToolExecutor({"hang": hang, "trigger": trigger}, timeout=None)
    try:
        results = executor.execute_batch(
            [call("hang", id="h"), call("trigger", id="t")], cancel=token
        )
        assert results[0].is_error and "cancelled" in results[0].output
        assert results[1].output == "fired"
        # Once fired, later batches answer every call without running it.
        again = executor.execute_batch(
            [call("trigger", id="x"), call("hang", id="y")], cancel=token
        )
        assert all(r.is_error and "cancelled" in r.output for r in again)
    finally:
        release.set()
        executor.close()


async def test_cancelling_the_awaiting_task_cancels_running_calls():
    started = asyncio.Event()
    cleaned_up = asyncio.Event()

    hang = hang_until_cancelled(cleaned_up, started)
    executor = AsyncToolExecutor({"hang": hang, "hang2": hang}, timeout=None)
    task = asyncio.ensure_future(
        executor.execute_batch_async([call("hang", id="a"), call("hang2", id="b")])
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned_up.is_set()


def test_invalid_options_are_refused():
    with pytest.raises(ValueError, match="max_concurrency"):
        AsyncToolExecutor({}, max_concurrency=0)
    from tooluse import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="unique"):
        SimpleToolExecutor([_named("a"), _named("a")])


def _named(name: str):
    from tooluse import ToolDefinition

    return ToolDefinition(name=name, function=lambda: name)
