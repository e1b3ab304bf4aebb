"""The rewards of BFCL's multi-turn environment: its state and response checks, per user turn.

Both read the turn check that :class:`~tooluse.evals.bfcl.multi_turn.BFCLMultiTurnEnvironment`
puts in a step's ``info["turn_check"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tooluse.envs.rewards import RewardSignal, RewardType, StepContext, WeightedReward

__all__ = ["BFCLResponseReward", "BFCLStateReward"]


@dataclass(frozen=True, kw_only=True)
class BFCLStateReward(WeightedReward):
    """BFCL's state check for one user turn: 1.0 when, after the turn, every public attribute of
    every class instance equals the ground-truth world's (and the model acted), else 0.0.

    Emitted at the end of each turn whose ground truth is not empty, so the mean over a
    trajectory is the share of checked turns whose state matched.
    """

    name: str = "bfcl_state"
    reward_type: ClassVar[RewardType] = RewardType.OUTCOME

    def compute(self, context: StepContext) -> RewardSignal | None:
        check = context.info.get("turn_check")
        if check is None or not check.checked:
            return None
        value = 1.0 if check.acted and check.state_valid else 0.0
        return self.signal(value, {"turn": check.turn, "error_type": check.error_type})


@dataclass(frozen=True, kw_only=True)
class BFCLResponseReward(WeightedReward):
    """BFCL's response check for one user turn: 1.0 when every ground-truth result of the turn
    is among the model's results so far (a multiset, any order), and the model acted; else 0.0.

    Emitted like :class:`BFCLStateReward`.
    """

    name: str = "bfcl_response"
    reward_type: ClassVar[RewardType] = RewardType.OUTCOME

    def compute(self, context: StepContext) -> RewardSignal | None:
        check = context.info.get("turn_check")
        if check is None or not check.checked:
            return None
        value = 1.0 if check.acted and check.response_valid else 0.0
        return self.signal(value, {"turn": check.turn, "error_type": check.error_type})
