"""How the nested-call benchmarks score a played sequence, as their papers do.

**NESTFUL** (Basu et al., 2024) compares the predicted call sequence with the gold one:

- *full sequence accuracy*: the sequence is the gold sequence, call for call in order (same
  function, same argument names, same values, where a value taken from an earlier output is
  that output's value);
- *partial sequence accuracy*: the share of gold calls the model made exactly;
- *F1 of function names* and *F1 of parameter names* (function, argument name) over the two
  sequences as multisets; *call F1* over exactly-made calls.

The paper's win rate (executing the sequence and checking the final answer) needs the real
APIs and is not computed; the episode succeeds on full sequence accuracy.

**ComplexFuncBench** (Zhong et al., 2025) checks each call as it is made against the gold
calls still due: *call accuracy* is the share of gold calls matched, and a sample succeeds
when every gold call is matched and the model then answers. Its matching is rule-based first
(same function, same argument names, equal values; ``categories_filter`` compared as a set),
then by replaying the call against the live API and by an LLM judge; only the rule-based part
is used here (the other two need RapidAPI and GPT-4o), so a call that is right in a way only
those would see counts as wrong. As in its runner, a turn whose calls all fail to match ends
the sample, so does a call after every gold call is made, and its location-lookup functions
are optional.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from tooluse.envs.rewards import RewardSignal, RewardType, StepContext

__all__ = ["MetricReward", "f1", "nestful_metrics"]


def f1(predicted: Sequence[Any], gold: Sequence[Any]) -> float:
    """The F1 of two multisets (1.0 when both are empty)."""
    if not predicted and not gold:
        return 1.0
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def nestful_metrics(
    predicted: Sequence[tuple[str, dict[str, Any]]],
    gold: Sequence[tuple[str, dict[str, Any]]],
    matched: Sequence[int | None],
) -> dict[str, float]:
    """NESTFUL's figures for a played sequence (see the module). ``matched[i]`` is the gold
    call the i-th predicted call made exactly, or ``None``."""
    in_order = len(predicted) == len(gold) and all(m == i for i, m in enumerate(matched))
    made = {m for m in matched if m is not None}
    names = f1([n for n, _ in predicted], [n for n, _ in gold])
    parameters = f1([(n, k) for n, a in predicted for k in a], [(n, k) for n, a in gold for k in a])
    exact = sum(1 for m in matched if m is not None)
    if not predicted and not gold:
        call_f1 = 1.0
    elif exact == 0:
        call_f1 = 0.0
    else:
        precision, recall = exact / len(predicted), len(made) / len(gold)
        call_f1 = 2 * precision * recall / (precision + recall)
    return {
        "full_sequence": 1.0 if in_order else 0.0,
        "partial_sequence": len(made) / len(gold) if gold else 1.0,
        "name_f1": names,
        "param_f1": parameters,
        "call_f1": call_f1,
    }


@dataclass(frozen=True, kw_only=True)
class MetricReward:
    """A monitoring signal (weight 0 by default) for one figure of the episode's scoring,
    given on the step that ends it (``StepContext.info["metrics"][name]``)."""

    name: str
    _weight: float = 0.0
    reward_type: ClassVar[RewardType] = RewardType.OUTCOME

    @property
    def weight(self) -> float:
        return self._weight

    def compute(self, context: StepContext) -> RewardSignal | None:
        metrics = context.info.get("metrics")
        if not context.done or not metrics or self.name not in metrics:
            return None
        return RewardSignal(
            name=self.name,
            value=float(metrics[self.name]),
            weight=self._weight,
            reward_type=self.reward_type,
        )
