"""``TrajectoryRunner``: a backend plays one episode of a tool environment, recorded for training.

::

    env = environment_registry.get(name="math:arithmetic", tool_types=("python",))
    runner = TrajectoryRunner(environment=env, backend=backend,
                              sampling_params=SamplingParams(temperature=0.0),
                              system_prompt="Use tools to solve problems. Submit your final answer.")
    trajectory = runner.run_trajectory(task_index=0)
    trajectory.success, trajectory.total_reward, trajectory.to_json()

The runner is ``tooluse.run`` with the environment as the tool executor: each round of calls
becomes one ``env.step`` (so rewards see whole turns), and the run stops when the environment
says the episode is over. How tools reach the model is the loop's three-way priority: native
function calling when the backend has it, else the ``tool_call_parser`` (tools in the system
prompt, calls parsed from text), else tools are ignored with a warning naming the backend.
A final text reply without calls is graded as the answer.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from tooluse.envs.base import Action, EnvState, StepResult, ToolEnvironment
from tooluse.execution.base import AbstractToolExecutor, CancellationToken
from tooluse.loop import build_setup, drive_async, drive_sync, initial_history
from tooluse.loop.core import LoopSetup, ModelTurnFinished, RunFinished, RunResult, StopReason
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage
from tooluse.providers.base import Backend, SamplingParams, ToolChoice
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "EngineCounts",
    "EvaluationOutcome",
    "Trajectory",
    "TrajectoryRunner",
    "TrajectoryStep",
    "message_to_dict",
    "write_trajectories",
]


class EngineCounts(Protocol):
    """How an evaluation's items went on the run engine (its ``EngineRun`` is one)."""

    @property
    def ran(self) -> int: ...

    @property
    def skipped(self) -> int: ...

    @property
    def failed(self) -> int: ...

    @property
    def seconds(self) -> float: ...

    @property
    def items_per_minute(self) -> float: ...


class EvaluationOutcome(Protocol):
    """What :meth:`TrajectoryRunner.run_evaluation` returns (the evaluation's
    ``EvaluationResult`` is one; evals builds on envs, so envs names it by what it holds)."""

    @property
    def records(self) -> tuple[dict[str, Any], ...]: ...

    @property
    def summary(self) -> dict[str, Any]: ...

    @property
    def run(self) -> EngineCounts: ...

    @property
    def out(self) -> Path: ...

    @property
    def trajectories_path(self) -> Path: ...


@dataclass(frozen=True, kw_only=True)
class TrajectoryStep:
    """One environment step: the turn's calls, their results and the step's reward signals."""

    index: int
    text: str
    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    result: StepResult

    @property
    def reward(self) -> float:
        return self.result.reward

    def to_dict(self) -> dict[str, Any]:
        info = {k: v for k, v in self.result.info.items() if k != "tool_results"}
        return {
            "index": self.index,
            "text": self.text,
            "calls": [_call_dict(c) for c in self.calls],
            "results": [_result_dict(r) for r in self.results],
            "reward": self.reward,
            "signals": self.result.signals.to_dict(),
            "terminated": self.result.terminated,
            "truncated": self.result.truncated,
            "info": _json_safe(info),
        }


@dataclass(frozen=True, kw_only=True)
class Trajectory:
    """A recorded episode: the whole conversation, each step with its rewards, the outcome.

    ``success`` is true when the episode ended with an answer the environment judged correct;
    ``total_reward`` sums the steps' weighted rewards.
    """

    environment: str
    task_index: int
    task_id: str
    prompt: str
    reference: Any
    messages: tuple[ChatMessage, ...]
    steps: tuple[TrajectoryStep, ...]
    success: bool
    answer: Any = None
    terminated: bool = False
    truncated: bool = False
    stop_reason: str = ""
    mode: str = "native"
    usage: Usage = field(default_factory=Usage)
    #: Every tool offered during the episode (in order of first offer).
    tools: tuple[ToolDefinition, ...] = ()

    @property
    def total_reward(self) -> float:
        return float(sum(step.reward for step in self.steps))

    @property
    def num_tool_calls(self) -> int:
        return sum(len(step.calls) for step in self.steps)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (messages, steps with signals, outcome, usage)."""
        return {
            "environment": self.environment,
            "task_index": self.task_index,
            "task_id": self.task_id,
            "prompt": self.prompt,
            "reference": _json_safe(self.reference),
            "answer": _json_safe(self.answer),
            "success": self.success,
            "total_reward": self.total_reward,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "stop_reason": self.stop_reason,
            "mode": self.mode,
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "requests": self.usage.requests,
            },
            "messages": [message_to_dict(m) for m in self.messages],
            "tools": [t.to_openai_schema() for t in self.tools],
            "steps": [s.to_dict() for s in self.steps],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)


def write_trajectories(trajectories: Iterable[Trajectory], path: str | Path) -> int:
    """Write trajectories as JSON Lines (one per line); returns how many were written."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            handle.write(trajectory.to_json() + "\n")
            count += 1
    return count


