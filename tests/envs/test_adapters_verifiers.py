"""adapter="verifiers": real verifiers environments (ToolEnv, SingleTurnEnv) on local data sets."""

from __future__ import annotations

import importlib
import json
import signal
import sys

import pytest
import verifiers as vf
from datasets import Dataset

from tooluse import SamplingParams, ScriptedBackend, ToolCall
from tooluse.envs import Action, RewardType, TrajectoryRunner, environment_registry
from tooluse.envs.adapters.verifiers import VerifiersEnvironment, process_signals_kept
from tooluse.errors import MissingDependencyError

ROWS = [
    {"question": "What is 17 + 25?", "answer": "42"},
    {"question": "What is 6 * 7 + 1?", "answer": "43"},
    {"question": "What is 12 / 0?", "answer": "undefined"},
]


@pytest.fixture(autouse=True)
def worker_signals_kept():
    # verifiers' environments install their own SIGINT/SIGTERM handlers when constructed;
    # the test worker process goes on with its own.
    with process_signals_kept():
        yield


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a * b


def divide(a: int, b: int) -> float:
    """Divide a by b.

    Args:
        a: The dividend.
        b: The divisor.
    """
    return a / b


def exact_answer(completion, answer, parser) -> float:
    """1 when the last assistant message is the answer."""
    return 1.0 if (parser.parse_answer(completion) or "").strip() == str(answer) else 0.0


def called_a_tool(completion) -> float:
    """1 when the model called at least one tool."""
    return 1.0 if any(getattr(m, "tool_calls", None) for m in completion) else 0.0


def tool_env(max_turns=6):
    return vf.ToolEnv(
        dataset=Dataset.from_list(ROWS),
        tools=[add, multiply, divide],
        rubric=vf.Rubric(funcs=[exact_answer, called_a_tool], weights=[1.0, 0.5]),
        system_prompt="Use the tools, then reply with the number only.",
        max_turns=max_turns,
    )


def call(name, call_id="c", **arguments):
    return ToolCall(id=call_id, name=name, arguments=arguments)


@pytest.fixture()
def env():
    built = environment_registry.get(name="arith", adapter="verifiers", environment=tool_env())
    yield built
    built.close()


def test_tasks_tools_and_system_prompt_come_from_the_environment(env):
    assert isinstance(env, VerifiersEnvironment)
    assert env.name == "verifiers:arith"
    assert len(env) == 3
    assert [t.name for t in env.tools] == ["add", "multiply", "divide", "submit_answer"]
    vf_schemas = {t.name: t.parameters for t in env.vf_env.tool_defs}
    assert env.tools[0].parameters_schema == vf_schemas["add"]
    assert env.tools[0].description == "Add two integers."
    assert env.system_prompt == "Use the tools, then reply with the number only."
    task = env.task(1)
    assert task.prompt == "What is 6 * 7 + 1?" and task.reference == "43"
    assert env.max_steps == 6  # the environment's max_turns


def test_tool_calls_run_the_environments_functions_and_bad_calls_get_errors(env):
    state, _ = env.reset(options={"task_index": 2})
    calls = (
        call("add", "ok", a=17, b=25),
        call("add", "type", a="seventeen", b=25),
        call("sqrt", "unknown", x=4),
        call("divide", "boom", a=12, b=0),
    )
    result = env.step(state, Action(tool_calls=calls))
    by_id = {r.call_id: r for r in result.tool_results}
    assert [r.call_id for r in result.tool_results] == ["ok", "type", "unknown", "boom"]
    assert by_id["ok"].output == "42" and not by_id["ok"].is_error
    assert by_id["type"].is_error and "a" in by_id["type"].output
    assert by_id["unknown"].is_error and "sqrt" in by_id["unknown"].output
    assert by_id["boom"].is_error and "ZeroDivisionError" in by_id["boom"].output
    assert not result.done
    assert result.signals.get("verifiers_rubric") is None  # scored only at the end
    assert result.signals.get("tool_validity").value == 0.25
    messages = result.state.data["messages"]
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool", "tool", "tool"]
    assert messages[0]["tool_calls"][0] == {
        "id": "ok",
        "name": "add",
        "arguments": '{"a": 17, "b": 25}',
    }


