"""``adapter="verifiers"``: a verifiers ``ToolEnv`` or ``SingleTurnEnv`` as a tooluse environment.

::

    import verifiers as vf
    vf_env = vf.ToolEnv(dataset=dataset, tools=[add, multiply], rubric=vf.Rubric(funcs=[exact]))
    env = environment_registry.get(name="arith", adapter="verifiers", environment=vf_env)
    # or an installed verifiers environment package, loaded by vf.load_environment
    env = environment_registry.get(name="my-env", adapter="verifiers", env_args={"n": 10})
    runner = TrajectoryRunner(environment=env, backend=backend, system_prompt=env.system_prompt)

A verifiers environment is a data set (rows with a chat ``prompt`` and an ``answer``), tools
(Python functions, for a ``ToolEnv``) and a rubric (reward functions of the whole rollout).
verifiers normally drives the model itself; here tooluse does, one step per assistant turn:

* **Tasks.** One per row of the environment's evaluation data set (``split="eval"``; its
  training set with ``split="train"``, and the other one when only one exists); ``limit`` keeps
  the first rows. The task's prompt is the text of the row's user message (a few-shot prompt
  is written out as ``role: text`` blocks); the row's system message is
  :attr:`VerifiersEnvironment.system_prompt`, for the runner's ``system_prompt``. The
  reference is the row's ``answer``.
* **Tools.** The environment's tools with verifiers' own schemas, run through the
  environment's ``call_tool`` (so a subclass's override applies); the arguments are validated
  against the schema first. Plus the terminal ``submit_answer``.
* **Answer.** A reply without tool calls is the final assistant message, as in verifiers; a
  ``submit_answer(answer)`` call becomes a final assistant message with that text.
* **Reward.** When the episode ends (answer, or ``max_steps``, by default the environment's
  ``max_turns``), the environment's rubric scores the conversation after the prompt, exactly as
  verifiers scores a rollout (``rubric.score_rollout``: the weighted sum of its reward
  functions; its metrics, such as ``total_tool_calls``, are in the signal's info). The episode
  is correct when it ended with an answer and the rubric's reward is at least
  ``success_reward``.

==================  =======  ==================================================================
reward              type     value
==================  =======  ==================================================================
VerifiersReward     outcome  the rubric's reward for the whole conversation (verifiers'
                             ``state["reward"]``), on the step that ends the episode
==================  =======  ==================================================================

The validity and efficiency monitors (weight 0) are added as in every environment.

**State.** ``state.data["messages"]`` holds the conversation after the prompt (verifiers'
message format): JSON, so a state saves, restores and branches; the tools keep no state
between calls (an environment whose tools need per-rollout state, ``StatefulToolEnv``, or
that answers in text, other ``MultiTurnEnv`` kinds, is refused with ``ValueError``).

**Signals.** Building a verifiers environment replaces the process's SIGINT and SIGTERM
handlers with verifiers' own (its teardown, then Python's default for Ctrl-C and ``exit(143)``
for SIGTERM), which would take Ctrl-C and SIGTERM away from tooluse's runs (an evaluation's
orderly stop, Ctrl-C between Ray calls). ``build`` loads an environment with the process's
handlers kept; for an environment you construct yourself, construct it inside
:func:`process_signals_kept`.

Supported: verifiers 0.1.x (the ``vf.ToolEnv`` / ``vf.SingleTurnEnv`` / ``vf.Rubric`` API;
tested with 0.1.14). This is the only module that imports ``verifiers``
(``pip install 'tooluse[verifiers]'`` and ``pip install --no-deps verifiers==0.1.14``).
"""

from __future__ import annotations

import dataclasses
import json
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from tooluse.envs.base import (
    SUBMIT_ANSWER,
    Action,
    EnvState,
    StepResult,
    Task,
    ToolEnvironment,
    _Plan,
)
from tooluse.envs.rewards import (
    RewardSignal,
    RewardType,
    StepContext,
    WeightedReward,
    compute_signals,
)
from tooluse.errors import MissingDependencyError
from tooluse.messages import ToolCall
from tooluse.sync_bridge import run_coroutine_blocking
from tooluse.tools.definition import ToolDefinition

