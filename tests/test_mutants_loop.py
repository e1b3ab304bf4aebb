"""Tests aimed at loop-core mutants the other loop tests let through: the saved run format
(read by ``tooluse report`` and the trace viewer) and the module's public names."""

from __future__ import annotations

import json

import tooluse.loop.core as loop_core
from tooluse.loop.core import LoopSetup, RunResult, StopReason, TrailEntry
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage


def sample_result() -> RunResult:
    call = ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}, raw_arguments='{"a":1,"b":2}')
    return RunResult(
        final_text="3",
        messages=(
            ChatMessage.user("add 1 and 2"),
            ChatMessage(role="assistant", content="", tool_calls=(call,), reasoning="sum it"),
            ChatMessage(
                role="tool",
                name="add",
                result=ToolResult(call_id="c1", tool_name="add", output="3", is_error=True),
            ),
            ChatMessage(role="assistant", content="3"),
        ),
        stop_reason=StopReason.MAX_TOOL_ITERS,
        trail=(
            TrailEntry(
                call_id="c1",
                name="add",
                arguments={"a": 1, "b": 2},
                output="3",
                is_error=True,
                duration=0.25,
                iteration=2,
            ),
        ),
        usage=Usage(input_tokens=10, output_tokens=4, requests=2),
        output={"total": 3},
        iterations=2,
        mode="text",
        new_messages_start=1,
    )


def test_saved_run_has_the_documented_keys(tmp_path):
    path = tmp_path / "run.json"
    sample_result().save(path)
    data = json.loads(path.read_text())
    assert data["stop_reason"] == "max_tool_iters" and data["mode"] == "text"
    assistant = data["messages"][1]
    assert assistant["tool_calls"] == [
        {"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}, "raw": '{"a":1,"b":2}'}
    ]
    assert assistant["reasoning"] == "sum it"
    assert data["messages"][2]["name"] == "add"
    assert data["messages"][2]["result"]["is_error"] is True
    entry = data["trail"][0]
    assert entry["id"] == "c1" and entry["name"] == "add" and entry["duration"] == 0.25
    assert entry["iteration"] == 2


def test_saved_run_loads_back_equal(tmp_path):
    path = tmp_path / "run.json"
    original = sample_result()
    original.save(path)
    loaded = RunResult.load(path)
    assert loaded == original
    assert loaded.new_messages == original.messages[1:]


def test_every_public_name_exists():
    for name in loop_core.__all__:
        assert hasattr(loop_core, name), name
    assert LoopSetup.__dataclass_params__.frozen  # type: ignore[attr-defined]
