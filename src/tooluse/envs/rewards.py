"""Reward signals of tool environments.

=========================  =======  =========================================================
reward                     type     value
=========================  =======  =========================================================
CorrectnessReward          outcome  1 if the environment judged the final answer right, else 0
NumericCorrectnessReward   outcome  1 if ``|got - want| <= tol * max(1, |want|)`` (GSM8K), else 0
ToolValidityReward         step     successful calls / calls of the step (1 if no calls)
ToolEfficiencyReward       step     ``max(0, 1 - p_excess * excess - p_dup * duplicates)``
=========================  =======  =========================================================

Each reward looks at one step (:class:`StepContext`) and gives a :class:`RewardSignal`; a
step's signals form a :class:`SignalBundle` whose ``total`` is the weighted sum. A reward with
``_weight=0.0`` still appears in the bundle but adds nothing (monitoring only); tool
environments attach :class:`ToolValidityReward` and :class:`ToolEfficiencyReward` that way
unless they are given explicitly. BFCL's per-turn state and response rewards live with its
environment, in :mod:`tooluse.evals.bfcl.rewards`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Protocol, runtime_checkable

from tooluse.messages import ToolCall, ToolResult, call_key

__all__ = [
    "CorrectnessReward",
    "NumericCorrectnessReward",
    "Reward",
    "RewardSignal",
    "RewardType",
    "SignalBundle",
    "StepContext",
    "ToolEfficiencyReward",
    "ToolValidityReward",
    "call_key",
    "numbers_match",
    "parse_number",
    "with_monitoring",
]


class RewardType(str, Enum):
    """When a signal is meaningful: every step, or the outcome of the episode."""

    STEP = "step"
    OUTCOME = "outcome"


@dataclass(frozen=True, kw_only=True)
class RewardSignal:
    """One named reward value with its weight (``weighted = value * weight``)."""

    name: str
    value: float
    weight: float = 1.0
    reward_type: RewardType = RewardType.STEP
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def weighted(self) -> float:
        return self.value * self.weight

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "weight": self.weight,
            "type": self.reward_type.value,
            "info": self.info,
        }


@dataclass(frozen=True, kw_only=True)
class SignalBundle:
    """The signals of one step; ``total`` is their weighted sum."""

    signals: tuple[RewardSignal, ...] = ()

    @property
    def total(self) -> float:
        return float(sum(s.weighted for s in self.signals))

    def by_type(self, reward_type: RewardType) -> tuple[RewardSignal, ...]:
        """The signals of one type (e.g. ``RewardType.STEP`` for the monitoring signals)."""
        return tuple(s for s in self.signals if s.reward_type == reward_type)

    def get(self, name: str) -> RewardSignal | None:
        """The signal called ``name``, if present."""
        return next((s for s in self.signals if s.name == name), None)

    def __iter__(self) -> Iterator[RewardSignal]:
        return iter(self.signals)

    def __len__(self) -> int:
        return len(self.signals)

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "signals": [s.to_dict() for s in self.signals]}


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """What a reward may look at: this step's calls and results, and the episode so far.

    ``previous_calls`` are the call keys (name + arguments) of earlier steps; ``answer`` is the
    submitted answer when the step ended the episode (``None`` otherwise) and ``correct``
    whether the environment judged it right.
    """

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    previous_calls: tuple[str, ...] = ()
    text: str = ""
    answer: Any = None
    correct: bool | None = None
    reference: Any = None
    done: bool = False
    #: Environment-specific facts about the step (BFCL: ``turn_check``, the turn's verdict).
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Reward(Protocol):
    """Anything with a ``name``, a ``weight``, a ``reward_type`` and ``compute(context)``."""

    name: str

    @property
    def weight(self) -> float: ...

    @property
    def reward_type(self) -> RewardType: ...

    def compute(self, context: StepContext) -> RewardSignal | None: ...


@dataclass(frozen=True, kw_only=True)
class WeightedReward:
    """Shared part of the built-in rewards: a name, a ``_weight`` and the signal they emit.

    ``_weight`` keeps the llenvs spelling; 0.0 makes a reward a monitor that counts for nothing.
    """

    name: str = "reward"
    _weight: float = 1.0
    reward_type: ClassVar[RewardType] = RewardType.STEP

    @property
    def weight(self) -> float:
        return self._weight

    def signal(self, value: float, info: dict[str, Any]) -> RewardSignal:
        return RewardSignal(
            name=self.name,
            value=value,
            weight=self._weight,
            reward_type=self.reward_type,
            info=info,
        )


@dataclass(frozen=True, kw_only=True)
class CorrectnessReward(WeightedReward):
    """1.0 when the episode ended with a correct answer, 0.0 when with a wrong one.

    Gives no signal on steps that do not end the episode.
    """

    name: str = "correctness"
    reward_type: ClassVar[RewardType] = RewardType.OUTCOME

    def compute(self, context: StepContext) -> RewardSignal | None:
        if not context.done:
            return None
        return self.signal(
            1.0 if context.correct else 0.0,
            {"answer": context.answer, "reference": context.reference},
        )


@dataclass(frozen=True, kw_only=True)
class ToolValidityReward(WeightedReward):
    """The share of this step's calls that succeeded (1.0 when all did; none made: 1.0)."""

    name: str = "tool_validity"

    def compute(self, context: StepContext) -> RewardSignal | None:
        total = len(context.results)
        valid = sum(1 for r in context.results if not r.is_error)
        return self.signal(
            valid / total if total else 1.0, {"valid_calls": valid, "total_calls": total}
        )


