"""Tool environments, rewards and the trajectory runner (evaluation and training data).

::

    from tooluse.envs import Action, TrajectoryRunner, environment_registry
    env = environment_registry.get(name="math:arithmetic", tool_types=("python",))
    state, info = env.reset(options={"task_index": 0})

``ToolCall`` and ``ToolResult`` are re-exported here so that environment code needs one import.
"""

from __future__ import annotations

from tooluse.envs.arithmetic import ARITHMETIC_TASKS, ArithmeticEnvironment, parse_number
from tooluse.envs.base import (
    Action,
    EnvState,
    Observation,
    StepResult,
    Task,
    ToolEnvironment,
    submit_answer_tool,
)
from tooluse.envs.registry import EnvironmentRegistry, environment_registry
from tooluse.envs.rewards import (
    CorrectnessReward,
    Reward,
    RewardSignal,
    RewardType,
    SignalBundle,
    StepContext,
    ToolEfficiencyReward,
    ToolValidityReward,
)
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
    "Observation",
    "Reward",
    "RewardSignal",
    "RewardType",
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
    "parse_number",
    "submit_answer_tool",
    "write_trajectories",
]