def message_to_dict(message: ChatMessage) -> dict[str, Any]:
    """A chat message as JSON-ready data (role, content, calls or the answered call)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.reasoning:
        out["reasoning"] = message.reasoning
    if message.tool_calls:
        out["tool_calls"] = [_call_dict(c) for c in message.tool_calls]
    if message.result is not None:
        out["tool_call_id"] = message.result.call_id
        out["name"] = message.result.tool_name
        out["is_error"] = message.result.is_error
    return out


def _call_dict(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": call.id,
        "name": call.name,
        "arguments": _json_safe(call.arguments),
    }
    if call.raw_arguments is not None and not call.arguments:
        out["raw_arguments"] = call.raw_arguments
    return out


def _result_dict(result: ToolResult) -> dict[str, Any]:
    return {
        "call_id": result.call_id,
        "name": result.tool_name,
        "output": result.output,
        "is_error": result.is_error,
    }


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class _Episode:
    """One episode in progress: the environment state and the steps so far (runner-internal)."""

    def __init__(
        self, environment: ToolEnvironment, state: EnvState, params: SamplingParams | None
    ) -> None:
        self.environment = environment
        self.state = state
        self.params = params
        self.steps: list[TrajectoryStep] = []
        self.text = ""
        self.cancel = CancellationToken()
        self.tools: dict[str, ToolDefinition] = {}

    def action(self, calls: Sequence[ToolCall]) -> Action:
        return Action(tool_calls=tuple(calls), text=self.text)

    def record(self, action: Action, result: StepResult) -> tuple[ToolResult, ...]:
        self.state = result.state
        self.steps.append(
            TrajectoryStep(
                index=len(self.steps),
                text=action.text,
                calls=action.tool_calls,
                results=result.tool_results,
                result=result,
            )
        )
        if result.done:
            self.cancel.cancel()  # the loop stops after this round
        return result.tool_results


class _EnvironmentExecutor(AbstractToolExecutor):
    """Hands each round of calls to the environment as one step."""

    def __init__(self, episode: _Episode, tools: Sequence[ToolDefinition]) -> None:
        # submit_answer stays terminal for the model (the local backend never narrows a first
        # call to it); the loop passes it through (run_terminal_calls) for the environment to
        # grade, and the episode's cancel ends the run.
        self._definitions = tuple(tools)
        self.episode = episode

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        return self._definitions

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        action = self.episode.action(calls)
        return self.episode.record(
            action, self.episode.environment.step(self.episode.state, action)
        )

    async def aexecute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        action = self.episode.action(calls)
        result = await self.episode.environment.astep(self.episode.state, action)
        return self.episode.record(action, result)


class TrajectoryRunner:
    """Runs a backend on an environment's tasks and records :class:`Trajectory` objects.

    ``system_prompt`` goes first; ``tool_call_parser`` serves backends without native function
    calling; ``max_turns`` caps tool rounds (default: the environment's ``max_steps``);
    ``tool_choice`` is each user turn's first request's (``"required"``: the model must start
    with a call; the loop asks with ``"auto"`` once a forced round has run).
    """

    def __init__(
        self,
        *,
        environment: ToolEnvironment,
        backend: Backend,
        sampling_params: SamplingParams | None = None,
        system_prompt: str | None = None,
        tool_call_parser: Any = None,
        max_turns: int | None = None,
        max_identical_calls: int = 3,
        tool_choice: ToolChoice = "auto",
    ) -> None:
        self.environment = environment
        self.backend = backend
        self.sampling_params = sampling_params
        self.system_prompt = system_prompt
        self.tool_call_parser = tool_call_parser
        self.max_turns = max_turns if max_turns is not None else environment.max_steps
        self.max_identical_calls = max_identical_calls
        self.tool_choice = tool_choice

    # -- entry points ----------------------------------------------------------------------------

    def run_trajectory(self, task_index: int = 0, *, seed: int | None = None) -> Trajectory:
        """Play one episode on task ``task_index`` (every user turn of a multi-turn task)."""
        episode, history = self._start(task_index, seed)
        runs: list[RunResult] = []
        while True:
            run: RunResult | None = None
            for event in drive_sync(self.backend, self._setup(episode), history):
                run = self._observe(episode, event) or run
            assert run is not None
            runs.append(run)
            final = self._closing_action(episode, run)
            if final is not None:
                episode.record(final, self.environment.step(episode.state, final))
            next_history = self._next_turn(episode, run, final)
            if next_history is None:
                return self._trajectory(episode, runs, task_index)
            history = next_history

    async def arun_trajectory(self, task_index: int = 0, *, seed: int | None = None) -> Trajectory:
        """Async :meth:`run_trajectory` (the same loop, driven with awaits)."""
        episode, history = self._start(task_index, seed)
        runs: list[RunResult] = []
        while True:
            run: RunResult | None = None
            async for event in drive_async(self.backend, self._setup(episode), history):
                run = self._observe(episode, event) or run
            assert run is not None
            runs.append(run)
            final = self._closing_action(episode, run)
            if final is not None:
                episode.record(final, await self.environment.astep(episode.state, final))
            next_history = self._next_turn(episode, run, final)
            if next_history is None:
                return self._trajectory(episode, runs, task_index)
            history = next_history

    def run_evaluation(
        self,
        task_indices: Iterable[int] | None = None,
        *,
        out: str | Path,
        samples_per_task: int = 1,
        concurrency: int = 1,
        engine: Literal["local", "ray"] = "local",
        **options: Any,
    ) -> EvaluationOutcome:
        """Play ``samples_per_task`` trajectories per task on the run engine into ``out``:
        JSONL written as they finish, resume after a kill, ``summary.json`` with pass@k and
        the mean reward per reward name and type (see :mod:`tooluse.evals.evaluation`).

        A convenience for :func:`tooluse.evals.evaluation.run_evaluation`, which is resolved
        by name when called: evals builds on envs, so envs never imports evals.
        """
        run_evaluation = importlib.import_module("tooluse.evals.evaluation").run_evaluation
        return run_evaluation(
            self,
            out=out,
            task_indices=task_indices,
            samples_per_task=samples_per_task,
            concurrency=concurrency,
            engine=engine,
            **options,
        )

    def run_all(self, task_indices: Iterable[int] | None = None) -> list[Trajectory]:
        """One trajectory per task (all tasks by default), in order."""
        indices = range(len(self.environment)) if task_indices is None else task_indices
        return [self.run_trajectory(task_index=i) for i in indices]

    # -- the shared core -------------------------------------------------------------------------

    def _start(self, task_index: int, seed: int | None) -> tuple[_Episode, list[ChatMessage]]:
        state, _info = self.environment.reset(seed=seed, options={"task_index": task_index})
        params = self.sampling_params
        if seed is not None and params is not None and params.seed is None:
            # each sample of a task draws its own tokens (pass^k needs differing tries when
            # the temperature is above 0), the same ones again when the run resumes
            params = dataclasses.replace(params, seed=seed)
        episode = _Episode(self.environment, state, params)
        observation = state.observation
        parts = (observation.system_prompt, self.system_prompt or "")
        system = "\n\n".join(part for part in parts if part) or None
        prompt: Any = observation.prompt
        if observation.history:  # the conversation so far, then the prompt
            prompt = [*observation.history, ChatMessage.user(observation.prompt)]
        return episode, initial_history(prompt, system)

    def _setup(self, episode: _Episode) -> LoopSetup:
        """The loop for one user turn, with the tools the environment offers now."""
        tools = episode.state.observation.available_tools
        for tool in tools:
            episode.tools.setdefault(tool.name, tool)
        executor = _EnvironmentExecutor(episode, tools) if tools else None
        setup = build_setup(
            self.backend,
            tools=None,
            tool_choice=self.tool_choice,
            max_tool_iters=self.max_turns,
            tool_call_parser=self.tool_call_parser,
            params=episode.params,
            before_tool_call=None,
            after_tool_call=None,
            tool_timeout=None,
            tool_timeouts=None,
            max_concurrency=None,
            max_output_chars=1_000_000,
            injected=None,
            max_identical_calls=self.max_identical_calls,
            final_answer_on_limit=False,
            cancel=episode.cancel,
            stream=False,
            executor=executor,
        )
        return dataclasses.replace(setup, run_terminal_calls=True)

    @staticmethod
    def _next_turn(
        episode: _Episode, run: RunResult, final: Action | None
    ) -> list[ChatMessage] | None:
        """The history for the next user turn, when the step that ended this turn gave one."""
        message = episode.state.observation.user_message
        if final is None or episode.state.done or not message:
            return None
        return [*run.messages, ChatMessage.user(message)]

    @staticmethod
    def _observe(episode: _Episode, event: Any) -> RunResult | None:
        if isinstance(event, ModelTurnFinished):
            episode.text = event.message.content  # the text of the action about to be stepped
        elif isinstance(event, RunFinished):
            return event.result
        return None

    @staticmethod
    def _closing_action(episode: _Episode, run: RunResult) -> Action | None:
        """A final text reply is the answer; an episode cut short by the loop ends there."""
        if episode.state.done:
            return None
        if run.stop_reason is StopReason.FINAL_TEXT:
            return Action(text=run.final_text)
        return None

    def _trajectory(
        self, episode: _Episode, runs: Sequence[RunResult], task_index: int
    ) -> Trajectory:
        task = self.environment.task(task_index)
        run = runs[-1]
        last = episode.steps[-1].result if episode.steps else None
        terminated = bool(last and last.terminated)
        stop = run.stop_reason.value
        if episode.state.done and run.stop_reason is StopReason.CANCELLED:
            stop = "episode_done"  # the runner stopped the loop because the episode ended
        usage = Usage()
        for one in runs:
            usage = usage + one.usage
        return Trajectory(
            environment=getattr(self.environment, "name", type(self.environment).__name__),
            task_index=task_index,
            task_id=task.id or str(task_index),
            prompt=task.prompt,
            reference=task.reference,
            messages=run.messages,
            steps=tuple(episode.steps),
            success=bool(terminated and last is not None and last.info.get("correct")),
            answer=episode.state.answer,
            terminated=terminated,
            truncated=not terminated,
            stop_reason=stop,
            mode=run.mode,
            usage=usage,
            tools=tuple(episode.tools.values()),
        )
