"""A run that is killed and resumed by tests/test_durable_runs.py.

``python durable_run.py STATE LOG`` runs ROUNDS tool rounds with a model that decides from the
history alone (so a resumed run asks for the same calls), checkpointing to STATE; when STATE
exists it resumes from it. Every tool run appends ``name call_id`` to LOG (fsynced) before it
returns, so the test can count what ran.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tooluse import BaseBackend, GenerationResult, RunState, ToolCall, resume, run, tool
from tooluse.tools import ToolRegistry

ROUNDS = 6
STATE, LOG = Path(sys.argv[1]), Path(sys.argv[2])
REGISTRY = ToolRegistry()


def record(name: str, key: int) -> None:
    with LOG.open("a", encoding="utf-8") as out:
        out.write(f"{name} {key}\n")
        out.flush()
        os.fsync(out.fileno())


@tool(registry=REGISTRY)
def charge(order: int) -> str:
    """Charge an order (must never happen twice).

    Args:
        order: The order number.
    """
    time.sleep(0.1)
    record("charge", order)
    return f"charged {order}"


@tool(idempotent=True, registry=REGISTRY)
def fetch(key: int) -> str:
    """Fetch a record (safe to repeat).

    Args:
        key: The record.
    """
    time.sleep(0.08)
    record("fetch", key)
    return f"record {key}"


class Planner(BaseBackend):
    """Asks for one charge and one fetch per round, then answers."""

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        done = sum(1 for m in messages if m.role == "assistant")
        if done >= ROUNDS:
            return GenerationResult(text="all done")
        calls = (
            ToolCall(id=f"charge_{done}", name="charge", arguments={"order": done}),
            ToolCall(id=f"fetch_{done}", name="fetch", arguments={"key": done}),
        )
        return GenerationResult(tool_calls=calls, finish_reason="tool_calls")


def main() -> None:
    tools = [charge, fetch]
    options = {"tools": tools, "checkpoint": STATE, "max_tool_iters": ROUNDS + 1}
    if STATE.exists():
        result = resume(Planner(), RunState.load(STATE), **options)
    else:
        result = run(Planner(), "process the orders", **options)
    print(result.stop_reason.value, result.final_text)


if __name__ == "__main__":
    main()
