"""The KV memory of a batched llama.cpp context: how many sequence slots it holds
(:func:`plan_slots`, from the bytes a token's cells take), how much of a prompt a cached one
shares (:func:`common_prefix_length`), and a sequence's saved cells laid out for a context of
more KV streams (:func:`restream`). Pure, except :func:`kv_bytes_per_token`, which reads the
loaded model's shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tooluse.local.runtime import import_llama_cpp

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_KV_BUDGET",
    "common_prefix_length",
    "kv_bytes_per_token",
    "plan_slots",
    "restream",
]

#: Sequences decoded together at most, by default: on 2 cores SmolLM2-135M generates 1.4x to
#: 1.8x as many tokens a second with 8 sequences as with one, and 16 add little
#: (benchmarks/bench_batch).
DEFAULT_BATCH = 8
#: The KV memory the slots may take together when their number is chosen (the default).
DEFAULT_KV_BUDGET = 1 << 30


def common_prefix_length(one: Sequence[int], other: Sequence[int]) -> int:
    """How many leading tokens ``one`` and ``other`` share."""
    limit = min(len(one), len(other))
    if not limit:
        return 0
    differs = np.flatnonzero(np.asarray(one[:limit]) != np.asarray(other[:limit]))
    return int(differs[0]) if len(differs) else limit


def restream(blob: bytes, seq: int, streams: int, new_streams: int, head: int) -> bytes | None:
    """A sequence's saved state from a context of ``streams`` KV streams, laid out for one of
    ``new_streams``. llama.cpp writes ``head`` bytes of its own, the stream count, then each
    stream's cell count and cells, and reads back only the stream count it has; a sequence's
    cells are in its own stream, the others are empty. ``None`` when the state is not laid
    out so."""
    count = blob[head : head + 4]
    after = 4 * (streams - 1 - seq)  # the empty streams after the sequence's own
    if count != streams.to_bytes(4, "little") or len(blob) < head + 8 + 4 * seq + after:
        return None
    start = head + 4
    if blob[start : start + 4 * seq].strip(b"\0") or (after and blob[-after:].strip(b"\0")):
        return None
    body = blob[start : len(blob) - after]
    return (
        blob[:head] + new_streams.to_bytes(4, "little") + body + bytes(4 * (new_streams - 1 - seq))
    )


def kv_bytes_per_token(llm: Any) -> int:
    """Bytes of f16 K and V cells one token takes in a context of ``llm``'s model."""
    lib = import_llama_cpp()
    model = llm._model.model
    n_layer = lib.llama_model_n_layer(model)
    n_head = max(1, lib.llama_model_n_head(model))
    n_head_kv = lib.llama_model_n_head_kv(model) or n_head
    head_dim = lib.llama_model_n_embd(model) // n_head
    return 2 * n_layer * n_head_kv * head_dim * 2


def plan_slots(
    n_ctx: int,
    bytes_per_token: int,
    *,
    batch: int | None,
    keep: int,
    budget: int = DEFAULT_KV_BUDGET,
) -> tuple[int, int]:
    """``(slots, batch)``: how many sequence ids the context holds and how many decode at once.

    ``batch=None`` chooses as many as the KV ``budget`` holds at ``n_ctx`` tokens each, at most
    :data:`DEFAULT_BATCH`; a given ``batch`` is taken as asked. The slots are the batch plus
    the cached prompts kept aside (``keep``), so that prompts taking turns keep their caches
    even one sequence at a time."""
    per_slot = max(1, n_ctx * bytes_per_token)
    if batch is None:
        batch = max(1, min(DEFAULT_BATCH, budget // per_slot))
    if batch < 1:
        raise ValueError(f"the batch size must be at least 1, not {batch}")
    return batch + keep, batch
