"""A real episode: the embedded local model plays the arithmetic environment (slow)."""

from __future__ import annotations

import importlib
import json

import pytest

from tooluse import SamplingParams
from tooluse.envs import TrajectoryRunner, environment_registry


@pytest.mark.slow
def test_local_model_episode_is_recorded_consistently():
    from tooluse.local import LlamaCppBackend

    env = environment_registry.get(name="math:arithmetic", tool_types=("python",))
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
        f"\nlocal model: success={trajectory.success} steps={len(trajectory.steps)} "
        f"stop={trajectory.stop_reason} answer={trajectory.answer!r}"
    )
    # Whatever the model did, the record is whole and consistent.
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(answered)
    assert len(set(calls)) == len(calls)
    assert trajectory.terminated != trajectory.truncated
    assert trajectory.success == bool(
        trajectory.terminated and trajectory.steps[-1].result.info.get("correct")
    )
    assert 1 <= len(trajectory.steps) <= 3
    assert trajectory.usage.requests >= 1
    data = json.loads(trajectory.to_json())
    assert data["messages"][1]["content"] == "What is 15% of 80?"
    assert len(data["steps"]) == len(trajectory.steps)


def test_package_all_resolves():
    for name in ("tooluse.envs", "tooluse.evals", "tooluse.execution.sandbox"):
        module = importlib.import_module(name)
        for attribute in module.__all__:
            assert hasattr(module, attribute), f"{name}.{attribute}"
