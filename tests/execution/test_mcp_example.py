"""``examples/mcp_time_local.py``: the tool loop with ``convert_time`` from ``mcp-server-time``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

import mcp_server_time  # noqa: E402, F401  (installed by make install: absent is a failure)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_time_local.py"


def load_example():
    spec = importlib.util.spec_from_file_location("mcp_time_local", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["mcp_time_local"] = module
    spec.loader.exec_module(module)
    return module


def answered_once(result) -> bool:
    calls = [c.id for m in result.messages if m.role == "assistant" for c in m.tool_calls]
    answers = [m.result.call_id for m in result.messages if m.role == "tool"]
    return sorted(calls) == sorted(answers)


def test_example_with_a_scripted_model():
    example = load_example()
    result = example.main(example.scripted_model())
    [step] = result.trail
    assert step.name == "convert_time" and not step.is_error
    assert '"datetime": "' in step.output and "T21:00:00+09:00" in step.output
    assert answered_once(result)


def test_example_with_the_embedded_local_model():
    import llama_cpp  # noqa: F401  (installed by make install; absent is a failure)

    example = load_example()
    backend = example.local_model()  # installed by make install: a failure here is real
    result = example.main(backend)
    # The 135M model's arguments are schema-valid (grammar) but not always sensible; either way
    # the call must have reached the real server and come back with its answer.
    assert result.trail, "the forced first round produced no tool call"
    for step in result.trail:
        assert step.name == "convert_time"
        if step.is_error:
            assert "Error executing tool convert_time" in step.output  # the server's own words
        else:
            assert '"time_difference"' in step.output
    assert answered_once(result)
