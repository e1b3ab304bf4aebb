"""BFCL v4's agentic categories: the answer check and the environment they share.

Memory (``memory_kv``, ``memory_rec_sum``, ``memory_vector``) and web search
(``web_search_base``, ``web_search_no_snippet``) entries are one user question that the model
answers after as many tool steps as it needs; only the final text reply is scored. The check is
BFCL's ``agentic_checker``: one of the accepted answers must appear in the reply as whole words,
after both are normalised (lower case, ``'`` read as ``"``, the characters ``,./-_*^()`` dropped).
The system prompt asks for ``{'answer': ..., 'context': ...}``; the check reads the whole reply.

:class:`AgenticEnvironment` plays such entries on a *world* (the backend the functions run on:
BFCL's memory classes, the search adapter). An action with calls is one step; an action without
calls ends the user turn, and after the last turn the episode ends and is scored. Entries with
several user turns and no answers (the memory categories' prerequisite conversations) end
unscored. More than ``max_steps`` steps in one turn ends the episode as failed, as BFCL
force-quits such an entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tooluse.envs.base import Action, EnvState, Observation, StepResult, Task, ToolEnvironment
from tooluse.envs.base import check_action as check_episode_action
from tooluse.envs.rewards import CorrectnessReward, StepContext, call_key, compute_signals
from tooluse.errors import MissingDependencyError, ToolArgumentError
from tooluse.evals.bfcl.checker import CheckResult
from tooluse.evals.bfcl.data import bfcl_data_dir, tool_from_bfcl_function
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "AGENTIC_CATEGORIES",
    "AgenticEntry",
    "AgenticEnvironment",
    "AgenticWorld",
    "agentic_format_prompt",
    "bfcl_prompts",
    "check_agentic_answer",
    "load_bfcl_rows",
    "standardize_answer",
]

AGENTIC_CATEGORIES = (
    "memory_kv",
    "memory_rec_sum",
    "memory_vector",
    "web_search_base",
    "web_search_no_snippet",
)

#: The bfcl-eval release whose data, classes and prompts these categories follow.
BFCL_PIN = "bfcl-eval==2026.3.23"
_DROPPED = re.compile(r"[,./\-_*^()]")
_CACHE_SIZE = 32


def standardize_answer(text: str) -> str:
    """BFCL's agentic normalisation: drop ``,./-_*^()``, lower case, ``'`` → ``"``."""
    return _DROPPED.sub("", text).lower().replace("'", '"')


def check_agentic_answer(reply: Any, possible_answers: Sequence[str]) -> CheckResult:
    """Whether one of ``possible_answers`` appears in ``reply`` as whole words (normalised).

    A list reply is read as its first item, anything else as its ``str``, as BFCL does.
    """
    if isinstance(reply, list):
        reply = reply[0] if reply else ""
    text = standardize_answer(reply if isinstance(reply, str) else str(reply))
    for answer in possible_answers:
        if re.search(rf"\b{re.escape(standardize_answer(answer))}\b", text):
            return CheckResult.ok()
    return CheckResult.fail(
        "agentic:answer_not_found",
        f"none of the expected answers {list(possible_answers)!r} is in the reply",
    )


def load_bfcl_rows(relative_path: str) -> list[dict[str, Any]]:
    """The JSON Lines rows of one file of the installed ``bfcl-eval`` package's data folder."""
    path = bfcl_data_dir() / relative_path
    if not path.is_file():
        raise FileNotFoundError(f"BFCL data file {path} is missing")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name} line {number}: not JSON ({exc.msg})") from None
    return rows


def agentic_format_prompt() -> str:
    """BFCL's system prompt asking for the ``{'answer': ..., 'context': ...}`` reply format
    (read from the installed ``bfcl-eval`` package)."""
    return str(bfcl_prompts().ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT)


def bfcl_prompts() -> Any:
    """BFCL's prompt constants (``bfcl_eval.constants.default_prompts``)."""
    try:
        from bfcl_eval.constants import default_prompts
    except ImportError as exc:
        raise MissingDependencyError.installed_without_deps("bfcl-eval", "eval", BFCL_PIN) from exc
    return default_prompts


@dataclass(frozen=True, kw_only=True)
class AgenticEntry:
    """One agentic entry: its user turns, the accepted answers, the functions it may call.

    ``possible_answers`` is empty for an entry that is not scored (a prerequisite conversation).
    """

    id: str
    category: str
    turns: tuple[str, ...]
    possible_answers: tuple[str, ...]
    functions: tuple[dict[str, Any], ...]
    scenario: str = ""

    @property
    def scored(self) -> bool:
        return bool(self.possible_answers)


