"""BFCL's single-turn categories as tool environments (``bfcl:simple_python``, ``bfcl:multiple``,
``bfcl:live_irrelevance`` ...), graded by BFCL's own AST checker.

::

    env = environment_registry.get(name="bfcl:parallel", split="train", sample=40, seed=0)
    env.gold_script(0)      # [[ToolCall(...), ToolCall(...)]]: the entry's accepted answer

Task ``i`` is one entry: its request is the prompt, its system message (when it has one) the
observation's system prompt, its functions the tools (as ``tooluse eval bfcl`` offers them:
dotted names with underscores). The episode is one model turn: its calls (none, for a text
reply) are the answer, checked with :func:`~tooluse.evals.bfcl.checker.check_entry` as the
scorer checks them; each call gets a result saying it was recorded (the functions do not run).
The outcome reward is :class:`~tooluse.envs.rewards.CorrectnessReward`, 1 when the checker
accepts.

:meth:`BFCLSingleTurnEnvironment.gold_script` is the ground truth as a turn: for each expected
call, every parameter's first accepted value (a parameter whose accepted values include only
``""`` is left out, as BFCL allows); for the irrelevance categories the text reply
:data:`NO_TOOL_REPLY`. ``live_relevance`` has no answer file (any call is right there), so it has
no gold turn. Entries whose first turn holds more than system messages and one request, and
entries whose docs or request exceed ``max_doc_chars`` / ``max_request_chars`` (training keeps
to short sequences) are left out.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.envs.base import EnvState, Observation, Task, ToolEnvironment, _Plan, check_action
from tooluse.envs.rewards import CorrectnessReward
from tooluse.evals.bfcl.checker import check_entry, checker_kind
from tooluse.evals.bfcl.data import (
    BFCL_CATEGORIES,
    BFCLEntry,
    load_bfcl_category,
    select_entries,
    tools_for_entry,
)
from tooluse.evals.bfcl.format_sensitivity import scoring_category
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "NO_TOOL_REPLY",
    "SINGLE_TURN_ENVIRONMENTS",
    "BFCLSingleTurnEnvironment",
    "gold_arguments",
]

#: The registered names: one environment per single-turn category.
SINGLE_TURN_ENVIRONMENTS = tuple(f"bfcl:{category}" for category in BFCL_CATEGORIES)
#: The reply to a request that none of the offered tools serves.
NO_TOOL_REPLY = "None of the available functions can do this, so I will not call one."
#: What a call's result says: single-turn functions are graded, not run.
RECORDED = "recorded (BFCL's single-turn functions are checked, not run)"
_OMIT = object()


def _first(options: Any) -> Any:
    """The first accepted value of a parameter's options (``_OMIT`` when only ``""`` is)."""
    if not isinstance(options, list):
        return _pick(options)
    for option in options:
        if option != "":
            return _pick(option)
    return _OMIT


def _pick(value: Any) -> Any:
    """A value with every nested option list (a dict's values) narrowed to its first choice."""
    if isinstance(value, Mapping):
        picked = {key: _first(options) for key, options in value.items()}
        return {key: item for key, item in picked.items() if item is not _OMIT}
    if isinstance(value, list):
        return [_pick(item) for item in value]
    return value


def gold_arguments(accepted: Mapping[str, Any]) -> dict[str, Any]:
    """One call's arguments from BFCL's accepted values ``{param: [options]}``."""
    return _pick(dict(accepted))


def _request(entry: BFCLEntry) -> tuple[str, str] | None:
    """The entry's system text and its one request; None when its first turn is more."""
    if not entry.question or not entry.question[0]:
        return None
    *before, last = entry.question[0]
    if last.get("role", "user") != "user" or any(m.get("role") != "system" for m in before):
        return None
    system = "\n\n".join(str(m.get("content", "")) for m in before)
    return system, str(last.get("content", ""))


