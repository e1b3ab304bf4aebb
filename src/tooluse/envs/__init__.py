"""Tool environments, rewards, the trajectory runner, evaluation runs and training data.

::

    from tooluse.envs import Action, TrajectoryRunner, environment_registry
    env = environment_registry.get(name="math:arithmetic", tool_types=("python",))
    state, info = env.reset(options={"task_index": 0})

Environments: ``math:arithmetic`` (built-in problems), ``math:gsm8k`` / ``math:GSM8K``
(a local GSM8K JSONL file), ``bfcl:multi_turn_base`` / ``_miss_func`` / ``_miss_param`` /
``_long_context`` (BFCL's executable multi-turn worlds, in :mod:`tooluse.evals.bfcl`; needs
``bfcl-eval``).
``TrajectoryRunner.run_evaluation`` plays many trajectories on the run engine
(:mod:`tooluse.evals.evaluation`, with pass@k and the reward figures);
:mod:`tooluse.envs.export` turns them into training data.

``ToolCall`` and ``ToolResult`` are re-exported here so that environment code needs one import.
"""

from __future__ import annotations

from tooluse.envs.arithmetic import ARITHMETIC_TASKS, ArithmeticEnvironment
from tooluse.envs.base import (
    Action,
    EnvState,
    Observation,
    StepResult,
    Task,
    ToolEnvironment,
    submit_answer_tool,
)
from tooluse.envs.gsm8k import GSM8KEnvironment, load_gsm8k
from tooluse.envs.registry import EnvironmentRegistry, environment_registry
from tooluse.envs.rewards import (
    CorrectnessReward,
    NumericCorrectnessReward,
    Reward,
    RewardSignal,
    RewardType,
    SignalBundle,
    StepContext,
    ToolEfficiencyReward,
    ToolValidityReward,
    parse_number,
)
from tooluse.envs.runner_spec import RunnerSpec, runner_from_spec
from tooluse.envs.trajectory import (
    Trajectory,
    TrajectoryRunner,
    TrajectoryStep,
    write_trajectories,
)
from tooluse.messages import ToolCall, ToolResult

__all__ = [
    "ARITHMETIC_TASKS",
    "Action",
    "ArithmeticEnvironment",
    "CorrectnessReward",
    "EnvState",
    "EnvironmentRegistry",
    "GSM8KEnvironment",
    "NumericCorrectnessReward",
    "Observation",
    "Reward",
    "RewardSignal",
    "RewardType",
    "RunnerSpec",
    "SignalBundle",
    "StepContext",
    "StepResult",
    "Task",
    "ToolCall",
    "ToolEfficiencyReward",
    "ToolEnvironment",
    "ToolResult",
    "ToolValidityReward",
    "Trajectory",
    "TrajectoryRunner",
    "TrajectoryStep",
    "environment_registry",
    "load_gsm8k",
    "parse_number",
    "runner_from_spec",
    "submit_answer_tool",
    "write_trajectories",
]
