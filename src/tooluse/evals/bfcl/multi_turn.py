"""BFCL multi-turn environments: stateful tool worlds with several user turns, BFCL-checked.

::

    env = environment_registry.get(name="bfcl:multi_turn_base")
    state, info = env.reset(options={"task_index": 0})
    state.observation.prompt                   # the first user message
    [t.name for t in state.observation.available_tools]   # 'cd', 'mkdir', 'mv', ...
    result = env.step(state, Action(tool_calls=(ToolCall(id="1", name="cd",
                                                         arguments={"folder": "document"}),)))
    result = env.step(result.state, Action(text="Done."))  # no calls: the user turn is over
    result.observation.user_message            # the next user message

Each task is one entry of a BFCL multi-turn category (``multi_turn_base``, ``_miss_func``,
``_miss_param``, ``_long_context``; 200 each) on BFCL's executable classes. A step runs its calls
in order on the world's instances (unknown functions and invalid arguments come back as error
results; an exception inside a class comes back as BFCL's ``Error during execution: ...``). An
action without calls ends the user turn: the turn is checked with BFCL's rules (see
:func:`tooluse.evals.bfcl.world.check_turn`) and the next user message is given; in the
``miss_func`` category the held-back function joins the tools at the turn where BFCL adds it,
with BFCL's message. More than ``max_steps`` steps in one turn ends the episode as failed (BFCL
force-quits such an entry). The episode succeeds when every checked turn is valid, which is
BFCL's ``multi_turn_checker`` verdict.

The state is pure data: ``state.data`` holds the turn and every call made with its result,
and the world's instances are rebuilt from it when needed (a small cache keeps the live
instances of the latest states, so stepping forward does not replay). A state therefore saves
to JSON and restores (:meth:`save_state`, :meth:`restore_state`), and many episodes run at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from tooluse.envs.rewards import (
    CorrectnessReward,
    StepContext,
    call_key,
    compute_signals,
)
from tooluse.errors import ToolArgumentError
from tooluse.evals.bfcl.data import tool_from_bfcl_function
from tooluse.evals.bfcl.rewards import BFCLResponseReward, BFCLStateReward
from tooluse.evals.bfcl.world import (
    ADDED_FUNCTIONS_MESSAGE,
    MULTI_TURN_CATEGORIES,
    MultiTurnEntry,
    TurnCheck,
    World,
    check_turn,
    function_docs,
    multi_turn_split_entries,
)
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["BFCLMultiTurnEnvironment", "default_bfcl_rewards"]

_CACHE_SIZE = 64


def default_bfcl_rewards() -> tuple[Any, ...]:
    """BFCL's verdict counts (weight 1); the per-turn state and response checks are monitors."""
    return (CorrectnessReward(), BFCLStateReward(_weight=0.0), BFCLResponseReward(_weight=0.0))


def _turn_data(
    turn: int, turn_steps: int, calls: list[list[Any]], checks: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"turn": turn, "turn_steps": turn_steps, "calls": calls, "checks": checks}