__all__ = ["VerifiersEnvironment", "VerifiersReward", "build", "process_signals_kept"]

VERIFIERS = "verifiers==0.1.14"


@dataclass(frozen=True)
class _Library:
    """The parts of verifiers this module uses."""

    vf: Any
    normalize_messages: Any


def _verifiers() -> _Library:
    """verifiers (``MissingDependencyError`` naming the extra without it)."""
    try:
        import verifiers
        from verifiers.utils.message_utils import normalize_messages
    except ImportError as exc:  # the extra is missing: say which one, and the no-deps step
        raise MissingDependencyError.installed_without_deps(
            "verifiers", "verifiers", VERIFIERS
        ) from exc
    if not hasattr(verifiers, "ToolEnv"):
        raise ImportError(
            f"verifiers {getattr(verifiers, '__version__', '?')} has no ToolEnv (its API changed "
            f"in 0.2); the verifiers adapter needs verifiers 0.1.x: pip install --no-deps "
            f"'{VERIFIERS}'"
        )
    return _Library(vf=verifiers, normalize_messages=normalize_messages)


@contextmanager
def process_signals_kept() -> Iterator[None]:
    """The process's SIGINT and SIGTERM handlers as they were before the block, whatever it
    installed (verifiers' ``Environment`` installs its own when it is constructed)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can set handlers, so nothing in the block changed them
        return
    kept = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in kept.items():
            if handler is not None:  # None: set from outside Python, cannot be put back
                signal.signal(number, handler)


@dataclass(frozen=True, kw_only=True)
class VerifiersReward(WeightedReward):
    """The verifiers rubric's reward for the whole conversation, when the episode ends."""

    name: str = "verifiers_rubric"
    reward_type: ClassVar[RewardType] = RewardType.OUTCOME

    def compute(self, context: StepContext) -> RewardSignal | None:
        score = context.info.get("verifiers_score")
        if score is None:
            return None
        return self.signal(float(score["reward"]), {"metrics": dict(score["metrics"])})


def _arguments_json(call: ToolCall) -> str:
    if not call.arguments and call.raw_arguments:
        return call.raw_arguments
    return json.dumps(call.arguments, default=str)


def _text(content: Any) -> str:
    """A verifiers message content (text, or a list of content parts) as text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
            parts.append(text if isinstance(text, str) else str(part))
        return "\n".join(parts)
    return str(content)


def _role_content(message: Any) -> tuple[str, str]:
    if isinstance(message, Mapping):
        return str(message.get("role", "")), _text(message.get("content"))
    return str(getattr(message, "role", "")), _text(getattr(message, "content", None))


def _prompt_parts(prompt: Any) -> tuple[str, str]:
    """(system text, the rest as text) of a data set row's prompt."""
    if isinstance(prompt, str):
        return "", prompt
    messages = [_role_content(m) for m in prompt or []]
    system = "\n\n".join(text for role, text in messages if role == "system")
    rest = [(role, text) for role, text in messages if role != "system"]
    if len(rest) == 1:
        return system, rest[0][1]
    return system, "\n\n".join(f"{role}: {text}" for role, text in rest)


