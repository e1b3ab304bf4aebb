"""MCP call latency: tooluse's MCP executors vs the official SDK client, same server, same run.

The server is the SDK-built demo server of the tests (a real stdio subprocess). Measured:

- ``startup``: spawn + handshake + first tool listing; baseline ``mcp.Client`` + ``list_tools``.
- ``call (async)``: one ``echo`` call at a time; baseline ``Client.call_tool`` on an open
  client, tooluse ``MCPToolExecutor.execute_async`` (argument validation + result conversion).
- ``call (sync)``: ``SyncMCPToolExecutor.execute`` from plain code (one hand-off to its
  background loop per call) against the same SDK baseline.
- ``reconnect per call``: what a facade doing ``asyncio.run`` + connect for every call costs
  (the pattern of hand-written executors), against the persistent sync facade.
- ``batch of 20``: 20 concurrent calls with ``execute_batch_async`` vs 20 sequential
  ``Client.call_tool`` calls.

Figures are milliseconds (median of the rounds) and ratios tooluse / baseline (lower is
better for tooluse; ratios near 1.0 mean "no measurable overhead").
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.execution.mcp.sync import SyncMCPToolExecutor
from tooluse.messages import ToolCall

DEMO = str(
    Path(__file__).resolve().parent.parent
    / "tests"
    / "execution"
    / "mcp_servers"
    / "demo_server.py"
)
CONFIG = MCPServerConfig(command=sys.executable, args=(DEMO,))
CALLS = 150
STARTS = 5
SYNC_BLOCKS = 3
RECONNECTS = 3
BATCH = 20
BATCH_ROUNDS = 10


def sdk_client(errlog: Any) -> Client:
    params = StdioServerParameters(command=sys.executable, args=[DEMO])
    return Client(stdio_client(params, errlog=errlog))


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


async def time_startups() -> tuple[list[float], list[float]]:
    sdk, ours = [], []
    async with MCPToolExecutor(CONFIG) as warm_up:  # first use imports modules: not timed
        await warm_up.list_tools()
    for _ in range(STARTS):
        with tempfile.TemporaryFile("w+") as errlog:
            started = time.perf_counter()
            async with sdk_client(errlog) as client:
                await client.list_tools()
                sdk.append(time.perf_counter() - started)
        started = time.perf_counter()
        async with MCPToolExecutor(CONFIG) as executor:
            await executor.list_tools()
            ours.append(time.perf_counter() - started)
    return sdk, ours


async def time_async_calls() -> tuple[list[float], list[float], list[float], list[float]]:
    sdk, ours, sdk_batch, our_batch = [], [], [], []
    with tempfile.TemporaryFile("w+") as errlog:
        async with sdk_client(errlog) as client, MCPToolExecutor(CONFIG) as executor:
            await client.list_tools()
            await executor.list_tools()
            for i in range(CALLS):  # interleaved, so load on the machine hits both alike
                started = time.perf_counter()
                await client.call_tool("echo", {"text": f"m{i}"})
                sdk.append(time.perf_counter() - started)
                started = time.perf_counter()
                result = await executor.execute_async(
                    ToolCall(name="echo", arguments={"text": f"m{i}"})
                )
                ours.append(time.perf_counter() - started)
                assert result.output == f"m{i}", result
            calls = [ToolCall(name="echo", arguments={"text": str(i)}) for i in range(BATCH)]
            for _ in range(BATCH_ROUNDS):
                started = time.perf_counter()
                for call in calls:
                    await client.call_tool("echo", call.arguments)
                sdk_batch.append(time.perf_counter() - started)
                started = time.perf_counter()
                results = await executor.execute_batch_async(calls)
                our_batch.append(time.perf_counter() - started)
                assert [r.output for r in results] == [str(i) for i in range(BATCH)]
    return sdk, ours, sdk_batch, our_batch


async def sdk_calls(count: int) -> list[float]:
    """``count`` timed SDK calls on one open client (connecting is not timed)."""
    times = []
    with tempfile.TemporaryFile("w+") as errlog:
        async with sdk_client(errlog) as client:
            await client.list_tools()
            for i in range(count):
                started = time.perf_counter()
                await client.call_tool("echo", {"text": f"b{i}"})
                times.append(time.perf_counter() - started)
    return times


def time_sync_calls() -> tuple[list[float], list[float], list[float]]:
    baseline, persistent, reconnecting = [], [], []
    with SyncMCPToolExecutor(CONFIG) as executor:
        executor.list_tools()
        # Alternating blocks, so load from elsewhere on the machine hits both sides alike.
        for block in range(SYNC_BLOCKS):
            baseline.extend(asyncio.run(sdk_calls(CALLS // SYNC_BLOCKS)))
            for i in range(CALLS // SYNC_BLOCKS):
                started = time.perf_counter()
                result = executor.execute(ToolCall(name="echo", arguments={"text": f"s{block}{i}"}))
                persistent.append(time.perf_counter() - started)
                assert result.output == f"s{block}{i}"

    async def connect_and_call() -> None:
        async with MCPToolExecutor(CONFIG) as executor:
            await executor.execute_async(ToolCall(name="echo", arguments={"text": "x"}))

    for _ in range(RECONNECTS):
        started = time.perf_counter()
        asyncio.run(connect_and_call())
        reconnecting.append(time.perf_counter() - started)
    return baseline, persistent, reconnecting


def main() -> dict[str, Any]:
    sdk_start, our_start = asyncio.run(time_startups())
    sdk_call, our_call, sdk_batch, our_batch = asyncio.run(time_async_calls())
    sync_base, sync_call, reconnect_call = time_sync_calls()
    med = statistics.median
    rows = [
        ("startup + list_tools", med(sdk_start), med(our_start)),
        ("call (async)", med(sdk_call), med(our_call)),
        ("call (sync facade)", med(sync_base), med(sync_call)),
        (f"batch of {BATCH} (concurrent vs sequential)", med(sdk_batch), med(our_batch)),
        ("sync call: reconnect per call vs persistent", med(reconnect_call), med(sync_call)),
    ]
    print(f"{'case':48} {'baseline ms':>12} {'tooluse ms':>12} {'ratio':>8}")
    figures: dict[str, Any] = {"calls_per_case": CALLS}
    for label, base, ours in rows:
        ratio = ours / base if base else float("nan")
        print(f"{label:48} {ms(base):12.3f} {ms(ours):12.3f} {ratio:8.3f}")
        figures[label] = {"baseline_ms": ms(base), "tooluse_ms": ms(ours), "ratio": round(ratio, 3)}
    print("(baselines: the mcp SDK Client on the same server; last row: asyncio.run + connect)")
    return figures


if __name__ == "__main__":
    main()
