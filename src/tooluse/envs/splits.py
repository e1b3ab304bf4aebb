"""Train and test splits: disjoint, seeded task sets for every environment and BFCL category.

Two kinds of sources:

* **Fixed sets** (BFCL categories, the word problems, a GSM8K file): an item belongs to
  ``test`` when a hash of ``salt:id`` falls below :data:`TEST_FRACTION`, else to ``train``.
  The assignment depends only on the item's id, so it is the same on every machine, whatever
  the order or subset of the file, and the two splits can never share an item.
* **Procedural sources** (``math:arithmetic``, reasoning-gym, GEM): task ``i`` is generated
  from seed ``start + i``. The test split starts at :data:`TEST_SEED_START`; train splits
  start at the seed asked for and must end below it, so a train split of any size never
  reuses a test seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = [
    "SPLITS",
    "TEST_FRACTION",
    "TEST_SEED_START",
    "check_split",
    "split_of",
    "split_indices",
    "split_seed_start",
]

SPLITS = ("train", "test")
#: Share of a fixed set's items that belong to the test split.
TEST_FRACTION = 0.5
#: The first seed of every procedural test split; train seeds stay below it.
TEST_SEED_START = 1_000_000_000


def check_split(split: str | None) -> str | None:
    """``split`` itself, or ``ValueError`` naming the splits."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
    return split


def split_of(item_id: str, *, salt: str) -> str:
    """``"test"`` or ``"train"``: where the item ``item_id`` of the set ``salt`` belongs."""
    digest = hashlib.sha256(f"{salt}:{item_id}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") / 2**64 < TEST_FRACTION else "train"


def split_indices(ids: Sequence[str], split: str | None, *, salt: str) -> list[int]:
    """The positions of ``ids`` in ``split`` (all of them when ``split`` is None)."""
    if check_split(split) is None:
        return list(range(len(ids)))
    return [i for i, item_id in enumerate(ids) if split_of(item_id, salt=salt) == split]


def split_seed_start(split: str | None, *, seed: int, size: int) -> int:
    """The first seed of a procedural split of ``size`` tasks (``seed`` when no split)."""
    if check_split(split) == "test":
        return TEST_SEED_START
    if split == "train" and (seed < 0 or seed + size > TEST_SEED_START):
        raise ValueError(
            f"train seeds {seed}..{seed + size - 1} reach the test seeds "
            f"(from {TEST_SEED_START}); use a seed >= 0 and seed + size <= {TEST_SEED_START}"
        )
    return seed
