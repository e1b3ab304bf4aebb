"""`tooluse train merge`: an adapter merged into the embedded model, written as one GGUF model."""

from __future__ import annotations

import pytest

pytest.importorskip("gguf")
pytest.importorskip("llama_cpp")

from typer.testing import CliRunner  # noqa: E402

from tooluse.cli.app import app  # noqa: E402
from tooluse.local.model_files import default_model_path, trained_adapter_path  # noqa: E402
from tooluse.train.gguf_merge import merge_lora_gguf  # noqa: E402


def _solved(backend, env, tasks: int) -> list[bool]:
    from tooluse import SamplingParams
    from tooluse.envs import TrajectoryRunner

    runner = TrajectoryRunner(
        environment=env,
        backend=backend,
        sampling_params=SamplingParams(max_tokens=256),
        tool_choice="required",
    )
    return [runner.run_trajectory(i).success for i in range(tasks)]


@pytest.mark.slow
def test_the_merged_model_solves_what_the_adapter_solves_and_the_base_model_does_not(tmp_path):
    from tooluse.envs import environment_registry
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.decision import ModelDecider

    merged_path = merge_lora_gguf(
        default_model_path(), trained_adapter_path(), tmp_path / "merged.gguf", scale=0.5
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merged.gguf"]  # no partial left
    env = environment_registry.get("math:arithmetic", split="test")
    merged = LlamaCppBackend(merged_path, n_ctx=2048, decider=ModelDecider(), narrow_tools=False)
    adapted = LlamaCppBackend.default(n_ctx=2048, lora_path=trained_adapter_path(), lora_scale=0.5)
    base = LlamaCppBackend.default(n_ctx=2048, decider=ModelDecider(), narrow_tools=False)
    try:
        assert merged.lora_path is None and merged.profile.name == "smollm2"
        solved = {
            name: _solved(b, env, 3)
            for name, b in [("merged", merged), ("adapted", adapted), ("base", base)]
        }
    finally:
        for backend in (merged, adapted, base):
            backend.close()
    assert solved["merged"] == solved["adapted"] and sum(solved["merged"]) >= 2
    assert sum(solved["merged"]) > sum(solved["base"])


def test_an_adapter_for_another_model_is_refused_and_nothing_is_written(tmp_path):
    from tooluse.local.model_files import ModelFileError
    from tooluse.train.gguf_lora import LoraShape, write_lora_gguf

    rng = __import__("numpy").random.default_rng(0)
    prefix = "base_model.model.model.layers.0.self_attn.q_proj"
    other = write_lora_gguf(
        {
            f"{prefix}.lora_A.weight": rng.normal(size=(2, 8)).astype("float32"),
            f"{prefix}.lora_B.weight": rng.normal(size=(8, 2)).astype("float32"),
        },
        LoraShape(alpha=2.0, n_layers=1, n_head=2, n_head_kv=1),
        tmp_path / "other.gguf",
    )
    with pytest.raises(ModelFileError, match="does not fit"):
        merge_lora_gguf(default_model_path(), other, tmp_path / "merged.gguf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.gguf"]


@pytest.mark.slow
def test_the_command_merges_the_shipped_adapter_and_names_a_bad_one_in_one_line(tmp_path):
    out = tmp_path / "trained.gguf"
    done = CliRunner().invoke(app, ["train", "merge", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert (
        "at scale 0.5" in done.output and out.stat().st_size > default_model_path().stat().st_size
    )
    bad = CliRunner().invoke(
        app, ["train", "merge", "--adapter", str(tmp_path / "none.gguf"), "--out", str(out)]
    )
    assert bad.exit_code == 2 and "LoRA adapter not found" in bad.output
