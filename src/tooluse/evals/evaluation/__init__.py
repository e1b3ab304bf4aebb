"""Evaluations of tool environments: :class:`TrajectoryRunner` plays one trajectory,
:func:`run_evaluation` many on the run engine, with resume and a summary.

The two names sit together here as in llenvs (``llenvs.evaluation`` and
``llenvs.evaluation.runner``)::

    from tooluse.evals.evaluation import TrajectoryRunner
    from tooluse.evals.evaluation.runner import run_evaluation

``TrajectoryRunner`` is defined in :mod:`tooluse.envs` (environments never import evals);
``run_evaluation`` and the summary figures in :mod:`tooluse.evals.evaluation.runner`.
"""

from __future__ import annotations

from tooluse.envs.trajectory import Trajectory, TrajectoryRunner
from tooluse.evals.evaluation.runner import (
    SUMMARY,
    TRAJECTORIES,
    EvaluationResult,
    RunnerSpec,
    format_summary,
    pass_at_k,
    pass_hat_k,
    repair_trajectories_file,
    run_evaluation,
    runner_from_spec,
    summarize,
    trajectory_rewards,
)

__all__ = [
    "SUMMARY",
    "TRAJECTORIES",
    "EvaluationResult",
    "RunnerSpec",
    "Trajectory",
    "TrajectoryRunner",
    "format_summary",
    "pass_at_k",
    "pass_hat_k",
    "repair_trajectories_file",
    "run_evaluation",
    "runner_from_spec",
    "summarize",
    "trajectory_rewards",
]