class AgenticWorld(Protocol):
    """What the functions of an entry run on: ``call`` gives the rendered result and whether it
    failed. A ``stateful`` world is rebuilt by replaying the calls made so far."""

    stateful: bool

    def call(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, bool]: ...


class AgenticEnvironment(ToolEnvironment):
    """Agentic entries as a tool environment; subclasses build the world and the system prompt.

    ``max_steps`` caps the steps of one user turn (BFCL's cap is 20).
    """

    def __init__(
        self,
        entries: Sequence[AgenticEntry],
        *,
        name: str,
        rewards: Sequence[Any] | None = None,
        max_steps: int = 20,
    ) -> None:
        if not entries:
            raise ValueError(f"{name} has no entries")
        self._entries = tuple(entries)
        self.name = name
        tasks = [
            Task(
                prompt=e.turns[0],
                reference=list(e.possible_answers),
                id=e.id,
                metadata={"category": e.category, "scenario": e.scenario, "scored": e.scored},
            )
            for e in self._entries
        ]
        super().__init__(
            tasks,
            tools=(),
            rewards=(CorrectnessReward(),) if rewards is None else rewards,
            max_steps=max_steps,
        )
        self._tools = ()
        self._tool_cache: dict[str, tuple[ToolDefinition, ...]] = {}
        self._worlds: OrderedDict[str, AgenticWorld] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def entries(self) -> tuple[AgenticEntry, ...]:
        return self._entries

    # -- what subclasses provide ---------------------------------------------------------------

    def new_world(self, entry: AgenticEntry) -> AgenticWorld:
        """A fresh world for ``entry`` (its state as the entry starts)."""
        raise NotImplementedError

    def system_prompt(self, entry: AgenticEntry, world: AgenticWorld) -> str:
        """The system prompt of ``entry``, given its fresh world."""
        return agentic_format_prompt() if entry.scored else ""

    def episode_ended(self, entry: AgenticEntry, world: AgenticWorld) -> None:
        """Called once when an episode ends (a memory conversation saves its memory here)."""

    # -- tools ---------------------------------------------------------------------------------

    def available_tools(
        self, task_index: int, data: Mapping[str, Any]
    ) -> tuple[ToolDefinition, ...]:
        """The entry's functions as tools."""
        entry = self._entries[task_index]
        tools = self._tool_cache.get(entry.category)
        if tools is None:
            tools = tuple(tool_from_bfcl_function(doc) for doc in entry.functions)
            self._tool_cache[entry.category] = tools
        return tools

    # -- episode -------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start the entry ``options["task_index"]`` (default 0) on a fresh world."""
        index = int((options or {}).get("task_index", 0))
        task = self.task(index)
        entry = self._entries[index]
        world = self.new_world(entry)
        data: dict[str, Any] = {"turn": 0, "turn_steps": 0, "calls": []}
        self._keep_world(index, data["calls"], world)
        state = EnvState(
            task_index=index,
            observation=Observation(
                prompt=task.prompt,
                available_tools=self.available_tools(index, data),
                system_prompt=self.system_prompt(entry, world),
            ),
            data=data,
        )
        return state, {"task_id": entry.id, "task_index": index, "seed": seed}

    def step(self, state: EnvState, action: Action) -> StepResult:
        """Run the action's calls in order, or end the user turn when it has none."""
        check_episode_action(state, action)
        entry = self._entries[state.task_index]
        calls = [dict(c) for c in state.data["calls"]]
        world = self._take_world(state.task_index, calls)
        tools = {t.name: t for t in state.observation.available_tools}
        results = tuple(_run_call(world, tools, call, calls) for call in action.tool_calls)
        data, outcome = self._advance(entry, state.data, calls, action)
        if outcome.done:
            self.episode_ended(entry, world)
        else:
            self._keep_world(state.task_index, calls, world)
        context = StepContext(
            calls=action.tool_calls,
            results=results,
            previous_calls=state.call_keys,
            text=action.text,
            answer=outcome.answer,
            correct=outcome.correct,
            reference=list(entry.possible_answers),
            done=outcome.done,
        )
        next_state = dataclasses.replace(
            state,
            observation=dataclasses.replace(
                state.observation, tool_results=results, user_message=outcome.user_message
            ),
            step_count=state.step_count + 1,
            done=outcome.done,
            call_keys=state.call_keys + tuple(call_key(c) for c in action.tool_calls),
            answer=outcome.answer if outcome.done else state.answer,
            data=data,
        )
        info: dict[str, Any] = {"tool_results": results, "step": next_state.step_count}
        info.update(outcome.info)
        return StepResult(
            state=next_state,
            signals=compute_signals(self.rewards, context),
            terminated=outcome.terminated,
            truncated=outcome.truncated,
            info=info,
        )

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        """Async :meth:`step` (calls run in order, so it is the same)."""
        return self.step(state, action)

    def _advance(
        self,
        entry: AgenticEntry,
        data: Mapping[str, Any],
        calls: list[dict[str, Any]],
        action: Action,
    ) -> tuple[dict[str, Any], _Outcome]:
        """The episode after one step: the same turn, the next turn, the end, or truncation."""
        turn, turn_steps = int(data["turn"]), int(data["turn_steps"])
        if action.tool_calls:
            turn_steps += 1
            new_data = {"turn": turn, "turn_steps": turn_steps, "calls": calls}
            if turn_steps < self.max_steps:
                return new_data, _Outcome()
            reason = f"turn {turn} used {turn_steps} steps without a reply (cap: {self.max_steps})"
            verdict = False if entry.scored else None  # a prerequisite stays unscored
            return new_data, _Outcome(
                truncated=True,
                correct=verdict,
                info={"truncated_reason": reason, "correct": verdict},
            )
        new_data = {"turn": turn + 1, "turn_steps": 0, "calls": calls}
        if turn + 1 < len(entry.turns):
            message = entry.turns[turn + 1]
            return new_data, _Outcome(user_message=message, info={"user_message": message})
        if not entry.scored:
            return new_data, _Outcome(terminated=True, info={"correct": None, "scored": False})
        check = check_agentic_answer(action.text, entry.possible_answers)
        return new_data, _Outcome(
            terminated=True,
            correct=check.valid,
            answer=action.text,
            info={
                "correct": check.valid,
                "answer": action.text,
                "error_type": check.error_type,
                "errors": list(check.errors),
            },
        )

    # -- worlds --------------------------------------------------------------------------------

    def forget_worlds(self) -> None:
        """Drop the live worlds kept for stepping on (the next step rebuilds its world)."""
        with self._lock:
            self._worlds.clear()

    @staticmethod
    def _world_key(task_index: int, calls: Sequence[Mapping[str, Any]]) -> str:
        executed = [[c["name"], c["arguments"]] for c in calls if c.get("executed")]
        text = json.dumps([task_index, executed], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _take_world(self, task_index: int, calls: Sequence[Mapping[str, Any]]) -> AgenticWorld:
        """The live world of a state, or a fresh one with the state's calls replayed (a
        stateless world, such as web search, needs no replay)."""
        key = self._world_key(task_index, calls)
        with self._lock:
            world = self._worlds.pop(key, None)
        if world is not None:
            return world
        world = self.new_world(self._entries[task_index])
        if world.stateful:
            for call in calls:
                if call.get("executed"):
                    world.call(call["name"], call["arguments"])
        return world

    def _keep_world(
        self, task_index: int, calls: Sequence[Mapping[str, Any]], world: AgenticWorld
    ) -> None:
        key = self._world_key(task_index, calls)
        with self._lock:
            self._worlds[key] = world
            while len(self._worlds) > _CACHE_SIZE:
                self._worlds.popitem(last=False)


@dataclass(frozen=True, kw_only=True)
class _Outcome:
    """Where one step left the episode."""

    terminated: bool = False
    truncated: bool = False
    correct: bool | None = None
    answer: Any = None
    user_message: str = ""
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


def _run_call(
    world: AgenticWorld,
    tools: Mapping[str, ToolDefinition],
    call: ToolCall,
    log: list[dict[str, Any]],
) -> ToolResult:
    """Run one call on the world and record it in ``log``; an unknown function or arguments
    that do not fit come back to the model as an error result."""
    tool = tools.get(call.name)
    if tool is None:
        log.append({"name": call.name, "executed": False})
        return ToolResult.failure(
            call.id, call.name, f"unknown function {call.name!r}; available: {', '.join(tools)}"
        )
    given: Any = call.arguments
    if not given and call.raw_arguments and call.raw_arguments.strip() not in ("{}", "null"):
        given = call.raw_arguments
    try:
        arguments = tool.validate_arguments(given)
    except ToolArgumentError as exc:
        if not _names_fit(tool, given):
            log.append({"name": call.name, "executed": False})
            return ToolResult.failure(call.id, call.name, exc)
        # Right names, wrong value types: BFCL calls the method anyway and the class decides.
        arguments = dict(given)
    arguments = json.loads(json.dumps(arguments, default=str))
    output, failed = world.call(call.name, arguments)
    log.append({"name": call.name, "arguments": arguments, "executed": True, "is_error": failed})
    return ToolResult(call_id=call.id, tool_name=call.name, output=output, is_error=failed)


def _names_fit(tool: ToolDefinition, given: Any) -> bool:
    """An argument object with no unknown names and every required one present."""
    if not isinstance(given, Mapping):
        return False
    schema = tool.parameters_schema
    known = schema.get("properties", {})
    return all(k in known for k in given) and all(k in given for k in schema.get("required", ()))
