"""RFT's sampling on the real embedded model: the k samples of each task are played together
on the batched model, and give the trajectories they give one at a time."""

from __future__ import annotations

import pytest

from tooluse.envs import environment_registry
from tooluse.train.rft import RFTOptions, _backend, _runner, _sample
from tooluse.train.sft import SFTOptions


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_samples_of_a_task_play_together_and_equal_the_samples_played_alone(tmp_path):
    options = RFTOptions(
        environments=(("math:arithmetic", 2),),
        sft=SFTOptions(out=tmp_path),
        held_out=1,
        samples=4,
        temperature=0.8,
        max_tokens=24,
        max_turns=1,
    )
    env = environment_registry.get(name="math:arithmetic", split="train", size=2, seed=0)
    backend = _backend(None)
    try:
        together = _sample(env, backend, options, round_number=1)
        assert backend.engine.stats.most_at_once >= 2  # the samples shared decode steps
        # the same seeds, one trajectory at a time
        alone = []
        for sample in range(options.samples):
            seed = options.sft.seed * 1_000 + 100 + sample
            runner = _runner(env, backend, options, options.temperature, seed)
            alone.append(runner.run_trajectory(task_index=0))
    finally:
        backend.close()
    assert len(together) == 4
    assert [_said(t) for t in together] == [_said(t) for t in alone]
    # sampled at temperature 0.8 with four seeds: not all the same
    assert len({str(_said(t)) for t in together}) > 1


def _said(trajectory):
    """What the trajectory's messages say (call ids are random)."""
    return [
        (
            m["role"],
            m.get("content"),
            [(c["name"], c["arguments"]) for c in m.get("tool_calls", ())],
        )
        for m in trajectory.to_dict()["messages"]
    ]