def test_a_text_answer_is_scored_by_the_rubric(env):
    state, _ = env.reset(options={"task_index": 0})
    used = env.step(state, Action(tool_calls=(call("add", a=17, b=25),)))
    right = env.step(used.state, Action(text="42"))
    assert right.terminated and right.info["correct"] is True
    rubric = right.signals.get("verifiers_rubric")
    assert rubric.reward_type is RewardType.OUTCOME
    assert rubric.value == 1.5  # exact_answer (1.0) + called_a_tool (0.5 x 1)
    metrics = rubric.info["metrics"]
    assert metrics["exact_answer"] == 1.0 and metrics["called_a_tool"] == 1.0
    assert metrics["total_tool_calls"] == 1.0 and metrics["add_calls"] == 1.0
    assert metrics["num_turns"] == 2.0
    assert right.reward == 1.5
    monitors = {s.name: s for s in right.signals.by_type(RewardType.STEP)}
    assert monitors["tool_validity"].weight == 0.0 and monitors["tool_efficiency"].weight == 0.0
    # A branch from the same state with a wrong answer scores lower and is not correct.
    wrong = env.step(used.state, Action(text="41"))
    assert wrong.info["correct"] is False
    assert wrong.signals.get("verifiers_rubric").value == 0.5


def test_submit_answer_is_the_final_assistant_message(env):
    state, _ = env.reset(options={"task_index": 1})
    result = env.step(state, Action(tool_calls=(call("submit_answer", answer="43"),)))
    assert result.terminated
    # exact_answer 1.0, called_a_tool 0 (submit_answer is tooluse's, not a tool of the env).
    assert result.info["verifiers_metrics"]["exact_answer"] == 1.0
    assert result.info["verifiers_metrics"]["total_tool_calls"] == 0.0
    assert result.info["verifiers_reward"] == 1.0 and result.info["correct"] is True
    assert result.state.data["messages"] == [{"role": "assistant", "content": "43"}]


def test_success_reward_sets_the_bar():
    strict = VerifiersEnvironment(tool_env(), env_name="arith", success_reward=1.5)
    state, _ = strict.reset(options={"task_index": 1})
    result = strict.step(state, Action(text="43"))
    assert result.info["verifiers_reward"] == 1.0 and result.info["correct"] is False


def test_max_steps_truncates_and_the_rubric_still_scores():
    env = VerifiersEnvironment(tool_env(), env_name="arith", max_steps=2)
    state, _ = env.reset(options={"task_index": 0})
    one = env.step(state, Action(tool_calls=(call("add", "a", a=1, b=2),)))
    two = env.step(one.state, Action(tool_calls=(call("add", "b", a=17, b=25),)))
    assert two.truncated and not two.terminated
    assert "correct" not in two.info
    assert two.signals.get("verifiers_rubric").value == 0.5  # tools called, no answer


def test_state_saves_restores_and_replays(env):
    state, _ = env.reset(options={"task_index": 1})
    one = env.step(state, Action(tool_calls=(call("multiply", "m", a=6, b=7),)))
    saved = json.loads(json.dumps(env.save_state(one.state)))
    restored = env.restore_state(saved)
    assert restored.data == one.state.data
    two = env.step(restored, Action(tool_calls=(call("add", "p", a=42, b=1),)))
    assert two.tool_results[0].output == "43"
    end = env.step(two.state, Action(text="43"))
    assert end.info["correct"] is True
    assert end.info["verifiers_metrics"]["total_tool_calls"] == 2.0


