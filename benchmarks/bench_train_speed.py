"""Training throughput on the CPU: SFT tokens per second, and rollouts per second on llama.cpp
against transformers' ``generate`` (about 10 minutes on the 2-core machine; `python
benchmarks/run_all.py train_speed` runs it alone, and nothing else should run beside it).

- SFT: a few LoRA steps (rank 16, as ``tooluse train sft``) of ``run_sft`` on the scripted
  ``math:arithmetic`` teacher's turns; tokens trained per second of ``trainer.train``, against
  a forward pass alone (no gradient) over the same examples, the baseline: the ratio says what
  the backward pass and the optimiser cost on top of reading the tokens once.
- Batches and activations: one pass over a mix of long turns (BFCL live_multiple, real
  function docs) and short ones (arithmetic) in random batches with the activations
  recomputed in the backward pass (TRL's defaults), the baseline; the same with the
  activations kept; and in batches sorted by length in windows of 4 (tooluse's default). Real
  tokens trained per second of each, and the ratios to the baseline.
- Base model: reading the GGUF with transformers (converted, then cached as safetensors)
  against reading that cache, the seconds every ``train`` command starts with.
- Rollouts: the same ``math:arithmetic`` episodes played by ``play_rollouts`` (the GRPO
  rollout, the python tool really runs) with two generators: transformers' ``generate`` on
  the dequantised float32 weights, batched, the baseline (what GRPO's trainer samples with),
  and llama.cpp on the Q4_1 GGUF, one sequence at a time with its prompt cache (what ``train
  rft`` samples with). Episodes per second and model tokens per second, and their ratios.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

EXAMPLES = 16
STEPS = 3
BATCH = 4
EPISODES = 4
COMPLETION_TOKENS = 96


def _examples(backend: Any) -> list[Any]:
    from tooluse.train.data import render_examples, teacher_conversations

    conversations = teacher_conversations("math:arithmetic", split="train", size=EXAMPLES)
    return render_examples(conversations, backend)[: EXAMPLES * 2]


def base_model_figures() -> dict[str, Any]:
    """Seconds to convert the GGUF (into an empty cache) and to load the cached conversion."""
    import os
    from unittest import mock

    from tooluse.local.model_files import default_model_path
    from tooluse.train.base_model import load_base_model
    from tooluse.train.runtime import import_training_stack

    stack = import_training_stack()
    seconds = []
    with (
        tempfile.TemporaryDirectory() as cache,
        mock.patch.dict(os.environ, TOOLUSE_CACHE_DIR=cache),
    ):
        for _ in range(2):
            started = time.perf_counter()
            load_base_model(stack, default_model_path())
            seconds.append(time.perf_counter() - started)
    return {
        "base_gguf_read_seconds": round(seconds[0], 2),
        "base_cached_read_seconds": round(seconds[1], 2),
        "base_cache_speedup": round(seconds[0] / seconds[1], 1),
    }


def sft_figures(examples: list[Any]) -> dict[str, Any]:
    """Tokens per second of a short SFT run, and of a forward pass over the same examples."""
    from tooluse.local.model_files import default_model_path
    from tooluse.train.base_model import load_base_model
    from tooluse.train.runtime import import_training_stack
    from tooluse.train.sft import SFTOptions, run_sft

    with tempfile.TemporaryDirectory() as folder:
        options = SFTOptions(
            out=Path(folder), steps=STEPS, batch_size=BATCH, max_length=1024, progress=False
        )
        card = run_sft(examples, options, data={"environment": "math:arithmetic"})
    trained = card["metrics"]["tokens_per_second"]
    stack = import_training_stack()
    model, tokenizer = load_base_model(stack, default_model_path())
    texts = [e.prompt + e.completion for e in examples[: STEPS * BATCH]]
    started = time.perf_counter()
    tokens = 0
    with stack.torch.no_grad():
        for text in texts:
            ids = stack.torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
            model(input_ids=ids)
            tokens += ids.shape[1]
    forward = tokens / (time.perf_counter() - started)
    return {
        "sft_steps": card["metrics"]["steps"],
        "sft_tokens": card["metrics"]["tokens"],
        "sft_tokens_per_second": trained,
        "forward_tokens_per_second": round(forward, 1),
        "sft_over_forward": trained / forward,
    }


def _mixed_examples(backend: Any) -> list[Any]:
    """Half long BFCL turns, half short arithmetic ones, alternating."""
    from tooluse.train.data import render_examples, teacher_conversations

    long = render_examples(
        teacher_conversations("bfcl:live_multiple", split="train", size=8), backend
    )
    short = render_examples(
        teacher_conversations("math:arithmetic", split="train", size=8), backend
    )
    return [e for pair in zip(long[:8], short[:8], strict=True) for e in pair]


def grouping_figures(examples: list[Any]) -> dict[str, Any]:
    """Real tokens per second of one pass over ``examples``: random batches with the
    activations recomputed in the backward pass (TRL's defaults, and tooluse's before), the
    baseline; random batches with the activations kept; and tooluse's defaults (length-grouped
    batches, activations recomputed)."""
    from tooluse.train.sft import SFTOptions, run_sft

    figures: dict[str, Any] = {"mixed_examples": len(examples)}
    arms = {"random": (1, True), "kept": (1, False), "grouped": (4, True)}
    for label, (window, recompute) in arms.items():
        with tempfile.TemporaryDirectory() as folder:
            options = SFTOptions(
                out=Path(folder), steps=len(examples) // BATCH, batch_size=BATCH,
                max_length=1024, progress=False, length_window=window,
                activation_checkpointing=recompute,
            )  # fmt: skip
            card = run_sft(examples, options, data={"environment": "mixed"})
        figures[f"sft_{label}_tokens_per_second"] = card["metrics"]["tokens_per_second"]
    base = figures["sft_random_tokens_per_second"]
    figures["sft_kept_over_random"] = figures["sft_kept_tokens_per_second"] / base
    figures["sft_grouped_over_random"] = figures["sft_grouped_tokens_per_second"] / base
    return figures


def _transformers_generate(stack: Any, model: Any, pad: int) -> Any:
    torch = stack.torch

    def generate(sequences: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        width = max(len(s) for s in sequences)
        ids = torch.tensor([[pad] * (width - len(s)) + s for s in sequences])
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences])
        with torch.no_grad():
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                do_sample=True,
                temperature=1.0,
                pad_token_id=pad,
            )
        return [row[width:].tolist() for row in out]

    return generate


def _llama_generate(llm: Any, eos: frozenset[int]) -> Any:
    def generate(sequences: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        out = []
        for sequence in sequences:
            new: list[int] = []
            for token in llm.generate(sequence, temp=1.0, top_k=0, top_p=1.0, reset=True):
                new.append(token)
                if token in eos or len(new) >= max_new_tokens:
                    break
            out.append(new)
        return out

    return generate


def _play(generate: Any, backend: Any, codec: Any) -> tuple[float, int, int]:
    from tooluse.envs import environment_registry
    from tooluse.envs.prompts import default_system_prompt
    from tooluse.train.rollout import RolloutSettings, play_rollouts

    env = environment_registry.get(name="math:arithmetic", split="train", size=EPISODES, seed=1)
    settings = RolloutSettings(
        max_completion_tokens=COMPLETION_TOKENS,
        max_turns=3,
        system_prompt=default_system_prompt("math:arithmetic"),
    )
    started = time.perf_counter()
    rollouts = play_rollouts(
        env,
        list(range(EPISODES)),
        renderer=backend,
        codec=codec,
        generate=generate,
        settings=settings,
    )
    seconds = time.perf_counter() - started
    return seconds, sum(sum(r.model_mask) for r in rollouts), len(rollouts)


def rollout_figures(backend: Any) -> dict[str, Any]:
    """Episodes and model tokens per second, transformers against llama.cpp."""
    import llama_cpp

    from tooluse.local.model_files import default_model_path
    from tooluse.local.threads import llama_thread_options
    from tooluse.train.base_model import load_base_model
    from tooluse.train.rollout import TokenCodec
    from tooluse.train.runtime import import_training_stack

    stack = import_training_stack()
    stack.transformers.set_seed(0)
    model, tokenizer = load_base_model(stack, default_model_path())
    eos = frozenset({int(tokenizer.eos_token_id), *tokenizer.convert_tokens_to_ids(["<|im_end|>"])})
    codec = TokenCodec(
        encode=lambda text: list(tokenizer(text, add_special_tokens=False)["input_ids"]),
        decode=lambda ids: str(tokenizer.decode(list(ids), skip_special_tokens=False)),
        eos_ids=eos,
    )
    pad = int(
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    figures: dict[str, Any] = {"episodes": EPISODES, "completion_tokens": COMPLETION_TOKENS}
    # The backend's own Llama keeps a small context (its batch engine decodes); the rollouts
    # need a whole episode's context, so the llama.cpp side gets a Llama of its own.
    llm = llama_cpp.Llama(
        model_path=str(default_model_path()), n_ctx=2048, seed=0, verbose=False,
        **llama_thread_options(),
    )  # fmt: skip
    generators = {
        "transformers": _transformers_generate(stack, model, pad),
        "llama_cpp": _llama_generate(llm, eos),
    }
    try:
        for label, generate in generators.items():
            seconds, tokens, episodes = _play(generate, backend, codec)
            figures[f"{label}_episodes_per_second"] = episodes / seconds
            figures[f"{label}_model_tokens_per_second"] = tokens / seconds
    finally:
        llm.close()
    for unit in ("episodes", "model_tokens"):
        figures[f"llama_cpp_{unit}_over_transformers"] = (
            figures[f"llama_cpp_{unit}_per_second"] / figures[f"transformers_{unit}_per_second"]
        )
    return figures


def main() -> dict[str, Any]:
    from tooluse.local.backend import LlamaCppBackend

    # One llama.cpp context at a time, and none open while torch trains: its idle threads
    # would share the two cores with torch's.
    backend = LlamaCppBackend.default(n_ctx=2048, seed=0)
    try:
        examples = _examples(backend)
        mixed = _mixed_examples(backend)
    finally:
        backend.close()
    figures = {"examples": len(examples), **base_model_figures(), **sft_figures(examples)}
    figures.update(grouping_figures(mixed))
    backend = LlamaCppBackend.default(n_ctx=2048, seed=0)
    try:
        figures.update(rollout_figures(backend))
    finally:
        backend.close()
    for key, value in figures.items():
        print(f"{key:40} {value:.3f}" if isinstance(value, float) else f"{key:40} {value}")
    return figures


if __name__ == "__main__":
    main()
