"""pass@k and pass^k: how likely one of k tries, or all k tries, of a task succeed.

Both are unbiased estimates from the n tries of a task, c of them successful: pass@k is
``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021), pass^k is ``C(c, k) / C(n, k)`` (τ-bench's
reliability figure, Yao et al., 2024); a run's figure is their mean over tasks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["pass_at_k", "pass_figures", "pass_hat_k"]


def pass_at_k(samples: int, correct: int, k: int) -> float:
    """The unbiased pass@k estimate for one task: ``1 - C(n - c, k) / C(n, k)``."""
    if k > samples:
        raise ValueError(f"pass@{k} needs at least {k} samples per task, got {samples}")
    if samples - correct < k:
        return 1.0
    return 1.0 - math.comb(samples - correct, k) / math.comb(samples, k)


def pass_hat_k(samples: int, correct: int, k: int) -> float:
    """The unbiased pass^k estimate for one task (all of k tries succeed): ``C(c, k) / C(n, k)``."""
    if k > samples:
        raise ValueError(f"pass^{k} needs at least {k} samples per task, got {samples}")
    return math.comb(correct, k) / math.comb(samples, k)


def pass_figures(
    outcomes: Mapping[Any, Sequence[bool]], max_k: int
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """``(pass@k, pass^k)`` for k = 1..``max_k`` over tasks' outcomes (a task with fewer than
    k samples is left out of that k's mean)."""
    at: dict[str, float | None] = {}
    hat: dict[str, float | None] = {}
    for k in range(1, max(1, max_k) + 1):
        tasks = [s for s in outcomes.values() if len(s) >= k]
        at[str(k)] = _mean([pass_at_k(len(s), sum(s), k) for s in tasks])
        hat[str(k)] = _mean([pass_hat_k(len(s), sum(s), k) for s in tasks])
    return at, hat


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
