"""adapter="reasoning_gym": reasoning-gym's procedural tasks as tool environments, for real."""

from __future__ import annotations

import json
import sys

import pytest
import reasoning_gym

from tooluse import SamplingParams, ScriptedBackend, ToolCall
from tooluse.envs import Action, RewardType, TrajectoryRunner, environment_registry
from tooluse.envs.adapters.reasoning_gym import ReasoningGymEnvironment, dataset_names
from tooluse.errors import MissingDependencyError


def submit(answer, call_id="s"):
    return ToolCall(id=call_id, name="submit_answer", arguments={"answer": answer})


def python(code, call_id="p"):
    return ToolCall(id=call_id, name="python", arguments={"code": code})


@pytest.fixture()
def arithmetic():
    env = environment_registry.get(
        name="basic_arithmetic", adapter="reasoning_gym", tool_types=("python",), size=5, seed=3
    )
    yield env
    env.close()


def test_tasks_are_the_generators_entries(arithmetic):
    dataset = reasoning_gym.create_dataset("basic_arithmetic", size=5, seed=3)
    assert len(arithmetic) == 5
    for index in range(5):
        task = arithmetic.task(index)
        assert task.prompt == dataset[index]["question"]
        assert task.reference["answer"] == dataset[index]["answer"]
    state, info = arithmetic.reset(options={"task_index": 4})
    assert state.observation.prompt == dataset[4]["question"]
    assert [t.name for t in state.observation.available_tools] == ["python", "submit_answer"]
    assert info["task_id"] == "basic_arithmetic-3-4"
    other_seed = environment_registry.get(
        name="basic_arithmetic", adapter="reasoning_gym", tool_types=(), size=5, seed=4
    )
    assert [t.prompt for t in other_seed.tasks] != [t.prompt for t in arithmetic.tasks]
    other_seed.close()


def test_python_then_right_answer_scores_one(arithmetic):
    state, _ = arithmetic.reset(options={"task_index": 0})
    expression = arithmetic.task(0).reference["metadata"]["expression"]
    computed = arithmetic.step(state, Action(tool_calls=(python(f"print({expression})"),)))
    assert not computed.done
    value = computed.tool_results[0].output.strip()
    assert computed.signals.get("reasoning_gym_score") is None  # only the last step is graded
    answer = str(int(float(value))) if float(value).is_integer() else value
    result = arithmetic.step(computed.state, Action(tool_calls=(submit(answer),)))
    assert result.terminated and result.info["correct"] is True
    score = result.signals.get("reasoning_gym_score")
    assert score.value == 1.0 and score.reward_type is RewardType.OUTCOME
    assert result.reward == 1.0
    monitors = {s.name for s in result.signals.by_type(RewardType.STEP)}
    assert monitors == {"tool_validity", "tool_efficiency"}
    assert all(s.weight == 0.0 for s in result.signals.by_type(RewardType.STEP))


def test_wrong_and_missing_answers_score_what_the_dataset_says(arithmetic):
    state, _ = arithmetic.reset(options={"task_index": 1})
    reference = arithmetic.task(1).reference["answer"]
    wrong = arithmetic.step(state, Action(tool_calls=(submit(str(int(reference) + 1)),)))
    assert wrong.info["correct"] is False
    assert wrong.signals.get("reasoning_gym_score").value == 0.0
    text = arithmetic.step(state, Action(text=reference))  # a final text reply is the answer
    assert text.info["correct"] is True and text.reward == 1.0
    empty = arithmetic.step(state, Action(tool_calls=(submit(""),)))
    assert empty.info["correct"] is False and empty.reward == 0.0


def test_partial_credit_is_the_reward_and_is_not_success():
    env = environment_registry.get(
        name="gsm_symbolic", adapter="reasoning_gym", tool_types=(), size=2
    )
    task = env.task(0)
    expected = reasoning_gym.create_dataset("gsm_symbolic", size=2, seed=0).score_answer(
        "12345", task.reference
    )
    assert 0.0 < expected < 1.0  # gsm_symbolic gives a little for a wrong answer
    state, _ = env.reset()
    result = env.step(state, Action(tool_calls=(submit("12345"),)))
    assert result.reward == pytest.approx(expected)
    assert result.info["correct"] is False
    right = env.step(state, Action(tool_calls=(submit(task.reference["answer"]),)))
    assert right.info["correct"] and right.reward == 1.0
    env.close()


