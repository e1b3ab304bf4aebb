"""Tool environments: tasks a model solves by calling tools, one step per assistant turn.

::

    state, info = env.reset(options={"task_index": 0})
    [t.name for t in state.observation.available_tools]        # ['python', 'submit_answer']
    call = ToolCall(id="1", name="python", arguments={"code": "print(0.15 * 80)"})
    result = env.step(state, Action(tool_calls=(call,)))
    result.info["tool_results"][0].output                       # '12.0'

Environments are stateless: ``step`` takes a state and returns the next one inside a
:class:`StepResult`, so a state can be stepped twice (branching). What the model may see
(:class:`Observation`) is kept apart from the reference answer, which stays in the task.
Every call of an action gets exactly one :class:`ToolResult`, in the action's order. Calling
the terminal ``submit_answer`` tool ends the episode and is graded; an action with text but no
calls is read as a final answer in text.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooluse.envs.rewards import (
    CorrectnessReward,
    SignalBundle,
    StepContext,
    call_key,
    compute_signals,
    with_monitoring,
)
from tooluse.execution.local import ToolExecutor as AsyncToolExecutor
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

__all__ = [
    "Action",
    "EnvState",
    "Observation",
    "StepResult",
    "Task",
    "ToolEnvironment",
    "check_action",
    "submit_answer_tool",
]

SUBMIT_ANSWER = "submit_answer"


@dataclass(frozen=True, kw_only=True)
class Task:
    """One problem: the prompt the model sees and the hidden ``reference`` answer."""

    prompt: str
    reference: Any
    id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Observation:
    """What the model may see: the task prompt, the tools, and the last step's results."""

    prompt: str
    available_tools: tuple[ToolDefinition, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    #: The next user message, set when a step ended one user turn of a multi-turn task.
    user_message: str = ""
    #: The task's own instructions (BFCL's agentic entries: memory contents, answer format),
    #: set by ``reset``; a runner puts them first in the system prompt.
    system_prompt: str = ""
    #: The conversation before ``prompt`` (a τ²-bench agent's greeting, or a task that starts
    #: mid-conversation), set by ``reset``; a runner puts it between the system prompt and
    #: the prompt.
    history: tuple[ChatMessage, ...] = ()


@dataclass(frozen=True, kw_only=True)
class EnvState:
    """Where an episode stands; pass it to ``step`` to continue (it is never mutated)."""

    task_index: int
    observation: Observation
    step_count: int = 0
    done: bool = False
    call_keys: tuple[str, ...] = ()
    answer: Any = None
    #: Environment-specific, JSON-ready state (a BFCL world keeps its executed calls here).
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Action:
    """One assistant turn: its tool calls and/or its text."""

    tool_calls: tuple[ToolCall, ...] = ()
    text: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """The outcome of one step.

    ``info["tool_results"]`` holds one result per call (action order); ``info["answer"]`` and
    ``info["correct"]`` are set when the step ended the episode with an answer.
    """

    state: EnvState
    signals: SignalBundle
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        """The weighted sum of this step's signals."""
        return self.signals.total

    @property
    def observation(self) -> Observation:
        return self.state.observation

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(self.info.get("tool_results", ()))


def check_action(state: EnvState, action: Action) -> None:
    """``ValueError`` for a step on a finished episode or an action that repeats call ids."""
    if state.done:
        raise ValueError("the episode is over; call reset() to start a new one")
    ids = [c.id for c in action.tool_calls]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"an action repeats tool call ids: {', '.join(repeated)}")


def submit_answer_tool(
    description: str = "Submit your final answer; this ends the task.",
) -> ToolDefinition:
    """The terminal ``submit_answer(answer: str)`` tool."""
    return ToolDefinition(
        name=SUBMIT_ANSWER,
        description=description,
        parameters=(
            ToolParameter(
                name="answer",
                type=ToolParameterType.STRING,
                description="The final answer (for numbers: just the number).",
            ),
        ),
        is_terminal=True,
    )


@dataclass(frozen=True, kw_only=True)
class _Plan:
    """A step before execution: which calls run, and the results already known."""

    to_run: tuple[ToolCall, ...]
    known: dict[str, ToolResult]
    answer: Any
    answered: bool


