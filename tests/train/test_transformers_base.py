"""Beyond the embedded model: a transformers model folder as the base (a tiny, randomly
initialised Llama made here, with SmolLM2's tokenizer read from the shipped GGUF), trained on
the CPU, its adapter saved for peft and read back to generate; rollouts from another backend
(a real `tooluse serve` on 127.0.0.1)."""

from __future__ import annotations

import json

import pytest
from tests.serve.conftest import start_server, stop
from typer.testing import CliRunner

from tooluse.cli.app import app

pytest.importorskip("torch")
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 2-layer Llama (hidden size 64) with SmolLM2's tokenizer, saved as safetensors."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from tooluse.local.model_files import default_model_path

    gguf = default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    folder = tmp_path_factory.mktemp("models") / "tiny-smollm2"
    LlamaForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_transformers_base_trains_and_its_peft_adapter_generates(tiny_model, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "sft"
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--base", str(tiny_model), "--env", "math:arithmetic", "--size", "2",
         "--steps", "3", "--batch-size", "2", "--max-length", "640", "--learning-rate", "1e-2",
         "-q", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    adapter = out / "adapter"
    assert card["adapter"] == card["adapter_peft"] == str(adapter)
    assert card["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert {"adapter_model.safetensors", "adapter_config.json"} <= {
        p.name for p in adapter.iterdir()
    }
    assert not (out / "adapter.gguf").exists()  # llama.cpp cannot run this base: no GGUF
    assert card["metrics"]["loss_last"] < card["metrics"]["loss_first"]

    # read back with peft: the adapter changes the model, which still generates
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    tuned = PeftModel.from_pretrained(model, str(adapter))
    prompt = "<|im_start|>user\nCompute 12 * 3.<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        after = tuned(ids).logits[0, -1]
        with tuned.disable_adapter():
            before = tuned(ids).logits[0, -1]
        generated = tuned.generate(ids, max_new_tokens=5, do_sample=False)
    assert (after - before).abs().max() > 1e-3
    assert generated.shape[1] == ids.shape[1] + 5

    # a peft folder goes on as --adapter for a transformers base; a GGUF file does not
    went_on = CliRunner().invoke(
        app,
        ["train", "sft", "--base", str(tiny_model), "--env", "math:arithmetic", "--size", "2",
         "--steps", "1", "--batch-size", "1", "--max-length", "640", "-q",
         "--adapter", str(adapter), "--out", str(tmp_path / "on")],
    )  # fmt: skip
    assert went_on.exit_code == 0, went_on.output
    refused = CliRunner().invoke(
        app,
        ["train", "sft", "--base", str(tiny_model), "--env", "math:arithmetic", "--size", "2",
         "--adapter", str(out / "card.json"), "--out", str(tmp_path / "no")],
    )  # fmt: skip
    assert refused.exit_code == 2 and "not a peft adapter folder" in refused.output


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_rft_samples_from_a_served_model_and_trains_the_transformers_base(tiny_model, tmp_path):
    base_args = ["train", "rft", "--base", str(tiny_model), "--env", "math:arithmetic=2",
                 "--held-out", "1", "--samples", "1", "--rounds", "1", "--threshold", "0",
                 "--steps", "1", "--batch-size", "1", "--max-length", "1024",
                 "--max-turns", "1", "--max-tokens", "24", "-q"]  # fmt: skip
    # without a backend to sample with, a transformers base is refused in one line
    refused = CliRunner().invoke(app, [*base_args, "--out", str(tmp_path / "none")])
    assert refused.exit_code == 2
    assert "error: a transformers base needs --rollout-model" in refused.output

    process, url = start_server(["--model", "local:base"], tmp_path / "serve.log")
    try:
        out = tmp_path / "rft"
        rollout = f"openai-compatible:{url}/v1#local:base"
        result = CliRunner().invoke(
            app, [*base_args, "--rollout-model", rollout, "--out", str(out)]
        )
    finally:
        stop(process)
    assert result.exit_code == 0, result.output
    round_card = json.loads((out / "round-1" / "card.json").read_text())
    assert round_card["sampled"] == {"math:arithmetic": 1} == round_card["kept"]
    assert (out / "round-1" / "adapter" / "adapter_model.safetensors").is_file()
    run_card = json.loads((out / "card.json").read_text())
    assert run_card["rollout_model"] == rollout
    assert [row["round"] for row in run_card["curve"]] == [0, 1]


def test_the_trainer_reads_length_grouped_batches(tiny_model, tmp_path):
    """The SFT trainer's batches: every example once per epoch, and with the default window
    far less padding than random batches of the same examples."""
    from tooluse.train.data import TrainExample
    from tooluse.train.runtime import import_training_stack
    from tooluse.train.sft import SFTOptions, _trainer

    stack = import_training_stack()
    examples = [
        TrainExample(
            prompt="<|im_start|>user\n" + "word " * (10 if i % 2 else 300) + "<|im_end|>\n"
            "<|im_start|>assistant\n",
            completion=f"answer {i}<|im_end|>\n",
            source="test",
        )
        for i in range(32)
    ]

    def epoch(window):
        options = SFTOptions(
            out=tmp_path / f"w{window}", steps=4, batch_size=4, max_length=640,
            base_model=tiny_model, length_window=window, progress=False,
        )  # fmt: skip
        trainer, _ = _trainer(stack, examples, options)
        batches = list(trainer.get_train_dataloader())
        real = sum(int(b["attention_mask"].sum()) for b in batches)
        padded = sum(b["attention_mask"].numel() for b in batches)
        return len(batches), real, padded

    grouped, plain = epoch(4), epoch(1)
    assert grouped[0] == plain[0] == 8
    assert grouped[1] == plain[1]  # the same tokens, every example once
    # half the examples short, half long: random batches are about half padding
    assert grouped[1] / grouped[2] > plain[1] / plain[2] + 0.2
