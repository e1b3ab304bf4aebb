"""Tool execution and loop overhead.

1. Parallel execution: 64 calls of a tool that sleeps 100 ms, as a coroutine and as a plain
   function (worker threads), run as one batch by ``AsyncToolExecutor``; baseline: the same
   calls one after another (``SimpleToolExecutor``), measured in this run.
2. Loop overhead per tool round trip (no model time): a scripted model calls a trivial ``add``
   tool ROUNDS times, then answers. tooluse ``arun``/``run`` with ``ScriptedBackend`` against
   pydantic-ai's ``Agent`` with ``FunctionModel`` doing the same calls with the same tool
   (pydantic-ai-slim is installed by ``make bench``). Target: tooluse <= 1/5 of pydantic-ai.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from tooluse import ScriptedBackend, ToolCall, arun, run
from tooluse.execution import AsyncToolExecutor, SimpleToolExecutor

CALLS = 64
SLEEP = 0.1
ROUNDS = 20  # tool round trips per run
REPEATS = 15  # runs per measurement; the median is reported


async def sleepy_async(i: int) -> int:
    """Sleep 100 ms, then echo."""
    await asyncio.sleep(SLEEP)
    return i


def sleepy_sync(i: int) -> int:
    """Sleep 100 ms, then echo."""
    time.sleep(SLEEP)
    return i


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: first number
        b: second number
    """
    return a + b


# -- 1. parallel execution -------------------------------------------------------------------


def bench_parallel() -> dict[str, float]:
    calls = [ToolCall(name="sleepy", arguments={"i": i}) for i in range(CALLS)]
    figures: dict[str, float] = {}
    for label, fn in (("async", sleepy_async), ("sync", sleepy_sync)):
        executor = AsyncToolExecutor({"sleepy": fn}, timeout=30)
        started = time.perf_counter()
        results = asyncio.run(executor.execute_batch_async(calls))
        parallel = time.perf_counter() - started
        executor.close()
        assert not any(r.is_error for r in results)
        sequential_executor = SimpleToolExecutor({"sleepy": fn})
        started = time.perf_counter()
        for call in calls:
            assert not sequential_executor.execute(call).is_error
        sequential = time.perf_counter() - started
        figures[f"{label}_parallel_s"] = parallel
        figures[f"{label}_sequential_s"] = sequential
        figures[f"{label}_speedup"] = sequential / parallel
        figures[f"{label}_vs_one_call"] = parallel / SLEEP
    # The same batch from synchronous code (the path tooluse.run takes).
    executor = AsyncToolExecutor({"sleepy": sleepy_sync}, timeout=30)
    started = time.perf_counter()
    executor.execute_batch(calls)
    figures["sync_facade_parallel_s"] = time.perf_counter() - started
    executor.close()
    return figures


# -- 2. loop overhead ------------------------------------------------------------------------


def _script() -> list[Any]:
    turns: list[Any] = [
        [ToolCall(id=f"c{i}", name="add", arguments={"a": i, "b": 1})] for i in range(ROUNDS)
    ]
    turns.append("done")
    return turns


def _median_per_round(samples: list[float]) -> float:
    return statistics.median(samples) / ROUNDS


def tooluse_async_per_round() -> float:
    async def once() -> float:
        backend = ScriptedBackend(_script())
        started = time.perf_counter()
        result = await arun(backend, "go", tools=[add], max_tool_iters=ROUNDS)
        elapsed = time.perf_counter() - started
        assert result.final_text == "done" and len(result.trail) == ROUNDS
        return elapsed

    async def many() -> list[float]:
        await once()  # warm-up: schema and validator caches
        return [await once() for _ in range(REPEATS)]

    return _median_per_round(asyncio.run(many()))


def tooluse_sync_per_round() -> float:
    samples = []
    for index in range(REPEATS + 1):
        backend = ScriptedBackend(_script())
        started = time.perf_counter()
        result = run(backend, "go", tools=[add], max_tool_iters=ROUNDS)
        elapsed = time.perf_counter() - started
        assert result.final_text == "done" and len(result.trail) == ROUNDS
        if index:
            samples.append(elapsed)
    return _median_per_round(samples)


def pydantic_ai_per_round() -> float | None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
    except ImportError:
        return None

    def scripted_function() -> Any:
        state = {"turn": 0}

        def respond(messages: Any, info: Any) -> Any:
            i = state["turn"]
            state["turn"] += 1
            if i < ROUNDS:
                part = ToolCallPart(tool_name="add", args={"a": i, "b": 1}, tool_call_id=f"c{i}")
                return ModelResponse(parts=[part])
            return ModelResponse(parts=[TextPart(content="done")])

        return respond

    async def once() -> float:
        agent = Agent(FunctionModel(scripted_function()), tools=[add])
        started = time.perf_counter()
        result = await agent.run("go")
        elapsed = time.perf_counter() - started
        assert result.output == "done"
        return elapsed

    async def many() -> list[float]:
        await once()
        return [await once() for _ in range(REPEATS)]

    return _median_per_round(asyncio.run(many()))


def main() -> dict[str, Any]:
    parallel = bench_parallel()
    print(f"Parallel execution: {CALLS} calls of a tool sleeping {SLEEP * 1000:.0f} ms")
    print(
        f"{'tool kind':<10} {'parallel s':>11} {'sequential s':>13} {'speedup':>8} {'x one call':>11}"
    )
    for label in ("async", "sync"):
        print(
            f"{label:<10} {parallel[f'{label}_parallel_s']:>11.3f} "
            f"{parallel[f'{label}_sequential_s']:>13.3f} {parallel[f'{label}_speedup']:>7.1f}x "
            f"{parallel[f'{label}_vs_one_call']:>10.2f}x"
        )
    print(f"sync tools from sync code (run's path): {parallel['sync_facade_parallel_s']:.3f} s")

    ours_async = tooluse_async_per_round()
    ours_sync = tooluse_sync_per_round()
    theirs = pydantic_ai_per_round()
    print(
        f"\nLoop overhead per tool round trip (scripted model, {ROUNDS} rounds, median of {REPEATS})"
    )
    print(f"{'loop':<28} {'us/round':>10} {'vs pydantic-ai':>15}")
    figures: dict[str, Any] = dict(parallel)
    figures["tooluse_arun_us_per_round"] = ours_async * 1e6
    figures["tooluse_run_us_per_round"] = ours_sync * 1e6
    if theirs is None:
        print("pydantic-ai not installed (make bench installs it); no baseline this run")
        figures["pydantic_ai_us_per_round"] = None
    else:
        figures["pydantic_ai_us_per_round"] = theirs * 1e6
        figures["arun_over_pydantic_ai"] = ours_async / theirs
        figures["run_over_pydantic_ai"] = ours_sync / theirs
        figures["target_met"] = ours_async <= theirs / 5
    rows = [("tooluse.arun", ours_async), ("tooluse.run", ours_sync)]
    if theirs is not None:
        rows.append(("pydantic-ai Agent.run", theirs))
    for label, value in rows:
        ratio = f"{value / theirs:>14.3f}x" if theirs else f"{'-':>15}"
        print(f"{label:<28} {value * 1e6:>10.1f} {ratio}")
    if theirs is not None:
        verdict = "met" if figures["target_met"] else "NOT met"
        print(f"target (tooluse.arun <= 1/5 of pydantic-ai): {verdict}")
    return figures


if __name__ == "__main__":
    main()
