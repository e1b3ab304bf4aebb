"""The examples in ``examples/`` (the seeds' tools, the loop, extraction, a conversation, an
environment and an evaluation) run as scripts and print what their docs promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_llenvs_tools_example():
    out = run_example("tools_llenvs.py")
    assert "name='get_weather' description='Get the current weather for a city.'" in out
    assert "city: STRING, required=True, description='The city name.'" in out
    assert "units: STRING, required=False" in out
    assert "submit: name='submit' is_terminal=True" in out
    assert "tool message: tool call_1 18 degrees celsius and sunny in Paris" in out
    assert 'citty: unknown argument; did you mean "city"?' in out
    assert '"enum": ["celsius", "fahrenheit"]' in out


def test_mesa_tool_manager_example():
    out = run_example("tools_mesa_manager.py")
    assert "tools: ['change_state', 'move_one_step']" in out
    assert (
        "'required': ['new_state']" in out
        and "agent" not in out.split("schema parameters:")[1].split("\n")[0]
    )
    assert "no tools: []" in out
    assert "call_a change_state -> Agent 42 state changed to protesting" in out
    assert 'did you mean "direction"?' in out
    assert "agent state: ['State changed to: protesting']" in out
    assert "direct call: Agent 42 moved East" in out


def test_interlens_calculator_example():
    out = run_example("tools_interlens_calculator.py")
    assert "resolved: calculator - Evaluate a basic arithmetic expression" in out
    assert "direct: 14" in out
    assert "tool result: 391" in out
    assert "final: 17 * 23 = 391." in out


def test_qwen3_walkthrough_example():
    out = run_example("tools_qwen3_walkthrough.py")
    assert (
        '{"type": "function", "function": {"name": "today", "description": '
        '"Get today\'s date in YYYY-MM-DD.", "parameters": {"type": "object", "properties": {}'
    ) in out
    assert "call: today {}" in out
    assert "tool: 2025-12-25" in out
    assert "call: get_weekday {'date_str': '2025-12-25'}" in out
    assert "tool: Thursday" in out
    assert "final: Today is Thursday, December 25, 2025." in out
    assert "'rating_value': 7.5" in out
    assert 'rating_value: string to number ("7.5" -> 7.5)' in out


@pytest.mark.parametrize("name", ["tools_llenvs.py", "tools_qwen3_walkthrough.py"])
def test_examples_are_deterministic(name):
    assert run_example(name) == run_example(name)


def test_weather_time_loop_example():
    out = run_example("loop_weather_time.py")
    assert '[ok] get_weather({\'city\': \'Paris\'}) -> {"city": "Paris", "temperature": 18' in out
    assert "[ok] get_time({'tz': 'Europe/Paris'}) -> 14:05" in out
    assert (
        "[error] get_weather({'city': 'Atlantis'}) -> error: ValueError: no weather station" in out
    )
    assert "stop: final_text, model requests: 2" in out


def test_movie_extraction_example():
    out = run_example("extract_movie.py")
    assert "rating_value: expected number" in out
    assert "'title': 'Avatar: Fire and Ash'" in out
    assert "'rating_value': 7.5" in out


def test_two_participant_conversation_example():
    out = run_example("conversation_two_participants.py")
    lines = out.splitlines()
    assert lines[0] == "solver: 17 * 23 = 391."
    assert "tool calculator({'expression': '17 * 23'}) -> 391" in lines[1]
    assert lines[2] == "critic: Please verify it another way."
    assert "reloaded 3 messages; solver tools: ['calculator']" in out


def test_examples_importable_functions_behave():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import conversation_two_participants as conv_example
        import loop_weather_time as loop_example
    finally:
        sys.path.remove(str(EXAMPLES))
    assert conv_example.calculator("2 * (3 + 4)") == "14"
    assert loop_example.get_weather("Tokyo", "fahrenheit")["temperature"] == 75
    result = loop_example.main()
    assert result.stop_reason.value == "final_text"


def test_env_arithmetic_example():
    out = run_example("env_arithmetic.py")
    assert "Tools: ['python', 'submit_answer']" in out
    assert "Output: 12.0" in out
    assert "monitor tool_validity=1.00 weight=0.0" in out
    assert "Done: True correct: True reward: 1.0" in out
    assert "Success: True" in out
    assert "steps: 2 reward: 1.0 answer: 52" in out


def test_eval_bfcl_example():
    out = run_example("eval_bfcl.py")
    assert "entries: 11" in out
    assert "simple                    1/7" in out
    assert "irrelevance               4/4" in out
    assert "all entries              5/11" in out


def test_production_runs_example():
    out = run_example("production_runs.py")
    assert "stopped: approval_required waiting: ['refund']" in out
    assert "resumed: final_text -> The order A-17 was refunded." in out
    assert "refunded 41.50 on A-17" in out
    assert "checkpoint: final_text" in out
    assert "fallback: Hello from the spare. cost $0.0004" in out


def test_code_mode_example():
    out = run_example("code_mode.py")
    assert "the model sees: run_python with 2 stubs" in out
    assert "async def weekly_sales(store: str) -> dict:" in out
    assert (
        "stopped: approval_required waiting: set_discount {'store': 'store-00', 'percent': 10}"
        in out
    )
    assert "store calls so far: 20" in out
    assert "2 of 20 stores under target: ['store-00', 'store-18'] | store-00: 10% off" in out
    assert "store calls in all: 20 (none repeated on resume)" in out
    assert "trail: 21 calls made by the program, then run_python" in out
    assert "(2 model turns)" in out
