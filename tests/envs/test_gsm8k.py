"""math:gsm8k from a local JSONL file, stateful python sessions per episode, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tooluse import ScriptedBackend, ToolCall
from tooluse.envs import (
    Action,
    ArithmeticEnvironment,
    GSM8KEnvironment,
    NumericCorrectnessReward,
    StepContext,
    TrajectoryRunner,
    environment_registry,
    load_gsm8k,
)

DATA = Path(__file__).parent / "data" / "gsm8k_sample.jsonl"


@pytest.fixture()
def env():
    environment = environment_registry.get(name="math:gsm8k", data_path=DATA)
    yield environment
    environment.close()


def python_call(code, call_id="p"):
    return ToolCall(id=call_id, name="python", arguments={"code": code})


def submit(answer, call_id="s"):
    return ToolCall(id=call_id, name="submit_answer", arguments={"answer": answer})


def test_loads_the_file_and_offers_python_and_submit(env):
    assert len(env) == 4
    assert env.task(1).reference == 8.75 and env.task(0).reference == 6
    assert env.task(0).metadata["line"] == 1
    state, _ = env.reset(options={"task_index": 2})
    assert state.observation.prompt.startswith("A school has 1,250 students.")
    assert [t.name for t in state.observation.available_tools] == ["python", "submit_answer"]
    assert "kept between calls" in state.observation.available_tools[0].description


def test_llenvs_spelling_and_limit():
    env = environment_registry.get(name="math:GSM8K", data_path=str(DATA), limit=2)
    assert env.name == "math:gsm8k" and len(env) == 2
    env.close()


def test_a_solved_episode_with_variables_kept_between_calls(env):
    backend = ScriptedBackend(
        [
            [python_call("made = 14 + 9", "p1")],
            [python_call("print(made - 17)", "p2")],
            [submit("6 loaves", "s")],
        ]
    )
    trajectory = TrajectoryRunner(environment=env, backend=backend).run_trajectory(0)
    assert trajectory.success and trajectory.total_reward == 1.0
    assert trajectory.steps[1].results[0].output == "6"
    assert len(env._sessions) == 0  # the episode's session ended with it


def test_numeric_tolerance_and_answer_formats(env):
    state, _ = env.reset(options={"task_index": 1})
    for answer, right in [
        ("$8.75", True),
        ("8.7500001", True),
        ("#### 8.75", True),
        ("8.8", False),
        ("about nine", False),
    ]:
        result = env.step(state, Action(tool_calls=(submit(answer),)))
        assert result.info["correct"] is right, answer
        assert result.signals.get("correctness").value == float(right)
    reward = NumericCorrectnessReward(tolerance=0.01)
    context = StepContext(calls=(), results=(), answer="8.8", reference=8.75, done=True)
    assert reward.compute(context).value == 1.0
    assert reward.compute(StepContext(calls=(), results=(), done=False)) is None


def test_sessions_never_cross_episodes_and_branches_replay(env):
    first, _ = env.reset(options={"task_index": 0})
    second, _ = env.reset(options={"task_index": 0})
    first = env.step(first, Action(tool_calls=(python_call("secret = 41"),))).state
    leak = env.step(second, Action(tool_calls=(python_call("print(secret)"),)))
    assert leak.tool_results[0].is_error and "NameError" in leak.tool_results[0].output
    # The same state stepped twice, and a restored copy: each sees the variable.
    for branch in (first, first, env.restore_state(json.loads(json.dumps(env.save_state(first))))):
        seen = env.step(branch, Action(tool_calls=(python_call("print(secret + 1)"),)))
        assert seen.tool_results[0].output == "42"


def test_a_killed_sandbox_is_reported_and_the_episode_goes_on():
    env = GSM8KEnvironment(DATA, python_timeout=1.0)
    state, _ = env.reset(options={"task_index": 0})
    state = env.step(state, Action(tool_calls=(python_call("x = 5"),))).state
    killed = env.step(state, Action(tool_calls=(python_call("while True: pass"),)))
    assert killed.tool_results[0].is_error and not killed.done
    assert "variables are lost" in killed.tool_results[0].output
    after = env.step(killed.state, Action(tool_calls=(python_call("print(2 + 2)"),)))
    assert after.tool_results[0].output == "4"
    # Killed from outside between calls: the next call gets a fresh interpreter.
    (live,) = env._sessions._live.values()
    process = live.session._state.child.process
    process.kill()
    process.wait(timeout=10)  # killed and reaped: poll() alone may not see it yet
    again = env.step(after.state, Action(tool_calls=(python_call("print(3 * 3)"),)))
    assert again.tool_results[0].output == "9"
    done = env.step(again.state, Action(tool_calls=(submit("6"),)))
    assert done.info["correct"] is True
    env.close()


def test_stateless_python_is_still_available():
    env = ArithmeticEnvironment(python_session=False)
    state, _ = env.reset()
    state = env.step(state, Action(tool_calls=(python_call("y = 3"),))).state
    result = env.step(state, Action(tool_calls=(python_call("print(y)"),)))
    assert "NameError" in result.tool_results[0].output
    env.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"question": "q", "answer": "#### 1"}\n{"question": "q2", "answer": "#### 2"\n',
            r"line 2: not valid JSON",
        ),
        (
            '{"question": "q", "answer": "#### 1"}\n\n{"answer": "#### 2"}\n',
            r"line 3: missing 'question'",
        ),
        (
            '{"question": "q", "answer": "it is 4"}\n',
            r"line 1: the answer does not end with '#### <number>'",
        ),
        ('{"question": "q", "answer": "#### many"}\n', r"line 1: no number after '####'"),
        ("[1, 2]\n", r"line 1: expected an object"),
        ("\n", r"no tasks in the file"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_gsm8k(path)


def test_missing_file_and_missing_path_are_clear(tmp_path):
    with pytest.raises(ValueError, match="GSM8K data file not found: .*nope.jsonl"):
        GSM8KEnvironment(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="needs data_path"):
        environment_registry.get(name="math:gsm8k")
