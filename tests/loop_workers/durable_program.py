"""A code-mode run that is killed and resumed by tests/test_code_mode_durable.py.

``python durable_program.py STATE LOG`` has the model write one program that charges ORDERS
orders (must never happen twice) and fetches a record for each (safe to repeat), checkpointing
to STATE; when STATE exists it resumes from it. Every tool run appends ``name key`` to LOG
(fsynced) before it returns, so the test can count what ran.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tooluse import BaseBackend, GenerationResult, RunState, ToolCall, resume, run, tool
from tooluse.tools import ToolRegistry

ORDERS = 6
STATE, LOG = Path(sys.argv[1]), Path(sys.argv[2])
REGISTRY = ToolRegistry()

PROGRAM = f"""
for order in range({ORDERS}):
    try:
        print(await charge(order))
    except ToolError as error:
        print(f"charge {{order}} failed: {{error.message}}")
    print(await fetch(order))
"""


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
    time.sleep(0.05)
    record("charge", order)
    return f"charged {order}"


@tool(idempotent=True, registry=REGISTRY)
def fetch(key: int) -> str:
    """Fetch a record (safe to repeat).

    Args:
        key: The record.
    """
    time.sleep(0.04)
    record("fetch", key)
    return f"record {key}"


class Planner(BaseBackend):
    """Writes the program, then answers (decided from the history alone)."""

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        if any(m.role == "tool" for m in messages):
            return GenerationResult(text="all done")
        call = ToolCall(id="program", name="run_python", arguments={"code": PROGRAM})
        return GenerationResult(tool_calls=(call,), finish_reason="tool_calls")


def main() -> None:
    options = {"tools": [charge, fetch], "checkpoint": STATE, "code_mode": True}
    if STATE.exists():
        result = resume(Planner(), RunState.load(STATE), **options)
    else:
        result = run(Planner(), "process the orders", **options)
    print(result.stop_reason.value, result.final_text)


if __name__ == "__main__":
    main()
