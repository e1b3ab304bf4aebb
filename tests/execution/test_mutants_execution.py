"""Tests aimed at executor and sandbox mutants the other execution tests let through: the
duration every result carries, the reason shown for a cut-off traceback, and the byte limits
handed to the sandboxed child."""

from __future__ import annotations

import dataclasses

from tooluse import ToolCall
from tooluse.execution import SimpleToolExecutor
from tooluse.execution.base import PreparedCall
from tooluse.execution.sandbox.limits import SandboxLimits, error_reason


def test_every_result_records_its_duration():
    executor = SimpleToolExecutor({"echo": lambda text: text})
    result = executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "hi"}))
    assert result.output == "hi" and not result.is_error
    assert isinstance(result.metadata["duration"], float)
    assert result.metadata["duration"] >= 0


def test_prepared_calls_are_frozen():
    assert PreparedCall.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert all(f.kw_only for f in dataclasses.fields(PreparedCall))


def test_reason_for_a_traceback_cut_by_the_output_cap():
    stderr = "Traceback (most recent call last):\n  ...\n... [output truncated: 900 bytes]\n"
    assert error_reason(1, False, 5, stderr) == "exception (see output)"
    assert error_reason(1, False, 5, "ValueError: bad\n") == "ValueError: bad"
    assert error_reason(3, False, 5, "") == "exited with status 3"
    assert error_reason(0, False, 5, "noise") == ""


def test_child_limits_are_in_bytes():
    limits = SandboxLimits(memory_mb=64, file_size_mb=2).child_limits()
    assert limits["memory_bytes"] == 64 * 1024 * 1024
    assert limits["file_size_bytes"] == 2 * 1024 * 1024


def test_every_public_name_exists():
    import tooluse.execution.local as local
    import tooluse.execution.sandbox as sandbox

    for module in (local, sandbox):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