@dataclass(frozen=True, kw_only=True)
class ToolEfficiencyReward(WeightedReward):
    """1.0 minus penalties: ``penalty_per_excess`` per call above ``max_calls_per_step`` and
    ``duplicate_penalty`` per call identical (name and arguments) to an earlier one of the
    episode or of this step; never below 0."""

    max_calls_per_step: int = 5
    penalty_per_excess: float = 0.1
    duplicate_penalty: float = 0.2
    name: str = "tool_efficiency"

    def __post_init__(self) -> None:
        if self.max_calls_per_step < 0:
            raise ValueError("max_calls_per_step must be >= 0")
        if self.penalty_per_excess < 0 or self.duplicate_penalty < 0:
            raise ValueError("penalties must be >= 0")

    def compute(self, context: StepContext) -> RewardSignal | None:
        seen = set(context.previous_calls)
        duplicates = 0
        for call in context.calls:
            key = call_key(call)
            if key in seen:
                duplicates += 1
            seen.add(key)
        excess = max(0, len(context.calls) - self.max_calls_per_step)
        value = 1.0 - self.penalty_per_excess * excess - self.duplicate_penalty * duplicates
        return self.signal(
            max(0.0, value),
            {"calls": len(context.calls), "excess": excess, "duplicates": duplicates},
        )


@dataclass(frozen=True, kw_only=True)
class NumericCorrectnessReward(WeightedReward):
    """GSM8K correctness: 1.0 when the submitted number equals the reference's, else 0.0.

    Both sides are read with :func:`parse_number` (``"#### 12"``, ``"$1,200"``,
    ``"\\boxed{12}"``, the last number of a sentence); they match when
    ``|got - want| <= tolerance * max(1, |want|)``. An answer without a number scores 0.0.
    Gives a signal only on the step that ends the episode.
    """

    tolerance: float = 1e-6
    name: str = "correctness"
    reward_type: ClassVar[RewardType] = RewardType.OUTCOME

    def compute(self, context: StepContext) -> RewardSignal | None:
        if not context.done:
            return None
        got, want = parse_number(context.answer), parse_number(context.reference)
        value = 1.0 if numbers_match(got, want, self.tolerance) else 0.0
        return self.signal(value, {"answer": got, "reference": want})


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")


def parse_number(value: Any) -> float | None:
    """The number an answer states (the last one in text; ``#### N`` and ``\\boxed{N}`` win)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return None
    text = str(value)
    for marker in (r"####\s*([^\n]+)", r"\\boxed\{([^}]*)\}"):
        found = re.search(marker, text)
        if found:
            text = found.group(1)
            break
    found_numbers = _NUMBER.findall(text)
    if not found_numbers:
        return None
    try:
        return float(found_numbers[-1].replace(",", ""))
    except ValueError:
        return None


def numbers_match(got: float | None, want: float | None, tolerance: float) -> bool:
    """``|got - want| <= tolerance * max(1, |want|)`` (never true when either is missing)."""
    if got is None or want is None:
        return False
    return abs(got - want) <= tolerance * max(1.0, abs(want))


def with_monitoring(rewards: Iterable[Any]) -> tuple[Any, ...]:
    """``rewards`` plus validity and efficiency monitors (weight 0) for the kinds not given."""
    out = list(rewards)
    if not any(isinstance(r, ToolValidityReward) for r in out):
        out.append(ToolValidityReward(_weight=0.0))
    if not any(isinstance(r, ToolEfficiencyReward) for r in out):
        out.append(ToolEfficiencyReward(_weight=0.0))
    names = [r.name for r in out]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"two rewards share the name(s) {', '.join(duplicated)}")
    return tuple(out)


def compute_signals(rewards: Sequence[Any], context: StepContext) -> SignalBundle:
    """Every reward's signal for one step (rewards that do not apply give none)."""
    signals = []
    for reward in rewards:
        signal = reward.compute(context)
        if signal is not None:
            signals.append(signal)
    return SignalBundle(signals=tuple(signals))
