"""The resume rule for calls that were running when the state was written, without killing a
process: the state file is read while the round's calls run (the file a crash at that moment
leaves), and the run is resumed from it. A call whose tool is not idempotent is answered as
interrupted and never runs again; an idempotent one runs again and answers with its result.
(``test_durable_runs.py`` kills a real process at random points; this is the rule itself.)"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest

import tooluse
from tooluse import (
    BaseBackend,
    GenerationResult,
    RunState,
    StopReason,
    ToolCall,
    aresume,
    resume,
    run,
    tool,
)
from tooluse.providers.history import validate_history

REGISTRY = tooluse.ToolRegistry()
RAN: Counter[str] = Counter()
SNAPSHOTS: list[RunState] = []
CHECKPOINT: list[object] = []  # the run's checkpoint path, for the tool that reads it
SNAPPED = threading.Event()


@tool(registry=REGISTRY)
def charge(order: int) -> str:
    """Charge an order (must never happen twice).

    Args:
        order: The order number.
    """
    RAN["charge"] += 1
    if CHECKPOINT and not SNAPPED.is_set():
        # what is on disk while this call runs: a crash now would leave exactly this file
        SNAPSHOTS.append(RunState.load(CHECKPOINT[0]))
        SNAPPED.set()
    return f"charged {order}"


@tool(idempotent=True, registry=REGISTRY)
def fetch(key: int) -> str:
    """Fetch a record (safe to repeat).

    Args:
        key: The record.
    """
    RAN["fetch"] += 1
    SNAPPED.wait(timeout=30)  # still running when charge reads the state file
    return f"record {key}"


class Planner(BaseBackend):
    """Asks for a charge and a fetch, then answers: it decides from the history alone, so a
    resumed run asks for what the first one did."""

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        if any(m.role == "tool" for m in messages):
            return GenerationResult(text="all done")
        calls = (
            ToolCall(id="charge_1", name="charge", arguments={"order": 1}),
            ToolCall(id="fetch_1", name="fetch", arguments={"key": 1}),
        )
        return GenerationResult(tool_calls=calls, finish_reason="tool_calls")


TOOLS = [charge, fetch]


@pytest.fixture
def state_with_calls_in_flight(tmp_path) -> RunState:
    """The state file as the loop wrote it while both calls of its round were running."""
    RAN.clear()
    SNAPSHOTS.clear()
    SNAPPED.clear()
    CHECKPOINT[:] = [tmp_path / "run.json"]
    try:
        finished = run(Planner(), "process order 1", tools=TOOLS, checkpoint=CHECKPOINT[0])
    finally:
        CHECKPOINT.clear()
    assert finished.stop_reason is StopReason.FINAL_TEXT
    assert RAN == Counter(charge=1, fetch=1)
    (state,) = SNAPSHOTS
    assert state.stop_reason is None and state.round is not None
    assert set(state.round.in_flight) == {"charge_1", "fetch_1"}
    assert not state.round.results  # nothing answered yet
    RAN.clear()
    return state


def check_resumed(result: tooluse.RunResult) -> None:
    assert result.stop_reason is StopReason.FINAL_TEXT
    assert result.final_text == "all done"
    # the charge may have happened before the crash: it is not run again, and says so
    assert RAN["charge"] == 0
    # the fetch is safe to repeat: it ran again and the model got its result
    assert RAN["fetch"] == 1
    messages = list(result.messages)
    assert validate_history(messages) == messages  # every call answered once, in place
    answers = {m.result.call_id: m.result for m in messages if m.role == "tool"}
    assert set(answers) == {"charge_1", "fetch_1"}
    assert answers["charge_1"].is_error and "interrupted" in answers["charge_1"].output
    assert "not run again" in answers["charge_1"].output
    assert not answers["fetch_1"].is_error and answers["fetch_1"].output == "record 1"


def test_resume_runs_again_only_the_idempotent_call_in_flight(state_with_calls_in_flight):
    SNAPPED.set()  # nothing to wait for now
    check_resumed(resume(Planner(), state_with_calls_in_flight, tools=TOOLS))


def test_aresume_keeps_the_same_rule(state_with_calls_in_flight):
    SNAPPED.set()
    check_resumed(asyncio.run(aresume(Planner(), state_with_calls_in_flight, tools=TOOLS)))
