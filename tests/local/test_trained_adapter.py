"""``local:trained``: the embedded model with the shipped adapter, as it was measured."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")


def test_the_shipped_adapter_fits_the_embedded_model_and_has_its_card():
    import json

    from tooluse.local.model_files import check_lora_path, default_model_path, trained_adapter_path

    path = trained_adapter_path()
    assert check_lora_path(path, default_model_path()) == path
    card = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    assert card["adapter"] == path.name and card["adapter_bytes"] == path.stat().st_size
    assert card["data"]["split"] == "train" and card["method"] == "sft"


@pytest.mark.slow
def test_local_trained_loads_the_adapter_with_its_measured_settings_and_round_trips():
    from tooluse.local.model_files import trained_adapter_path
    from tooluse.providers.model_registry import load_model

    trained = load_model("local:trained", n_ctx=512)
    overridden = load_model("local:trained#judge=model", n_ctx=512)
    try:
        assert trained.lora_path == trained_adapter_path() and trained.lora_scale == 0.5
        assert (trained.judge, trained.narrow_tools) == ("base", "first")
        assert trained.decider.name == "default-then-model"
        assert trained.model_spec == "local:trained"
        assert overridden.judge == "model" and overridden.lora_path == trained_adapter_path()
        assert overridden.model_spec.startswith("local:#lora=")
        assert overridden.model_spec.endswith("#lora_scale=0.5")
    finally:
        trained.close()
        overridden.close()


@pytest.mark.slow
def test_local_trained_solves_test_arithmetic_the_base_model_guesses(tmp_path):
    """The real environment, its test split, both models forced to start with a call."""
    from tooluse import SamplingParams
    from tooluse.envs import TrajectoryRunner, environment_registry
    from tooluse.providers.model_registry import load_model

    env = environment_registry.get("math:arithmetic", split="test")
    solved = {}
    for spec in ("local", "local:trained"):
        backend = load_model(spec, n_ctx=2048)
        try:
            runner = TrajectoryRunner(
                environment=env,
                backend=backend,
                sampling_params=SamplingParams(max_tokens=256),
                tool_choice="required",
            )
            solved[spec] = sum(runner.run_trajectory(i).success for i in range(3))
        finally:
            backend.close()
    assert solved["local:trained"] >= 2 and solved["local:trained"] > solved["local"]
