"""Tool environments, rewards and the trajectory runner, as in the llenvs docs.

Run: ``python examples/env_arithmetic.py`` (a scripted model) or
``python examples/env_arithmetic.py --local`` (the embedded local model; slow, and a 135M model
rarely solves the task).
"""

from __future__ import annotations

import sys

from tooluse import SamplingParams, ScriptedBackend, ToolCall
from tooluse.envs import (
    Action,
    RewardType,
    ToolEfficiencyReward,
    ToolValidityReward,
    TrajectoryRunner,
    environment_registry,
)

# Create a tool-enabled environment
env = environment_registry.get(name="math:word_problems", tool_types=("python",))

state, _ = env.reset(options={"task_index": 0})
print(f"Task: {state.observation.prompt}")
print(f"Tools: {[t.name for t in state.observation.available_tools]}")

# Use the Python tool (a sandboxed subprocess)
call = ToolCall(id="1", name="python", arguments={"code": "print(0.15 * 80)"})
action = Action(tool_calls=(call,))
result = env.step(state, action)
print(f"Output: {result.info['tool_results'][0].output}")

# Monitoring rewards are always attached with weight 0
for signal in result.signals.by_type(RewardType.STEP):
    print(f"monitor {signal.name}={signal.value:.2f} weight={signal.weight}")

# Submitting ends the episode and is graded
final = env.step(
    result.state,
    Action(tool_calls=(ToolCall(id="2", name="submit_answer", arguments={"answer": "12"}),)),
)
print(f"Done: {final.done} correct: {final.info['correct']} reward: {final.reward}")

# Rewards that count (weights > 0)
validity_reward = ToolValidityReward()
efficiency_reward = ToolEfficiencyReward(
    max_calls_per_step=5, penalty_per_excess=0.1, duplicate_penalty=0.2
)
print(f"rewards: {validity_reward.name}, {efficiency_reward.name}")

# Run a whole episode with a model
if "--local" in sys.argv:
    from tooluse.local import LlamaCppBackend

    backend = LlamaCppBackend.default()
else:
    backend = ScriptedBackend(
        [
            [ToolCall(name="python", arguments={"code": "print(23 - 7 + 3 * 12)"})],
            [ToolCall(name="submit_answer", arguments={"answer": "52"})],
        ]
    )
runner = TrajectoryRunner(
    environment=env,
    backend=backend,
    sampling_params=SamplingParams(temperature=0.0),
    system_prompt="Use tools to solve problems. Submit your final answer.",
)
trajectory = runner.run_trajectory(task_index=1)
print(f"Success: {trajectory.success}")
print(
    f"steps: {len(trajectory.steps)} reward: {trajectory.total_reward} answer: {trajectory.answer}"
)
print(f"json keys: {sorted(trajectory.to_dict())[:4]}")
env.close()
