"""TrajectoryRunner: episodes through the tool loop, the three-way priority, JSON records."""

from __future__ import annotations

import json
import logging

import pytest

import tooluse
from tooluse import (
    HermesToolCallParser,
    ModelCapabilities,
    SamplingParams,
    ScriptedBackend,
    ToolCall,
)
from tooluse.envs import (
    ArithmeticEnvironment,
    RewardType,
    TrajectoryRunner,
    environment_registry,
    write_trajectories,
)

NO_NATIVE = ModelCapabilities(supports_function_calling=False)


@pytest.fixture()
def env():
    environment = environment_registry.get(name="math:word_problems", tool_types=("python",))
    yield environment
    environment.close()


def python_call(code, call_id):
    return ToolCall(id=call_id, name="python", arguments={"code": code})


def submit(answer, call_id="s"):
    return ToolCall(id=call_id, name="submit_answer", arguments={"answer": answer})


def test_native_episode_solves_the_task_and_records_everything(env):
    backend = ScriptedBackend(
        [[python_call("print(0.15 * 80)", "p1")], [submit("12.0", "s1")], "unused"]
    )
    runner = TrajectoryRunner(
        environment=env,
        backend=backend,
        sampling_params=SamplingParams(temperature=0.0),
        system_prompt="Use tools to solve problems. Submit your final answer.",
    )
    trajectory = runner.run_trajectory(task_index=0)
    assert trajectory.success
    assert trajectory.terminated and not trajectory.truncated
    assert trajectory.answer == "12.0"
    assert trajectory.stop_reason == "episode_done"
    assert trajectory.mode == "native"
    assert backend.remaining == 1  # the run stopped right after the submission
    assert len(trajectory.steps) == 2
    assert trajectory.steps[0].results[0].output == "12.0"
    assert trajectory.total_reward == 1.0
    assert trajectory.num_tool_calls == 2
    # The model saw both tools, with submit_answer offered like any other tool.
    offered = [(t.name, t.is_terminal) for t in backend.requests[0].tools]
    assert offered == [("python", False), ("submit_answer", True)]  # the model knows which ends it
    assert backend.requests[0].params == SamplingParams(temperature=0.0)
    # Every call id in the history has exactly one result.
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert calls == answered == ["p1", "s1"]
    assert trajectory.messages[0].role == "system"
    # Each step carries the monitoring signals.
    for step in trajectory.steps:
        names = {s.name for s in step.result.signals.by_type(RewardType.STEP)}
        assert names == {"tool_validity", "tool_efficiency"}


def test_trajectory_json_is_complete_and_round_trips(env, tmp_path):
    backend = ScriptedBackend([[python_call("print(2+2)", "p"), submit("12", "s")]])
    trajectory = TrajectoryRunner(environment=env, backend=backend).run_trajectory(task_index=0)
    data = json.loads(trajectory.to_json())
    assert data["success"] is True
    assert data["reference"] == 12
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "tool", "tool"]
    assert data["messages"][1]["tool_calls"][0] == {
        "id": "p",
        "name": "python",
        "arguments": {"code": "print(2+2)"},
    }
    step = data["steps"][0]
    assert [r["output"] for r in step["results"]] == ["4", "answer submitted"]
    assert {s["name"] for s in step["signals"]["signals"]} == {
        "correctness",
        "tool_validity",
        "tool_efficiency",
    }
    assert step["info"]["correct"] is True
    path = tmp_path / "trajectories.jsonl"
    assert write_trajectories([trajectory, trajectory], path) == 2
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["task_id"] == "tip"


def test_wrong_answer_is_recorded_as_failure(env):
    backend = ScriptedBackend([[submit("13")]])
    trajectory = TrajectoryRunner(environment=env, backend=backend).run_trajectory(task_index=0)
    assert not trajectory.success
    assert trajectory.terminated
    assert trajectory.total_reward == 0.0


def test_final_text_without_submit_is_graded_as_the_answer(env):
    backend = ScriptedBackend([[python_call("print(72+85+90+64+99)", "p")], "The average is 82."])
    trajectory = TrajectoryRunner(environment=env, backend=backend).run_trajectory(task_index=5)
    assert trajectory.success
    assert trajectory.stop_reason == "final_text"
    assert trajectory.steps[-1].result.info["answer_source"] == "text"
    assert trajectory.steps[-1].calls == ()


