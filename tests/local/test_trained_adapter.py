"""``local`` (also ``local:trained``): the embedded model with the shipped adapter, as it was
measured; ``local:base`` is the untouched model."""

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


def test_the_cards_measured_figures_are_the_committed_train_results():
    import importlib.util
    import json
    import sys
    from pathlib import Path

    from tooluse.local.model_files import trained_adapter_path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "measure_training", root / "benchmarks" / "measure_training.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    spec.loader.exec_module(script)
    record = json.loads((root / "benchmarks" / "results" / "train.json").read_text())
    card = json.loads(trained_adapter_path().with_suffix(".json").read_text(encoding="utf-8"))
    assert card["measured"] == script.measured_block(record, "local")
    assert record["adapter_bytes"] == trained_adapter_path().stat().st_size


@pytest.mark.slow
def test_local_loads_the_adapter_with_its_measured_settings_and_round_trips():
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.model_files import trained_adapter_path
    from tooluse.providers.model_registry import load_model

    trained = load_model("local", n_ctx=512)
    alias = load_model("local:trained", n_ctx=512)
    overridden = load_model("local:#judge=model", n_ctx=512)
    base = load_model("local:base", n_ctx=512)
    try:
        assert trained.lora_path == trained_adapter_path() and trained.lora_scale == 0.5
        assert (trained.judge, trained.text, trained.narrow_tools) == ("base", "base", "first")
        assert trained.grounding is not None and trained.grounding.after_results
        assert trained.decider.name == "default-then-model"
        assert trained.model_spec == alias.model_spec == "local"
        assert overridden.judge == "model" and overridden.lora_path == trained_adapter_path()
        assert overridden.model_spec.startswith("local:base#lora=")
        assert overridden.model_spec.endswith("#text=base#lora_scale=0.5")
        again = load_model(overridden.model_spec, n_ctx=512)
        assert again.model_spec == overridden.model_spec
        again.close()
        assert base.lora_path is None and base.model_spec == "local:base"
        assert LlamaCppBackend.default(n_ctx=256).model_spec == "local:base"
    finally:
        for backend in (trained, alias, overridden, base):
            backend.close()


@pytest.mark.slow
def test_local_solves_test_arithmetic_the_base_model_guesses(tmp_path):
    """The real environment, its test split, both models forced to start with a call."""
    from tooluse import SamplingParams
    from tooluse.envs import TrajectoryRunner, environment_registry
    from tooluse.providers.model_registry import load_model

    env = environment_registry.get("math:arithmetic", split="test")
    solved = {}
    for spec in ("local:base", "local"):
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
    assert solved["local"] >= 2 and solved["local"] > solved["local:base"]
