"""Length-grouped batches: every example once per epoch, whole batches of similar lengths in
random order, less padding than random batches."""

from __future__ import annotations

import random

import pytest

from tooluse.train.batching import length_grouped_order


def _batches(order, size):
    return [order[i : i + size] for i in range(0, len(order), size)]


def _padded(order, lengths, size):
    return sum(max(lengths[i] for i in b) * len(b) for b in _batches(order, size))


def _mixed_lengths(n=403, seed=3):
    rng = random.Random(seed)
    return [rng.choice((rng.randint(150, 250), rng.randint(700, 1100))) for _ in range(n)]


def test_every_index_once_and_only_the_last_batch_short():
    lengths = _mixed_lengths()
    order = length_grouped_order(lengths, batch_size=8, window=4, seed=0)
    assert sorted(order) == list(range(len(lengths)))
    sizes = [len(b) for b in _batches(order, 8)]
    assert set(sizes[:-1]) == {8} and sizes[-1] == len(lengths) % 8


def test_batches_pad_less_than_random_ones_and_come_in_random_order():
    lengths = _mixed_lengths()
    grouped = length_grouped_order(lengths, batch_size=8, window=4, seed=0)
    shuffled = list(range(len(lengths)))
    random.Random(0).shuffle(shuffled)
    # here random batches are about 55% real tokens, grouped ones about 82%
    assert real_share(grouped, lengths) > real_share(shuffled, lengths) + 0.1
    widths = [max(lengths[i] for i in b) for b in _batches(grouped, 8)[:-1]]
    # not sorted from longest to shortest: the batches themselves are shuffled
    assert widths != sorted(widths, reverse=True) and widths != sorted(widths)


def test_the_seed_decides_the_order_and_window_one_is_random_batches():
    lengths = _mixed_lengths()
    first = length_grouped_order(lengths, batch_size=8, window=4, seed=0)
    assert first == length_grouped_order(lengths, batch_size=8, window=4, seed=0)
    assert first != length_grouped_order(lengths, batch_size=8, window=4, seed=1)
    plain = length_grouped_order(lengths, batch_size=8, window=1, seed=0)
    assert real_share(plain, lengths) < real_share(first, lengths)


def real_share(order, lengths):
    return sum(lengths) / _padded(order, lengths, 8)


@pytest.mark.parametrize(("batch_size", "window"), [(0, 4), (8, 0)])
def test_sizes_below_one_are_refused(batch_size, window):
    with pytest.raises(ValueError, match="1 or more"):
        length_grouped_order([5, 6], batch_size=batch_size, window=window, seed=0)


def test_no_examples_no_order():
    assert length_grouped_order([], batch_size=8, window=4, seed=0) == []
