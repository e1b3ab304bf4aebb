"""The order a training run reads its examples in: batches of similar lengths, in random order.

A batch is padded to its longest example, so a batch that mixes a 200-token arithmetic turn
with a 1,100-token BFCL turn spends most of its compute on padding. On the generalist recipe,
random batches of 8 are 77% real tokens; sorting each window of 4 random batches by length
before cutting it into batches makes them 90% real, while each batch still draws on 32 random
examples (a window over the whole set would put every short example into the same few batches).

::

    order = length_grouped_order(lengths, batch_size=8, window=4, seed=0)
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["length_grouped_order", "length_grouped_sampler"]


def length_grouped_order(
    lengths: Sequence[int], *, batch_size: int, window: int, seed: int
) -> list[int]:
    """Every index of ``lengths`` once: shuffled, each run of ``window * batch_size`` indices
    sorted by length and cut into batches, the whole batches shuffled again; a last batch
    short of ``batch_size`` comes last, so every other batch stays whole."""
    if batch_size < 1 or window < 1:
        raise ValueError(f"batch_size and window must be 1 or more, not {batch_size} and {window}")
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    span = batch_size * window
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        chunk = sorted(order[start : start + span], key=lambda i: lengths[i], reverse=True)
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    short = batches.pop() if batches and len(batches[-1]) < batch_size else None
    rng.shuffle(batches)
    if short is not None:
        batches.append(short)
    return [index for batch in batches for index in batch]


def length_grouped_sampler(
    torch: Any, lengths: Sequence[int], *, batch_size: int, window: int, seed: int
) -> Any:
    """A torch ``Sampler`` over :func:`length_grouped_order`, a new order each epoch
    (``set_epoch``, which the trainer calls, also when it resumes a run)."""

    class LengthGroupedSampler(torch.utils.data.Sampler):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            self.epoch = 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = epoch

        def __len__(self) -> int:
            return len(lengths)

        def __iter__(self) -> Iterator[int]:
            return iter(
                length_grouped_order(
                    lengths, batch_size=batch_size, window=window, seed=seed + self.epoch
                )
            )

    return LengthGroupedSampler()
