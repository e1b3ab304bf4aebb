"""Training the local model on tooluse's own environments (the ``train`` extra).

``tooluse train sft`` fine-tunes a LoRA adapter on SFT data, from an exported SFT JSONL file
(:mod:`tooluse.envs.export`) or an environment's scripted teacher, and writes a llama.cpp GGUF
LoRA adapter (``LlamaCppBackend(..., lora_path=...)``) with a ``card.json`` beside it.
``tooluse train rft`` samples, keeps the rewarded and fine-tunes; ``tooluse train grpo`` runs
TRL's GRPOTrainer with the environment's own rewards.

- :mod:`tooluse.train.data`: conversations and their training text (no torch needed);
- :mod:`tooluse.train.sft`: the run on TRL's SFTTrainer;
- :mod:`tooluse.train.rft`: rejection-sampling rounds;
- :mod:`tooluse.train.rollout`: GRPO's episodes as training tokens (no torch needed);
- :mod:`tooluse.train.grpo`: the run on TRL's GRPOTrainer;
- :mod:`tooluse.train.gguf_lora`: the adapter as a GGUF file;
- :mod:`tooluse.train.runtime`: the one import of torch, transformers, peft and trl.
"""

from __future__ import annotations

from tooluse.train.data import (
    Conversation,
    TrainDataError,
    TrainExample,
    read_sft_jsonl,
    refuse_test_split,
    render_examples,
    teacher_conversations,
)

__all__ = [
    "Conversation",
    "TrainDataError",
    "TrainExample",
    "read_sft_jsonl",
    "refuse_test_split",
    "render_examples",
    "teacher_conversations",
]
