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

    env = environment_registry.get(name="math:word_problems", tool_types=("python",))
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


@pytest.mark.slow
@pytest.mark.timeout(900)  # a few prefills of a 3k-token tool list
def test_local_model_plays_a_bfcl_multi_turn_entry():
    """The embedded model in a BFCL world (TradingBot, 2 user turns, the smallest prompt).
    The call decision reads the marker's odds on the main context: the default decider also
    scores each of the world's tools against the request, which was a third of this test's
    time and is measured by the benchmarks, not checked here."""
    import bfcl_eval  # noqa: F401  (installed by make install; absent is a failure)

    from tooluse.envs.prompts import BFCL_PROMPT
    from tooluse.local import LlamaCppBackend, MarkerDecider

    env = environment_registry.get(name="bfcl:multi_turn_base", max_steps=2)
    index = next(i for i, e in enumerate(env.entries) if e.id == "multi_turn_base_100")
    runner = TrajectoryRunner(
        environment=env,
        backend=LlamaCppBackend.default(
            max_tokens=64, n_ctx=8192, decider=MarkerDecider(), narrow_tools=False
        ),
        sampling_params=SamplingParams(temperature=0.0, max_tokens=64),
        system_prompt=BFCL_PROMPT,
    )
    trajectory = runner.run_trajectory(task_index=index)
    print(
        f"\nlocal model on {env.entries[index].id}: success={trajectory.success} "
        f"steps={len(trajectory.steps)} calls={trajectory.num_tool_calls} "
        f"stop={trajectory.stop_reason}"
    )
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(answered) and len(set(calls)) == len(calls)
    # The episode ended in one of the two ways BFCL allows, and the verdict follows the checks.
    last = trajectory.steps[-1].result
    assert last.done and trajectory.terminated != trajectory.truncated
    checks = last.state.data["checks"]
    if trajectory.terminated:
        assert len(checks) == 2  # both user turns were played and checked
        assert trajectory.success == all(c["valid"] for c in checks)
        users = [m.content for m in trajectory.messages if m.role == "user"]
        assert users == list(env.entries[index].turns)
    else:
        assert not trajectory.success and "cap: 2" in last.info["truncated_reason"]
    assert {t.name for t in trajectory.tools} >= {"get_stock_info", "place_order"}
    data = json.loads(trajectory.to_json())
    assert data["environment"] == "bfcl:multi_turn_base" and data["tools"]


def test_package_all_resolves():
    modules = ("tooluse.envs", "tooluse.evals", "tooluse.execution.sandbox", "tooluse.envs.export")
    for name in modules:
        module = importlib.import_module(name)
        for attribute in module.__all__:
            assert hasattr(module, attribute), f"{name}.{attribute}"