@pytest.mark.parametrize("name", ["polynomial_equations", "simple_integration", "chain_sum"])
def test_other_generators_grade_their_own_answers(name):
    env = ReasoningGymEnvironment(name, size=2, seed=1, tool_types=())
    state, _ = env.reset(options={"task_index": 1})
    right = env.step(state, Action(tool_calls=(submit(env.task(1).reference["answer"]),)))
    assert right.info["correct"] and right.reward == 1.0
    wrong = env.step(state, Action(tool_calls=(submit("12345.678"),)))
    assert wrong.info["correct"] is False and wrong.reward < 1.0
    env.close()


def test_dataset_config_reaches_the_generator():
    env = ReasoningGymEnvironment(
        "chain_sum", size=3, seed=0, tool_types=(), config={"min_terms": 2, "max_terms": 2}
    )
    for task in env.tasks:
        assert task.reference["metadata"]["num_terms"] == 2
    env.close()


def test_state_saves_and_restores(arithmetic):
    state, _ = arithmetic.reset(options={"task_index": 2})
    step = arithmetic.step(state, Action(tool_calls=(python("x = 41"),)))
    saved = json.loads(json.dumps(arithmetic.save_state(step.state)))
    assert saved["environment"] == "reasoning_gym:basic_arithmetic"
    restored = arithmetic.restore_state(saved)
    again = arithmetic.step(restored, Action(tool_calls=(python("print(x + 1)", "q"),)))
    assert again.tool_results[0].output.strip() == "42"  # the session was rebuilt from the state


def test_scripted_policy_gets_full_reward_in_the_runner(arithmetic):
    reference = arithmetic.task(0).reference
    backend = ScriptedBackend(
        [
            [python(f"print({reference['metadata']['expression']})", "p1")],
            [submit(reference["answer"], "s1")],
            "unused",
        ]
    )
    runner = TrajectoryRunner(
        environment=arithmetic,
        backend=backend,
        sampling_params=SamplingParams(temperature=0.0),
        system_prompt="Use tools to solve problems. Submit your final answer.",
    )
    trajectory = runner.run_trajectory(task_index=0)
    assert trajectory.success and trajectory.terminated
    assert trajectory.answer == reference["answer"]
    assert trajectory.total_reward == pytest.approx(1.0)
    assert trajectory.stop_reason == "episode_done"
    assert backend.remaining == 1
    data = json.loads(trajectory.to_json())
    assert data["reference"]["answer"] == reference["answer"]


def test_unknown_dataset_lists_names():
    with pytest.raises(ValueError, match=r"unknown reasoning-gym dataset 'basic_arithmetc'.*"):
        environment_registry.get(name="basic_arithmetc", adapter="reasoning_gym")
    with pytest.raises(ValueError, match="did you mean basic_arithmetic"):
        environment_registry.get(name="basic_arithmetc", adapter="reasoning_gym")
    assert "gsm_symbolic" in dataset_names() and len(dataset_names()) > 50
    with pytest.raises(ValueError, match="size must be >= 1"):
        environment_registry.get(name="chain_sum", adapter="reasoning_gym", size=0)
    with pytest.raises(ValueError, match="unknown tool type 'browser'"):
        environment_registry.get(name="chain_sum", adapter="reasoning_gym", tool_types=("browser",))


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'tooluse\[reasoning-gym\]'"):
        environment_registry.get(name="chain_sum", adapter="reasoning_gym")


@pytest.mark.slow
def test_local_model_episode_on_a_generated_task():
    from tooluse.local import LlamaCppBackend

    env = ReasoningGymEnvironment("basic_arithmetic", size=1, seed=0, tool_types=("python",))
    runner = TrajectoryRunner(
        environment=env,
        backend=LlamaCppBackend.default(max_tokens=96),
        sampling_params=SamplingParams(temperature=0.0, max_tokens=96),
        system_prompt="Use tools to solve problems. Submit your final answer.",
        max_turns=2,
    )
    trajectory = runner.run_trajectory(task_index=0)
    env.close()
    print(
        f"\nlocal model on basic_arithmetic: success={trajectory.success} "
        f"steps={len(trajectory.steps)} stop={trajectory.stop_reason} answer={trajectory.answer!r}"
    )
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(answered)
    assert trajectory.terminated != trajectory.truncated
    assert 1 <= len(trajectory.steps) <= 3
    last = trajectory.steps[-1].result
    if trajectory.terminated:
        score = last.signals.get("reasoning_gym_score").value
        assert score == env.score(trajectory.answer, env.task(0).reference)
        assert trajectory.success == (score == 1.0)
    assert data_prompt(trajectory) == env.task(0).prompt


def data_prompt(trajectory):
    return json.loads(trajectory.to_json())["messages"][1]["content"]
