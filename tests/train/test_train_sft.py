"""`tooluse train sft` for real, tiny: a few steps on a handful of teacher turns, the GGUF
adapter loaded by llama.cpp, its effect equal to the trained adapter's, a resumed run; the
adapter file never half-written."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.local.threads import llama_thread_options
from tooluse.train.gguf_lora import read_lora_gguf

pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("gguf")

PROMPT = "<|im_start|>user\nCompute 5564 + 5275. Give the exact integer.<|im_end|>\n<|im_start|>assistant\n"
TINY = ["--env", "math:arithmetic", "--size", "2", "--batch-size", "1", "--max-length", "640",
        "--learning-rate", "5e-3", "--save-steps", "1", "-q"]  # fmt: skip


def _llama_logits(lora):
    import llama_cpp

    from tooluse.local.model_files import default_model_path

    llm = llama_cpp.Llama(
        model_path=str(default_model_path()), lora_path=lora, n_ctx=128, logits_all=True,
        verbose=False, **llama_thread_options(),
    )  # fmt: skip
    try:
        tokens = llm.tokenize(PROMPT.encode(), special=True)
        llm.eval(tokens)
        return np.array(llm.scores[len(tokens) - 1], dtype=np.float64)
    finally:
        llm.close()


def _peft_delta(checkpoint):
    import torch
    from peft import PeftModel

    from tooluse.local.model_files import default_model_path
    from tooluse.train.base_model import load_base_model
    from tooluse.train.runtime import import_training_stack

    model, tokenizer = load_base_model(import_training_stack(), default_model_path())
    ids = tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    tuned = PeftModel.from_pretrained(model, str(checkpoint))
    with torch.no_grad():
        after = tuned(ids).logits[0, -1].double().numpy()
        with tuned.disable_adapter():
            before = tuned(ids).logits[0, -1].double().numpy()
    return after - before


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tiny_sft_run_exports_an_adapter_llama_cpp_applies(tmp_path):
    from tooluse.local.backend import LlamaCppBackend

    out = tmp_path / "run"
    # --max-minutes ends the run after its first step, with a checkpoint and the adapter
    first = CliRunner().invoke(
        app, ["train", "sft", *TINY, "--steps", "3", "--max-minutes", "0.001", "--out", str(out)]
    )
    assert first.exit_code == 0, first.output
    stopped = json.loads((out / "card.json").read_text())
    assert stopped["metrics"]["steps"] == 1 and (out / "adapter.gguf").is_file()
    # the same command again resumes from that checkpoint
    again = CliRunner().invoke(app, ["train", "sft", *TINY, "--steps", "2", "--out", str(out)])
    assert again.exit_code == 0, again.output
    card = json.loads((out / "card.json").read_text())
    assert card["resumed_from"] == "checkpoint-1" and card["metrics"]["steps"] == 2
    adapter = out / "adapter.gguf"
    assert card["adapter"] == str(adapter) and adapter.stat().st_size == card["adapter_bytes"]
    assert card["data"] == {
        "environment": "math:arithmetic",
        "split": "train",
        "size": 2,
        "seed": 0,
    }
    assert card["examples"] == 4
    assert card["metrics"]["tokens_per_second"] > 0 and card["wall_seconds"] > 0
    assert not [p for p in out.iterdir() if p.name.endswith(".partial")]

    # llama.cpp applies it: the logits move, and the same way as the trained peft adapter's
    # (a wrong tensor layout, such as unpermuted query/key rows, moves them differently)
    delta = _llama_logits(str(adapter)) - _llama_logits(None)
    assert np.abs(delta).max() > 0.5
    reference = _peft_delta(out / "checkpoints" / "checkpoint-2")
    assert np.corrcoef(delta, reference)[0, 1] > 0.98

    backend = LlamaCppBackend.default(n_ctx=1024, lora_path=adapter)
    try:
        assert backend.lora_path == adapter
    finally:
        backend.close()

    # --adapter goes on from that adapter: its rank wins over --rank, the new one moves on
    on = tmp_path / "on"
    args = ["train", "sft", *TINY, "--steps", "1", "--rank", "4", "--out", str(on)]
    went_on = CliRunner().invoke(app, [*args, "--adapter", str(adapter)])
    assert went_on.exit_code == 0, went_on.output
    assert json.loads((on / "card.json").read_text())["options"]["start_adapter"] == str(adapter)
    start, after = (
        read_lora_gguf(p, n_layers=30, n_head=9, n_head_kv=3)
        for p in (adapter, on / "adapter.gguf")
    )
    assert after.rank == start.rank == 16 and after.tensors.keys() == start.tensors.keys()
    moved = max(np.abs(after.tensors[k] - start.tensors[k]).max() for k in start.tensors)
    assert 0 < moved < 0.1  # one small step on from the start, not a fresh adapter
    bad = CliRunner().invoke(app, [*args, "--adapter", str(tmp_path / "none.gguf")])
    assert bad.exit_code == 2 and "error:" in bad.output and "none.gguf" in bad.output


@pytest.mark.slow
def test_examples_longer_than_max_length_are_counted_not_cut(tmp_path):
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--env", "math:arithmetic", "--size", "3", "--steps", "1",
         "--max-length", "100", "--out", str(tmp_path / "r")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "error: 6 of 6 training turns are longer than --max-length 100 tokens" in result.output
    assert not (tmp_path / "r" / "adapter.gguf").exists()


RFT = ["train", "rft", "--size", "2", "--held-out", "1", "--samples", "1", "--rounds", "1",
       "--steps", "1", "--batch-size", "1", "--max-length", "900", "--max-turns", "1",
       "--max-tokens", "48", "-q"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tiny_rft_round_samples_keeps_trains_reports_and_resumes(tmp_path):
    from tooluse.local.model_files import check_lora_path

    out = tmp_path / "rft"
    # nothing reaches an impossible threshold: one clear line, and no training
    none = CliRunner().invoke(app, [*RFT, "--threshold", "5", "--out", str(out)])
    assert none.exit_code == 2, none.output
    assert "error: round 1: no trajectory reached reward 5.0 (0 of 1)" in none.output
    assert not (out / "round-1" / "adapter.gguf").exists()
    # threshold 0 keeps every sample (the base model solves none), so the round trains
    first = CliRunner().invoke(app, [*RFT, "--threshold", "0", "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "round 0 (base): validation" in first.output
    assert "round 1: kept 1 of 1 trajectories (reward >= 0.0; math:arithmetic 1/1)" in first.output
    card = json.loads((out / "round-1" / "card.json").read_text())
    assert card["kept"] == {"math:arithmetic": 1} and card["sampled"] == {"math:arithmetic": 1}
    assert 0.0 <= card["held_out_success"] <= 1.0
    assert card["data"]["environments"] == ["math:arithmetic"] and card["data"]["round"] == 1
    check_lora_path(out / "round-1" / "adapter.gguf")
    kept = (out / "round-1" / "kept.jsonl").read_text().splitlines()
    assert len(kept) == 1 and all(
        json.loads(line)["environment"] == "math:arithmetic" for line in kept
    )
    # run again: the finished round is not redone
    again = CliRunner().invoke(app, [*RFT, "--threshold", "0", "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert "round 1: done before" in again.output and "kept" not in again.output


def test_sft_trains_in_float32_whatever_trl_defaults_to(tmp_path):
    """TRL turns bf16 autocast on wherever torch allows it, CPUs without bf16 arithmetic
    included, where it made a step about 30 times slower; the run asks for float32."""
    from tooluse.train.runtime import import_training_stack
    from tooluse.train.sft import SFTOptions, sft_config

    stack = import_training_stack()
    config = sft_config(stack, SFTOptions(out=tmp_path, steps=3, batch_size=2))
    assert config.bf16 is False and config.fp16 is False and config.use_cpu
    assert (config.max_steps, config.per_device_train_batch_size) == (3, 2)
    assert config.completion_only_loss


def test_sft_recomputes_activations_unless_asked_to_keep_them(tmp_path):
    """Activation checkpointing (TRL's default) stays on unless the run asks to keep them."""
    from tooluse.train.runtime import import_training_stack
    from tooluse.train.sft import SFTOptions, sft_config

    stack = import_training_stack()
    plain = sft_config(stack, SFTOptions(out=tmp_path))
    kept = sft_config(stack, SFTOptions(out=tmp_path, activation_checkpointing=False))
    assert plain.activation_checkpointing is True and plain.gradient_checkpointing is True
    assert kept.activation_checkpointing is False and kept.gradient_checkpointing is False