class VerifiersEnvironment(ToolEnvironment):
    """A verifiers ``ToolEnv`` / ``SingleTurnEnv`` as a tool environment (see the module)."""

    def __init__(
        self,
        vf_env: Any,
        *,
        env_name: str = "environment",
        split: str = "eval",
        limit: int | None = None,
        rewards: Sequence[Any] | None = None,
        max_steps: int | None = None,
        success_reward: float = 1.0,
        tool_timeout: float | None = 60.0,
    ) -> None:
        self._library = _verifiers()
        vf = self._library.vf
        if isinstance(vf_env, vf.StatefulToolEnv) or not isinstance(
            vf_env, (vf.ToolEnv, vf.SingleTurnEnv)
        ):
            raise ValueError(
                f"the verifiers adapter wraps ToolEnv and SingleTurnEnv environments, not "
                f"{type(vf_env).__name__} (a StatefulToolEnv's tools need per-rollout state, and "
                "other MultiTurnEnv kinds answer in text)"
            )
        if split not in ("eval", "train"):
            raise ValueError(f"split must be 'eval' or 'train', not {split!r}")
        self.vf_env = vf_env
        self.env_name = env_name
        self.name = f"verifiers:{env_name}"
        self.success_reward = success_reward
        self.rows = self._rows(split, limit)
        tasks = []
        systems = []
        for number, row in enumerate(self.rows):
            system, text = _prompt_parts(row.get("prompt", row.get("question", "")))
            systems.append(system)
            tasks.append(
                Task(
                    id=str(row.get("example_id", number)),
                    prompt=text,
                    reference=row.get("answer", ""),
                    metadata={"system_prompt": system, "info": row.get("info") or {}},
                )
            )
        #: The environment's system prompt (the first row's), for the runner's ``system_prompt``.
        self.system_prompt: str = systems[0] if systems else ""
        tools = [self._tool(t) for t in getattr(vf_env, "tool_defs", None) or []]
        turns = int(getattr(vf_env, "max_turns", -1) or -1)
        super().__init__(
            tasks,
            tools=tools,
            rewards=(VerifiersReward(),) if rewards is None else rewards,
            max_steps=max_steps if max_steps is not None else (turns if turns > 0 else 10),
            tool_timeout=tool_timeout,
        )

    def _rows(self, split: str, limit: int | None) -> list[dict[str, Any]]:
        env = self.vf_env
        order = ("eval", "train") if split == "eval" else ("train", "eval")
        for which in order:
            dataset = env.build_eval_dataset() if which == "eval" else env.build_dataset()
            if dataset is not None and len(dataset):
                count = len(dataset) if limit is None else min(limit, len(dataset))
                return [dict(dataset[i]) for i in range(count)]
        raise ValueError(f"the verifiers environment {self.env_name!r} has no data set rows")

    def _tool(self, spec: Any) -> ToolDefinition:
        name = str(spec.name)

        async def call(**arguments: Any) -> str:
            message = await self.vf_env.call_tool(name, arguments, tool_call_id=name)
            return _text(getattr(message, "content", message))

        return ToolDefinition.from_schema(
            name, dict(spec.parameters), description=str(spec.description or ""), function=call
        )

    # -- grading: the rubric (the base class's text comparison is not used) ---------------------

    def check_answer(self, answer: Any, task: Task) -> bool:
        return False  # replaced by the rubric's verdict in _graded

    # -- episode ---------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start row ``options["task_index"]`` (default 0) with an empty conversation."""
        state, info = super().reset(seed=seed, options=options)
        return dataclasses.replace(state, data={"messages": []}), info

    def step(self, state: EnvState, action: Action) -> StepResult:
        """Run the action's calls and, when the episode ends, score it with the rubric."""
        plan = self._plan(state, action)
        executed, data = self._execute(state, plan.to_run)
        result = self._finish(state, action, plan, executed, data)
        return run_coroutine_blocking(self._graded(state, action, plan, result))

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        plan = self._plan(state, action)
        executed, data = await self._aexecute(state, plan.to_run)
        result = self._finish(state, action, plan, executed, data)
        return await self._graded(state, action, plan, result)

    async def _graded(
        self, state: EnvState, action: Action, plan: _Plan, result: StepResult
    ) -> StepResult:
        """The step's result with the turn added to the conversation and, at the end, the
        rubric's score in the signals and the verdict."""
        messages = [*state.data.get("messages", []), *self._turn(action, plan, result)]
        new_state = dataclasses.replace(result.state, data={"messages": messages})
        info = dict(result.info)
        score: dict[str, Any] | None = None
        correct: bool | None = None
        if result.done:
            score = await self.score(state.task_index, messages)
            correct = result.terminated and score["reward"] >= self.success_reward
            info["verifiers_reward"] = score["reward"]
            info["verifiers_metrics"] = score["metrics"]
            if result.terminated:
                info["correct"] = correct
        task = self.task(state.task_index)
        context = StepContext(
            calls=action.tool_calls,
            results=result.tool_results,
            previous_calls=state.call_keys,
            text=action.text,
            answer=plan.answer if result.terminated else None,
            correct=correct,
            reference=task.reference,
            done=result.done,
            info={"verifiers_score": score} if score is not None else {},
        )
        return dataclasses.replace(
            result, state=new_state, signals=compute_signals(self.rewards, context), info=info
        )

    @staticmethod
    def _turn(action: Action, plan: _Plan, result: StepResult) -> list[dict[str, Any]]:
        """One assistant turn in verifiers' message format (JSON-ready). ``submit_answer`` is
        tooluse's way to end an episode, so its call is left out and its answer becomes the
        final assistant message, as a reply without calls is in verifiers."""
        calls = [c for c in action.tool_calls if c.name != SUBMIT_ANSWER]
        out: list[dict[str, Any]] = []
        if calls:
            out.append(
                {
                    "role": "assistant",
                    "content": action.text,
                    "tool_calls": [
                        {"id": c.id, "name": c.name, "arguments": _arguments_json(c)} for c in calls
                    ],
                }
            )
            ids = {c.id for c in calls}
            out += [
                {"role": "tool", "tool_call_id": r.call_id, "content": r.output}
                for r in result.tool_results
                if r.call_id in ids
            ]
        if plan.answered:
            answer = action.text if not action.tool_calls else plan.answer
            out.append({"role": "assistant", "content": "" if answer is None else str(answer)})
        elif not calls:
            out.append({"role": "assistant", "content": action.text})
        return out

    async def score(self, task_index: int, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The rubric's score of a conversation (after the prompt) on row ``task_index``:
        ``{"reward": float, "metrics": {name: float}}``."""
        row = self.rows[task_index]
        completion = self._library.normalize_messages(list(messages), field_name="completion")
        rollout = self._library.vf.State(input=dict(row))
        rollout["prompt"] = row.get("prompt")
        rollout["completion"] = completion
        # One entry per model turn: what verifiers' num_turns metric counts.
        rollout["trajectory"] = [
            {"prompt": [], "completion": [m]} for m in completion if m.role == "assistant"
        ]
        await self.vf_env.rubric.score_rollout(rollout)
        metrics = {str(k): float(v) for k, v in (rollout.get("metrics") or {}).items()}
        return {"reward": float(rollout.get("reward") or 0.0), "metrics": metrics}


def build(name: str, *, tool_types: tuple[str, ...] = (), **options: Any) -> ToolEnvironment:
    """The adapter: ``environment_registry.get(name=..., adapter="verifiers", ...)``.

    ``environment=`` wraps a verifiers environment object (``name`` labels it); without it,
    ``vf.load_environment(name, **env_args)`` loads an installed verifiers environment package.
    Other options: ``split``, ``limit``, ``rewards``, ``max_steps``, ``success_reward``,
    ``tool_timeout``. ``tool_types`` is accepted for the registry's sake: the tools are the
    environment's.
    """
    vf_env = options.pop("environment", None)
    env_args = dict(options.pop("env_args", None) or {})
    if vf_env is None:
        vf = _verifiers().vf
        try:
            with process_signals_kept():
                vf_env = vf.load_environment(name, **env_args)
        except Exception as exc:
            raise ValueError(
                f"verifiers could not load the environment {name!r} "
                f"({type(exc).__name__}: {exc}); install its package, or pass environment=... "
                "(tooluse does not download data sets: give the environment local data)"
            ) from exc
    elif env_args:
        raise ValueError("env_args is for vf.load_environment; it is not used with environment=")
    return VerifiersEnvironment(vf_env, env_name=name, **options)