class ToolEnvironment:
    """Base of tool environments: tasks, tools (plus the terminal ``submit_answer``), rewards.

    Subclasses usually override :meth:`check_answer` (and :meth:`answer_from_text`). ``rewards``
    default to :class:`CorrectnessReward`; validity and efficiency monitors (weight 0) are always
    added unless given. ``max_steps`` truncates an episode that never submits.
    """

    name = "tool_environment"

    def __init__(
        self,
        tasks: Sequence[Task],
        *,
        tools: Sequence[ToolDefinition] = (),
        rewards: Sequence[Any] = (CorrectnessReward(),),
        max_steps: int = 10,
        tool_timeout: float | None = 60.0,
    ) -> None:
        if not tasks:
            raise ValueError("an environment needs at least one task")
        if max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        self._tasks = tuple(tasks)
        self._submit = submit_answer_tool()
        runnable = tuple(t for t in tools if t.name != SUBMIT_ANSWER)
        self._executor = AsyncToolExecutor(runnable, timeout=tool_timeout)
        self._tools = (*runnable, self._submit)
        self.rewards = with_monitoring(rewards)
        self.max_steps = max_steps

    # -- description ---------------------------------------------------------------------------

    @property
    def tasks(self) -> tuple[Task, ...]:
        return self._tasks

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        """The tools the model gets (``submit_answer`` last)."""
        return self._tools

    def __len__(self) -> int:
        return len(self._tasks)

    def task(self, index: int) -> Task:
        if not 0 <= index < len(self._tasks):
            raise IndexError(f"task_index {index} is out of range (0..{len(self._tasks) - 1})")
        return self._tasks[index]

    # -- grading (override) --------------------------------------------------------------------

    def check_answer(self, answer: Any, task: Task) -> bool:
        """Whether ``answer`` matches the task's reference (default: equal stripped text)."""
        return str(answer).strip() == str(task.reference).strip()

    def answer_from_text(self, text: str) -> Any:
        """The answer in a final text reply (default: the whole text)."""
        return text.strip()

    # -- episode -------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start an episode on ``options["task_index"]`` (default 0)."""
        index = int((options or {}).get("task_index", 0))
        task = self.task(index)
        state = EnvState(
            task_index=index,
            observation=Observation(prompt=task.prompt, available_tools=self._tools),
        )
        return state, {"task_id": task.id or str(index), "task_index": index, "seed": seed}

    def step(self, state: EnvState, action: Action) -> StepResult:
        """Run the action's calls (in parallel) and grade the step."""
        plan = self._plan(state, action)
        executed, data = self._execute(state, plan.to_run)
        return self._ended(self._finish(state, action, plan, executed, data))

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        """Async :meth:`step` (the same logic)."""
        plan = self._plan(state, action)
        executed, data = await self._aexecute(state, plan.to_run)
        return self._ended(self._finish(state, action, plan, executed, data))

    # -- execution hooks (subclasses with per-episode resources override these) ---------------------

    def _execute(
        self, state: EnvState, calls: Sequence[ToolCall]
    ) -> tuple[Sequence[ToolResult], dict[str, Any]]:
        """Run the calls of one step: their results (in order) and the state's next ``data``."""
        return (self._executor.execute_batch(calls) if calls else ()), state.data

    async def _aexecute(
        self, state: EnvState, calls: Sequence[ToolCall]
    ) -> tuple[Sequence[ToolResult], dict[str, Any]]:
        if not calls:
            return (), state.data
        return await self._executor.execute_batch_async(calls), state.data

    def _ended(self, result: StepResult) -> StepResult:
        """Called with every step's result (to release an episode's resources when it is done)."""
        return result

    # -- saving and restoring a state -----------------------------------------------------------

    def save_state(self, state: EnvState) -> dict[str, Any]:
        """``state`` as JSON-ready data, to store, replay or branch an episode later."""
        return {
            "environment": self.name,
            "task_index": state.task_index,
            "step_count": state.step_count,
            "done": state.done,
            "call_keys": list(state.call_keys),
            "answer": json.loads(json.dumps(state.answer, default=str)),
            "data": json.loads(json.dumps(state.data, default=str)),
            "user_message": state.observation.user_message,
            "tool_results": [
                {
                    "call_id": r.call_id,
                    "tool_name": r.tool_name,
                    "output": r.output,
                    "is_error": r.is_error,
                }
                for r in state.observation.tool_results
            ],
        }

    def restore_state(self, saved: Mapping[str, Any]) -> EnvState:
        """The state :meth:`save_state` wrote (``ValueError`` for another environment's)."""
        if saved.get("environment") != self.name:
            raise ValueError(
                f"the saved state belongs to environment {saved.get('environment')!r}, "
                f"not {self.name!r}"
            )
        index = int(saved["task_index"])
        task = self.task(index)
        data = dict(saved.get("data") or {})
        results = tuple(
            ToolResult(
                call_id=r["call_id"],
                tool_name=r["tool_name"],
                output=r["output"],
                is_error=bool(r["is_error"]),
            )
            for r in saved.get("tool_results", ())
        )
        return EnvState(
            task_index=index,
            observation=Observation(
                prompt=task.prompt,
                available_tools=self.available_tools(index, data),
                tool_results=results,
                user_message=str(saved.get("user_message", "")),
            ),
            step_count=int(saved["step_count"]),
            done=bool(saved["done"]),
            call_keys=tuple(saved.get("call_keys", ())),
            answer=saved.get("answer"),
            data=data,
        )

    def available_tools(
        self, task_index: int, data: Mapping[str, Any]
    ) -> tuple[ToolDefinition, ...]:
        """The tools the model has in a state (the same in every state, unless overridden)."""
        return self._tools

    def prepare(
        self,
        runner: Any,
        *,
        out: str | Path | None = None,
        task_indices: Iterable[int] | None = None,
    ) -> Any:
        """Play what the tasks ``task_indices`` depend on before they run, with ``runner``'s
        model (``run_evaluation`` calls it first, with its output folder); by default nothing.
        BFCL's memory questions need the conversations that fill their memory."""
        return None

    def close(self) -> None:
        self._executor.close()

    def __enter__(self) -> ToolEnvironment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the shared core -----------------------------------------------------------------------

    def _plan(self, state: EnvState, action: Action) -> _Plan:
        check_action(state, action)
        known: dict[str, ToolResult] = {}
        to_run: list[ToolCall] = []
        answer: Any = None
        answered = False
        for call in action.tool_calls:
            if call.name != SUBMIT_ANSWER:
                to_run.append(call)
                continue
            if answered:
                known[call.id] = ToolResult.failure(
                    call.id, call.name, "ignored: an answer was already submitted in this turn"
                )
                continue
            try:
                arguments = self._submit.validate_arguments(_submitted(call))
            except Exception as exc:  # the model gets the problem and may submit again
                known[call.id] = ToolResult.failure(call.id, call.name, exc)
                continue
            answer, answered = arguments.get("answer"), True
            known[call.id] = ToolResult.success(call.id, call.name, "answer submitted")
        if not action.tool_calls:
            answer, answered = self.answer_from_text(action.text), True
        return _Plan(to_run=tuple(to_run), known=known, answer=answer, answered=answered)

    def _finish(
        self,
        state: EnvState,
        action: Action,
        plan: _Plan,
        executed: Sequence[ToolResult],
        data: dict[str, Any],
    ) -> StepResult:
        results = dict(plan.known)
        for call, result in zip(plan.to_run, executed, strict=True):
            results[call.id] = result
        ordered = tuple(results[c.id] for c in action.tool_calls)
        task = self._tasks[state.task_index]
        step_count = state.step_count + 1
        terminated = plan.answered
        truncated = not terminated and step_count >= self.max_steps
        correct = self.check_answer(plan.answer, task) if terminated else None
        if terminated and plan.answer in (None, ""):
            correct = False
        context = StepContext(
            calls=action.tool_calls,
            results=ordered,
            previous_calls=state.call_keys,
            text=action.text,
            answer=plan.answer,
            correct=correct,
            reference=task.reference,
            done=terminated or truncated,
        )
        signals = compute_signals(self.rewards, context)
        next_state = dataclasses.replace(
            state,
            observation=dataclasses.replace(state.observation, tool_results=ordered),
            step_count=step_count,
            done=terminated or truncated,
            call_keys=state.call_keys + tuple(call_key(c) for c in action.tool_calls),
            answer=plan.answer if terminated else state.answer,
            data=data,
        )
        info: dict[str, Any] = {"tool_results": ordered, "step": step_count}
        if terminated:
            info["answer"] = plan.answer
            info["correct"] = correct
            info["answer_source"] = "tool" if action.tool_calls else "text"
        if truncated:
            info["truncated_reason"] = f"no answer within {self.max_steps} steps"
        return StepResult(
            state=next_state,
            signals=signals,
            terminated=terminated,
            truncated=truncated,
            info=info,
        )


def _submitted(call: ToolCall) -> Any:
    raw = call.raw_arguments
    if not call.arguments and raw is not None and raw.strip() not in ("", "null", "{}"):
        return raw
    return call.arguments