class BFCLSingleTurnEnvironment(ToolEnvironment):
    """One BFCL single-turn category: one model turn per task, checked by BFCL's checker.

    ``split`` keeps that split's entries (by id, as ``tooluse eval bfcl --split``), ``sample``
    a seeded sample of them (``seed``), ``limit`` the first of those.
    """

    def __init__(  # noqa: PLR0913 -- keyword-only options of the registry
        self,
        category: str = "simple_python",
        *,
        tool_types: Sequence[str] = (),
        rewards: Sequence[Any] | None = None,
        split: str | None = None,
        sample: int | None = None,
        seed: int = 0,
        limit: int | None = None,
        max_doc_chars: int | None = None,
        max_request_chars: int | None = None,
        data_dir: str | None = None,
    ) -> None:
        entries = select_entries(
            load_bfcl_category(category, data_dir=data_dir), split=split, seed=seed
        )
        kept: list[tuple[BFCLEntry, str, str, tuple[ToolDefinition, ...], dict[str, str]]] = []
        for entry in entries:
            request = _request(entry)
            if request is None or (max_request_chars and len(request[1]) > max_request_chars):
                continue
            if max_doc_chars and len(json.dumps(list(entry.functions))) > max_doc_chars:
                continue
            try:
                tools, names = tools_for_entry(entry)
            except ValueError:
                continue
            kept.append((entry, request[0], request[1], tools, names))
        if sample is not None and sample < len(kept):
            picked = sorted(random.Random(f"{seed}:{category}").sample(range(len(kept)), sample))
            kept = [kept[i] for i in picked]
        if limit is not None:
            kept = kept[:limit]
        if not kept:
            raise ValueError(f"bfcl:{category}: no usable entries in the {split} split")
        self.category = category
        self.name = f"bfcl:{category}"
        self._entries = tuple(k[0] for k in kept)
        self._systems = tuple(k[1] for k in kept)
        self._entry_tools = tuple(k[3] for k in kept)
        self._names = tuple(k[4] for k in kept)
        self._by_id = {entry.id: entry for entry in self._entries}
        tasks = [
            Task(
                prompt=request,
                reference=list(entry.ground_truth),
                id=entry.id,
                metadata={"category": category},
            )
            for entry, _, request, _, _ in kept
        ]
        super().__init__(
            tasks,
            tools=(),
            rewards=(CorrectnessReward(),) if rewards is None else rewards,
            max_steps=1,
        )
        self._tools = ()

    @property
    def entries(self) -> tuple[BFCLEntry, ...]:
        return self._entries

    def available_tools(
        self, task_index: int, data: Mapping[str, Any]
    ) -> tuple[ToolDefinition, ...]:
        """The entry's functions."""
        return self._entry_tools[task_index]

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start entry ``options["task_index"]`` (default 0): its request and functions."""
        index = int((options or {}).get("task_index", 0))
        task = self.task(index)
        observation = Observation(
            prompt=task.prompt,
            available_tools=self._entry_tools[index],
            system_prompt=self._systems[index],
        )
        state = EnvState(task_index=index, observation=observation)
        return state, {"task_id": task.id, "task_index": index, "seed": seed}

    def _plan(self, state: EnvState, action: Any) -> _Plan:
        """Every turn is the answer: its calls (BFCL's names), none for a text reply."""
        check_action(state, action)
        names = self._names[state.task_index]
        known = {c.id: ToolResult.success(c.id, c.name, RECORDED) for c in action.tool_calls}
        decoded = [{names.get(c.name, c.name): dict(c.arguments)} for c in action.tool_calls]
        return _Plan(to_run=(), known=known, answer=decoded, answered=True)

    def check_answer(self, answer: Any, task: Task) -> bool:
        """BFCL's verdict on the decoded calls."""
        entry = self._by_id[task.id]
        category = scoring_category(entry.category, entry.id)
        calls = answer if isinstance(answer, list) else []
        return check_entry(category, entry.functions, calls, entry.ground_truth).valid

    def gold_script(self, index: int) -> list[Any]:
        """The accepted answer of task ``index`` as a scripted turn (``ValueError`` for
        ``live_relevance``, which has no answer file)."""
        entry = self._entries[index]
        kind = checker_kind(scoring_category(entry.category, entry.id))
        if kind == "irrelevance":
            return [NO_TOOL_REPLY]
        if kind == "relevance":
            raise ValueError(f"{self.name} has no gold answer (BFCL has no answer file for it)")
        back = {bfcl: tool for tool, bfcl in self._names[index].items()}
        calls = [
            ToolCall(name=back.get(name, name), arguments=gold_arguments(accepted))
            for expected in entry.ground_truth
            for name, accepted in expected.items()
        ]
        return [calls]