def test_a_required_first_call_is_asked_for_once_then_the_model_chooses(env):
    from tooluse.envs import RunnerSpec

    backend = ScriptedBackend([[python_call("print(0.15 * 80)", "p1")], [submit("12.0", "s1")]])
    runner = TrajectoryRunner(environment=env, backend=backend, tool_choice="required")
    trajectory = runner.run_trajectory(task_index=0)
    assert trajectory.success
    assert [r.tool_choice for r in backend.requests] == ["required", "auto"]
    assert RunnerSpec(environment="math:arithmetic", tool_choice="required").tool_choice == (
        "required"
    )


def test_text_parser_is_used_when_the_backend_has_no_native_calling(env):
    reply = (
        'Let me compute.\n<tool_call>\n{"name": "python", "arguments": {"code": "print(17**5)"}}'
        "\n</tool_call>"
    )
    done = (
        '<tool_call>\n{"name": "submit_answer", "arguments": {"answer": "1419857"}}\n</tool_call>'
    )
    backend = ScriptedBackend([reply, done], capabilities=NO_NATIVE)
    runner = TrajectoryRunner(
        environment=env, backend=backend, tool_call_parser=HermesToolCallParser()
    )
    trajectory = runner.run_trajectory(task_index=4)
    assert trajectory.mode == "text"
    assert trajectory.success
    assert trajectory.steps[0].results[0].output == "1419857"
    assert trajectory.steps[0].text == "Let me compute."
    # Tools went into the prompt as text, not as native tools.
    first = backend.requests[0]
    assert first.tools == ()
    assert "<tools>" in first.messages[0].content and "submit_answer" in first.messages[0].content


def test_native_wins_over_a_configured_parser(env):
    backend = ScriptedBackend([[submit("12")]])
    runner = TrajectoryRunner(
        environment=env, backend=backend, tool_call_parser=HermesToolCallParser()
    )
    trajectory = runner.run_trajectory(task_index=0)
    assert trajectory.mode == "native"
    assert [t.name for t in backend.requests[0].tools] == ["python", "submit_answer"]


def test_tools_are_ignored_with_a_warning_naming_the_backend(env, caplog):
    backend = ScriptedBackend(["It is 12."], capabilities=NO_NATIVE, name="plain-local")
    runner = TrajectoryRunner(environment=env, backend=backend)
    with caplog.at_level(logging.WARNING):
        trajectory = runner.run_trajectory(task_index=0)
    assert trajectory.mode == "none"
    assert backend.requests[0].tools == ()
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "plain-local" in warning and "ignored" in warning
    assert trajectory.success  # the text answer is still graded


def test_loop_limit_truncates_the_episode(env):
    backend = ScriptedBackend(
        [[python_call(f"print({i})", f"p{i}")] for i in range(5)] + ["never reached"]
    )
    runner = TrajectoryRunner(environment=env, backend=backend, max_turns=2)
    trajectory = runner.run_trajectory(task_index=0)
    assert not trajectory.success
    assert trajectory.truncated and not trajectory.terminated
    assert trajectory.stop_reason == "max_tool_iters"
    assert len(trajectory.steps) == 2
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert calls == answered


def test_run_all_covers_every_task():
    env = ArithmeticEnvironment(tool_types=())
    answers = [str(task.reference) for task in env.tasks]
    answers[-1] = "0"  # one wrong answer
    backend = ScriptedBackend([[submit(a, f"s{i}")] for i, a in enumerate(answers)])
    trajectories = TrajectoryRunner(environment=env, backend=backend).run_all()
    assert [t.task_index for t in trajectories] == list(range(len(env)))
    assert [t.success for t in trajectories] == [True] * (len(env) - 1) + [False]


async def test_async_trajectory(env):
    backend = ScriptedBackend([[python_call("print(356 - 28 * 9)", "p")], [submit("104")]])
    runner = TrajectoryRunner(environment=env, backend=backend)
    trajectory = await runner.arun_trajectory(task_index=6)
    assert trajectory.success
    assert trajectory.steps[0].results[0].output == "104"


def test_runner_is_exported_at_top_level():
    assert tooluse.TrajectoryRunner is TrajectoryRunner