def test_a_trajectory_runs_in_the_runner(env):
    backend = ScriptedBackend(
        [[call("multiply", "m", a=6, b=7)], [call("add", "p", a=42, b=1)], "43", "unused"]
    )
    runner = TrajectoryRunner(
        environment=env,
        backend=backend,
        sampling_params=SamplingParams(temperature=0.0),
        system_prompt=env.system_prompt,
    )
    trajectory = runner.run_trajectory(task_index=1)
    assert trajectory.success and trajectory.terminated
    assert trajectory.environment == "verifiers:arith"
    assert trajectory.total_reward == 1.5
    assert trajectory.answer == "43"
    roles = [m.role for m in trajectory.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert trajectory.steps[-1].result.info["verifiers_metrics"]["multiply_calls"] == 1.0


async def test_async_trajectory(env):
    backend = ScriptedBackend([[call("add", "a", a=17, b=25)], "42"])
    trajectory = await TrajectoryRunner(environment=env, backend=backend).arun_trajectory(0)
    assert trajectory.success
    assert trajectory.steps[-1].result.signals.get("verifiers_rubric").value == 1.5


def test_single_turn_env_is_answered_in_one_turn():
    single = vf.SingleTurnEnv(
        dataset=Dataset.from_list(ROWS[:2]), rubric=vf.Rubric(funcs=[exact_answer])
    )
    env = environment_registry.get(name="qa", adapter="verifiers", environment=single)
    assert [t.name for t in env.tools] == ["submit_answer"]
    assert env.max_steps == 1 and env.system_prompt == ""
    trajectory = TrajectoryRunner(environment=env, backend=ScriptedBackend(["42"])).run_trajectory(
        0
    )
    assert trajectory.success and trajectory.total_reward == 1.0


TINY_ENV_PACKAGE = '''
import verifiers as vf
from datasets import Dataset


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def exact(completion, answer, parser) -> float:
    return 1.0 if parser.parse_answer(completion) == answer else 0.0


def load_environment(n: int = 2):
    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(n)]
    return vf.ToolEnv(dataset=Dataset.from_list(rows), tools=[add], rubric=vf.Rubric(funcs=[exact]))
'''


def test_load_environment_loads_an_installed_environment_package(tmp_path, monkeypatch):
    (tmp_path / "tiny_arith_env.py").write_text(TINY_ENV_PACKAGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = environment_registry.get(name="tiny-arith-env", adapter="verifiers", env_args={"n": 3})
    assert len(env) == 3 and env.task(2).prompt == "What is 2 + 2?"
    state, _ = env.reset(options={"task_index": 2})
    assert env.step(state, Action(text="4")).info["correct"] is True


def test_loading_an_environment_keeps_the_process_signal_handlers(tmp_path, monkeypatch):
    (tmp_path / "tiny_arith_env.py").write_text(TINY_ENV_PACKAGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    ours = {number: (lambda *_: None) for number in (signal.SIGINT, signal.SIGTERM)}
    for number, handler in ours.items():
        signal.signal(number, handler)
    # verifiers itself replaces them ...
    importlib.import_module("tiny_arith_env").load_environment(n=1)
    assert signal.getsignal(signal.SIGINT) is not ours[signal.SIGINT]
    assert signal.getsignal(signal.SIGTERM) is not ours[signal.SIGTERM]
    for number, handler in ours.items():
        signal.signal(number, handler)
    # ... tooluse's adapter loads it with the process's own handlers kept
    env = environment_registry.get(name="tiny-arith-env", adapter="verifiers", env_args={"n": 1})
    assert len(env) == 1
    assert {n: signal.getsignal(n) for n in ours} == ours


def test_bad_environments_get_clear_errors():
    with pytest.raises(ValueError, match="could not load the environment 'no-such-vf-env'"):
        environment_registry.get(name="no-such-vf-env", adapter="verifiers")

    class Counter(vf.StatefulToolEnv):
        def update_tool_args(self, tool_name, tool_args, messages, state, **kwargs):
            return tool_args

    stateful = Counter(dataset=Dataset.from_list(ROWS), tools=[add])
    with pytest.raises(ValueError, match="not Counter"):
        environment_registry.get(name="c", adapter="verifiers", environment=stateful)
    with pytest.raises(ValueError, match="split must be"):
        VerifiersEnvironment(tool_env(), split="test")


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "verifiers", None)
    with pytest.raises(MissingDependencyError) as caught:
        environment_registry.get(name="anything", adapter="verifiers")
    assert "--no-deps 'verifiers==0.1.14'" in str(caught.value)


@pytest.mark.slow
def test_local_model_plays_an_episode(env):
    from tooluse.local import LlamaCppBackend

    runner = TrajectoryRunner(
        environment=env,
        backend=LlamaCppBackend.default(max_tokens=64),
        sampling_params=SamplingParams(temperature=0.0, max_tokens=64),
        system_prompt=env.system_prompt,
        max_turns=3,
    )
    trajectory = runner.run_trajectory(task_index=0)
    print(
        f"\nlocal model on verifiers:arith: success={trajectory.success} "
        f"steps={len(trajectory.steps)} stop={trajectory.stop_reason} answer={trajectory.answer!r}"
    )
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(answered)
    last = trajectory.steps[-1].result
    if last.done:  # the rubric scored the conversation the model produced
        assert last.signals.get("verifiers_rubric") is not None
        assert last.info["verifiers_metrics"]["total_tool_calls"] == sum(
            1 for s in trajectory.steps for c in s.calls if c.name != "submit_answer"
        )
    assert trajectory.success == bool(
        trajectory.terminated and trajectory.steps[-1].result.info.get("correct")
    )