@dataclass(frozen=True, kw_only=True)
class _TurnProgress:
    """The outcome of one step for the episode: its new data and, at a turn's end, the check."""

    data: dict[str, Any]
    check: TurnCheck | None = None
    terminated: bool = False
    truncated: bool = False
    correct: bool | None = None
    user_message: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class BFCLMultiTurnEnvironment(ToolEnvironment):
    """One BFCL multi-turn category as a tool environment (``bfcl:<category>`` in the registry).

    ``max_steps`` caps the steps of one user turn (BFCL's cap is 20). ``tool_types`` is
    accepted for the registry's sake; the tools are always the entry's BFCL functions.
    ``split`` keeps the entries of that split (the four categories split together by entry
    number, see :func:`~tooluse.evals.bfcl.world.multi_turn_split`), then ``limit`` only the
    first of them.
    """

    def __init__(
        self,
        category: str = "multi_turn_base",
        *,
        tool_types: Sequence[str] = (),
        rewards: Sequence[Any] | None = None,
        max_steps: int = 20,
        limit: int | None = None,
        split: str | None = None,
    ) -> None:
        if category not in MULTI_TURN_CATEGORIES:
            raise ValueError(
                f"unknown BFCL multi-turn category {category!r}; "
                f"known: {', '.join(MULTI_TURN_CATEGORIES)}"
            )
        entries = multi_turn_split_entries(category, split)
        if limit is not None:
            entries = entries[:limit]
        self._entries: tuple[MultiTurnEntry, ...] = entries
        self.category = category
        self.name = f"bfcl:{category}"
        tasks = [
            Task(
                prompt=e.turns[0],
                reference=[list(t) for t in e.ground_truth],
                id=e.id,
                metadata={"category": category, "involved_classes": list(e.involved_classes)},
            )
            for e in entries
        ]
        super().__init__(
            tasks,
            tools=(),
            rewards=default_bfcl_rewards() if rewards is None else rewards,
            max_steps=max_steps,
        )
        self._tools = ()
        self._tool_cache: dict[tuple[int, frozenset[str]], tuple[ToolDefinition, ...]] = {}
        self._worlds: OrderedDict[str, World] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def entries(self) -> tuple[MultiTurnEntry, ...]:
        return self._entries

    # -- tools -----------------------------------------------------------------------------------

    def available_tools(
        self, task_index: int, data: Mapping[str, Any]
    ) -> tuple[ToolDefinition, ...]:
        """The entry's functions, without those held back until a later turn."""
        entry = self._entries[task_index]
        turn = int(data.get("turn", 0))
        hidden = frozenset(
            name for at, names in entry.missed_functions.items() if at > turn for name in names
        )
        key = (task_index, hidden)
        tools = self._tool_cache.get(key)
        if tools is None:
            docs = [d for d in function_docs(entry.involved_classes) if d["name"] not in hidden]
            tools = tuple(tool_from_bfcl_function(doc) for doc in docs)
            self._tool_cache[key] = tools
        return tools

    # -- episode ---------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start the entry ``options["task_index"]`` (default 0) in its initial state."""
        index = int((options or {}).get("task_index", 0))
        task = self.task(index)
        entry = self._entries[index]
        data: dict[str, Any] = {"turn": 0, "turn_steps": 0, "calls": [[]], "checks": []}
        state = EnvState(
            task_index=index,
            observation=Observation(
                prompt=task.prompt, available_tools=self.available_tools(index, data)
            ),
            data=data,
        )
        info = {
            "task_id": entry.id,
            "task_index": index,
            "seed": seed,
            "turns": len(entry.turns),
            "involved_classes": list(entry.involved_classes),
        }
        return state, info

    def step(self, state: EnvState, action: Action) -> StepResult:
        """Run the action's calls in order, or end the user turn when it has none."""
        check_action(state, action)
        entry = self._entries[state.task_index]
        calls = [list(t) for t in state.data["calls"]]
        world = self._take_world(state.task_index, calls)
        results = self._run_calls(state, entry, world, calls, action)
        progress = self._advance(entry, state.data, world, calls, bool(action.tool_calls))
        info: dict[str, Any] = {"tool_results": results, "turn": int(state.data["turn"])}
        info.update(progress.info)
        if progress.check is not None:
            info["turn_check"] = progress.check.to_dict()
        if progress.done:
            info["correct"] = progress.correct
            info["answer"] = None
        self._keep_world(state.task_index, calls, world)
        context = StepContext(
            calls=action.tool_calls,
            results=results,
            previous_calls=state.call_keys,
            text=action.text,
            correct=progress.correct,
            done=progress.done,
            info={"turn_check": progress.check} if progress.check is not None else {},
        )
        next_state = dataclasses.replace(
            state,
            observation=Observation(
                prompt=state.observation.prompt,
                available_tools=self.available_tools(state.task_index, progress.data),
                tool_results=results,
                user_message=progress.user_message,
            ),
            step_count=state.step_count + 1,
            done=progress.done,
            call_keys=state.call_keys + tuple(call_key(c) for c in action.tool_calls),
            data=progress.data,
        )
        info["step"] = next_state.step_count
        return StepResult(
            state=next_state,
            signals=compute_signals(self.rewards, context),
            terminated=progress.terminated,
            truncated=progress.truncated,
            info=info,
        )

    def _run_calls(
        self,
        state: EnvState,
        entry: MultiTurnEntry,
        world: World,
        calls: list[list[Any]],
        action: Action,
    ) -> tuple[ToolResult, ...]:
        """Run the action's calls on the world, in order, recording them in the turn's calls."""
        turn = int(state.data["turn"])
        tools = {t.name: t for t in state.observation.available_tools}
        # A function held back for a later turn still exists in the world, and BFCL runs a call
        # to it (its own ground truth has one); it runs here too, flagged in the result.
        held = {
            t.name: t
            for t in self.available_tools(state.task_index, {"turn": len(entry.turns)})
            if t.name not in tools
        }
        return tuple(
            self._run_call(world, tools, held, call, calls[turn]) for call in action.tool_calls
        )

    def _advance(
        self,
        entry: MultiTurnEntry,
        data: Mapping[str, Any],
        world: World,
        calls: list[list[Any]],
        acted: bool,
    ) -> _TurnProgress:
        """Where the episode goes after a step: the same turn (the model acted), the next user
        turn or the end (it did not), or truncation (the turn used its steps)."""
        turn, turn_steps = int(data["turn"]), int(data["turn_steps"])
        checks = list(data["checks"])
        if acted:
            turn_steps += 1
            if turn_steps < self.max_steps:
                return _TurnProgress(data=_turn_data(turn, turn_steps, calls, checks))
            return _TurnProgress(
                data=_turn_data(turn, turn_steps, calls, checks),
                check=self._check(entry, turn, world, calls),
                truncated=True,
                correct=False,
                info={
                    "truncated_reason": f"turn {turn} used {turn_steps} steps without ending "
                    f"(cap: {self.max_steps})"
                },
            )
        check = self._check(entry, turn, world, calls)
        checks.append(check.to_dict())
        if turn + 1 >= len(entry.turns):
            return _TurnProgress(
                data=_turn_data(turn + 1, 0, calls, checks),
                check=check,
                terminated=True,
                correct=all(c["valid"] for c in checks),
            )
        calls.append([])
        user_message = entry.turns[turn + 1] or ADDED_FUNCTIONS_MESSAGE
        return _TurnProgress(
            data=_turn_data(turn + 1, 0, calls, checks),
            check=check,
            user_message=user_message,
            info={"user_message": user_message},
        )

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        """Async :meth:`step` (the calls are quick and run in order, so it is the same)."""
        return self.step(state, action)

    # -- internals -------------------------------------------------------------------------------

    @staticmethod
    def _run_call(
        world: World,
        tools: Mapping[str, ToolDefinition],
        held: Mapping[str, ToolDefinition],
        call: ToolCall,
        log: list[dict[str, Any]],
    ) -> ToolResult:
        tool = tools.get(call.name) or held.get(call.name)
        if tool is None:
            log.append({"name": call.name, "executed": False})
            return ToolResult.failure(
                call.id,
                call.name,
                f"unknown function {call.name!r}; available: {', '.join(sorted(tools))}",
            )
        raw = call.raw_arguments
        given: Any = (
            raw
            if not call.arguments and raw and raw.strip() not in ("{}", "null")
            else call.arguments
        )
        mismatch = ""
        try:
            arguments = tool.validate_arguments(given)
        except ToolArgumentError as exc:
            if not _runs_like_bfcl(tool, given):
                log.append({"name": call.name, "executed": False})
                return ToolResult.failure(call.id, call.name, exc)
            # Right names, wrong types: BFCL runs such a call and lets the class decide (its
            # own ground truth sometimes disagrees with its docs), so the world does too.
            arguments, mismatch = dict(given), exc.model_message
        output, failed = world.call(call.name, arguments)
        log.append(
            {
                "name": call.name,
                "arguments": json.loads(json.dumps(arguments, default=str)),
                "executed": True,
                "result": output,
                "is_error": failed,
            }
        )
        metadata: dict[str, Any] = {"schema_mismatch": mismatch} if mismatch else {}
        if call.name in held:
            metadata["held_back"] = True
        shown = output
        if mismatch and failed:  # the class's complaint alone rarely says what was wrong
            shown = f"{output}\n{mismatch}"
        return ToolResult(
            call_id=call.id, tool_name=call.name, output=shown, is_error=failed, metadata=metadata
        )

    def _check(
        self, entry: MultiTurnEntry, turn: int, world: World, calls: list[list[dict[str, Any]]]
    ) -> TurnCheck:
        results = [c["result"] for t in calls for c in t if c.get("executed")]
        return check_turn(entry, turn, world, results, calls_this_turn=len(calls[turn]))

    @staticmethod
    def _world_key(task_index: int, calls: Sequence[Sequence[Mapping[str, Any]]]) -> str:
        executed = [[c["name"], c["arguments"]] for t in calls for c in t if c.get("executed")]
        text = json.dumps([task_index, executed], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _take_world(self, task_index: int, calls: Sequence[Sequence[Mapping[str, Any]]]) -> World:
        """The live world of a state: taken from the cache (so no one else mutates it), or
        rebuilt by replaying the state's executed calls on fresh instances."""
        key = self._world_key(task_index, calls)
        with self._lock:
            world = self._worlds.pop(key, None)
        if world is not None:
            return world
        world = World(self._entries[task_index])
        for turn in calls:
            for call in turn:
                if call.get("executed"):
                    world.call(call["name"], call["arguments"])
        return world

    def _keep_world(
        self, task_index: int, calls: Sequence[Sequence[Mapping[str, Any]]], world: World
    ) -> None:
        key = self._world_key(task_index, calls)
        with self._lock:
            self._worlds[key] = world
            while len(self._worlds) > _CACHE_SIZE:
                self._worlds.popitem(last=False)


def _runs_like_bfcl(tool: ToolDefinition, given: Any) -> bool:
    """Whether BFCL would call the method: an argument object with no unknown names and every
    required one present (only the value types disagree with the schema)."""
    if not isinstance(given, Mapping):
        return False
    schema = tool.parameters_schema
    known = schema.get("properties", {})
    return all(k in known for k in given) and all(k in given for k in schema.get("required", ()))
