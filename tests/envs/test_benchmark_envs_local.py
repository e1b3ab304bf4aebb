"""The embedded model (``local:base``) plays one short task of each new benchmark
environment (slow). Whatever it does, the run completes, every call id gets one result, and
the reward is in range; a prompt larger than its context is a clear error record."""

from __future__ import annotations

import pytest

import tooluse
from tooluse import SamplingParams
from tooluse.envs import TrajectoryRunner, environment_registry

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def model():
    # SmolLM2's full context; the marker decider and no tool narrowing: the default decider
    # scores every offered tool against the request, which these tests do not measure.
    return tooluse.load_model("local:base#n_ctx=8192#decider=marker#narrow=off")


def play(env, model, index=0, max_turns=2):
    runner = TrajectoryRunner(
        environment=env,
        backend=model,
        sampling_params=SamplingParams(temperature=0.0, max_tokens=48),
        max_turns=max_turns,
    )
    return runner.run_trajectory(task_index=index)


def check(trajectory):
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    results = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(results) and len(set(calls)) == len(calls)
    assert trajectory.steps and trajectory.usage.requests >= 1
    assert 0.0 <= trajectory.total_reward <= len(trajectory.steps)
    print(
        f"\n{trajectory.environment}: success={trajectory.success} steps={len(trajectory.steps)} "
        f"calls={len(calls)} end={trajectory.steps[-1].result.info.get('end')}"
    )


def test_a_customer_conversation_with_the_model_on_both_sides(model):
    # mock: its policy and tools take 900 tokens (airline's 5,400 would take minutes a turn)
    env = environment_registry.get(
        name="tau2:mock", split="test", limit=1, user=model, user_max_tokens=48, max_steps=3
    )
    trajectory = play(env, model)
    check(trajectory)
    last = trajectory.steps[-1].result.info
    if trajectory.steps[-1].result.done:
        assert 0.0 <= last["tau2"]["reward"] <= 1.0
        assert last["end"] in {"user_stop", "max_steps", "too_many_errors", "user_error"}


def test_a_solo_ticket(model):
    env = environment_registry.get(name="tau2:mock:solo", split="test", limit=1)
    check(play(env, model))


@pytest.mark.parametrize("name", ["nestful", "complexfuncbench"])
def test_a_nested_call_sample(model, name):
    env = environment_registry.get(name=name, split="test")
    # The sample whose tools and responses are smallest: a 135M model's context is short.
    index = min(range(20), key=lambda i: len(str(env.replay(i)[1])))
    check(play(env, model, index))


def test_telecom_solo_is_larger_than_the_models_context_a_clear_error(model, tmp_path):
    env = environment_registry.get(name="tau2:telecom:solo", split="test", limit=1)
    # The first turn must call (a text answer could be written with a prompt without the tools).
    runner = TrajectoryRunner(environment=env, backend=model, tool_choice="required")
    result = runner.run_evaluation(out=tmp_path, progress=False)
    assert "the context holds 8192" in result.records[0]["error"]
    assert result.summary["errors"] == 1
