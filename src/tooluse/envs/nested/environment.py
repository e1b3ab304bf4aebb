"""``nestful`` and ``complexfuncbench``: nested and multi-step calling on recorded sequences.

::

    env = environment_registry.get(name="nestful", split="test")
    env = environment_registry.get(name="complexfuncbench", split="test", limit=20)

Each task is a benchmark sample (:mod:`tooluse.envs.nested.data`): the user's query, the
functions its gold sequence uses as tools (``all_tools=True``: its source's whole catalogue),
and a replay instead of live APIs (:mod:`tooluse.envs.nested.replay`). A call is checked
against the tool's schema first (a call that does not fit gets the validation error); a valid
call that is one of the gold calls still due (whose inputs have been produced) gets that gold
call's output; any other call gets an error the model can read, saying that no recorded call
matches. A reply in text ends the episode, which is then scored as the benchmark's paper
scores it (:mod:`tooluse.envs.nested.scoring`). Train and test splits are tooluse's seeded
hash of the sample ids.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.envs.base import Action, EnvState, Observation, StepResult, Task, ToolEnvironment
from tooluse.envs.base import check_action as check_step
from tooluse.envs.nested.data import (
    NestedSample,
    complexfuncbench_samples,
    nestful_samples,
    tool_name,
)
from tooluse.envs.nested.replay import gold_arguments, gold_outputs, references, same_value
from tooluse.envs.nested.scoring import MetricReward, nestful_metrics
from tooluse.envs.rewards import CorrectnessReward, StepContext, call_key, compute_signals
from tooluse.envs.splits import split_indices
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["ComplexFuncBenchEnvironment", "NestedCallEnvironment", "NestfulEnvironment"]

INSTRUCTIONS = (
    "Answer the user's request by calling the functions. When a call needs a value that an "
    "earlier call returned, pass that value on exactly as it was returned. When you have "
    "everything, answer in text without calling a function."
)
NO_MATCH = (
    "error: no recorded call matches this one, so it returned nothing. Check the function, "
    "the argument names and their values (values from earlier results must be passed on "
    "exactly), or make the calls it depends on first."
)
#: ComplexFuncBench's location lookups: optional, as in its evaluation.
OPTIONAL_FUNCTIONS = frozenset(
    {
        "Location_to_Lat_Long",
        "Search_Hotel_Destination",
        "Search_Attraction_Location",
        "Search_Car_Location",
        "Search_Flight_Location",
        "Taxi_Search_Location",
    }
)
_JSON_TYPES = {
    "string": "string",
    "str": "string",
    "number": "number",
    "float": "number",
    "double": "number",
    "integer": "integer",
    "int": "integer",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "object": "object",
    "dict": "object",
}


def _fits(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind in ("number", "integer"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def fitted_spec(spec: Mapping[str, Any], gold: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A function spec adjusted so that the sample's own gold calls of it (``gold``: their
    resolved arguments) fit: a parameter a gold call leaves out is not required, one it adds
    is declared, and a type it breaks (``optimize_route: boolean`` given ``"time"``) is named
    in the description instead of enforced. The benchmarks' data does not always keep to its
    specs, and the gold sequence itself must never be refused."""
    parameters = {k: dict(v or {}) for k, v in (spec.get("query_parameters") or {}).items()}
    for arguments in gold:
        for key, value in arguments.items():
            info = parameters.setdefault(key, {})
            kind = _JSON_TYPES.get(str(info.get("type") or "").lower())
            if kind and not _fits(value, kind):
                info["description"] = f"{info.get('description') or ''} ({kind})".strip()
                info["type"] = None
        for key, info in parameters.items():
            if key not in arguments:
                info["required"] = False
    return {**spec, "query_parameters": parameters}


def tool_from_spec(name: str, spec: Mapping[str, Any]) -> ToolDefinition:
    """A tool from a benchmark function spec (allowed values are named in the description
    rather than enforced: the gold sequences do not always keep to them)."""
    properties: dict[str, Any] = {}
    required = []
    for parameter, raw in (spec.get("query_parameters") or {}).items():
        info = raw or {}
        prop: dict[str, Any] = {}
        kind = _JSON_TYPES.get(str(info.get("type") or "").lower())
        if kind:
            prop["type"] = kind
        description = str(info.get("description") or "")
        allowed = info.get("enum") or info.get("allowed_values")
        if allowed:
            description += f" One of: {', '.join(map(str, allowed))}."
        if description.strip():
            prop["description"] = description.strip()
        properties[parameter] = prop
        if info.get("required") is True:
            required.append(parameter)
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolDefinition.from_schema(
        tool_name(name), schema, description=str(spec.get("description") or name)
    )


class NestedCallEnvironment(ToolEnvironment):
    """The replay environment shared by both benchmarks (see the module)."""

    benchmark = "nested"
    #: ComplexFuncBench's runner ends a sample at a turn whose calls all fail to match.
    stop_on_miss = False

    def __init__(
        self,
        samples: Sequence[NestedSample],
        *,
        tool_types: Sequence[str] = (),
        split: str | None = None,
        limit: int | None = None,
        all_tools: bool = False,
        max_steps: int = 20,
        rewards: Sequence[Any] | None = None,
    ) -> None:
        keep = split_indices([s.id for s in samples], split, salt=self.benchmark)
        chosen = (
            [samples[i] for i in keep][:limit] if limit is not None else [samples[i] for i in keep]
        )
        if not chosen:
            raise ValueError(f"{self.benchmark} has no samples for this selection")
        self.samples = tuple(chosen)
        self.name = self.benchmark
        self.all_tools = all_tools
        tasks = [
            Task(prompt=s.query, reference=[[c.name, c.arguments] for c in s.calls], id=s.id)
            for s in self.samples
        ]
        super().__init__(
            tasks,
            tools=(),
            rewards=self.default_rewards() if rewards is None else rewards,
            max_steps=max_steps,
        )
        self._tools = ()
        self._cache: dict[int, tuple[Any, ...]] = {}

    def default_rewards(self) -> tuple[Any, ...]:
        return (CorrectnessReward(),)

    # -- a sample's replay -------------------------------------------------------------------

    def replay(
        self, index: int
    ) -> tuple[tuple[ToolDefinition, ...], list[Any], list[dict[str, Any]]]:
        """Task ``index``'s tools, its gold calls' outputs and their resolved arguments."""
        if index not in self._cache:
            sample = self.samples[index]
            names = (
                list(sample.catalog)
                if self.all_tools
                else list(dict.fromkeys(c.name for c in sample.calls))
            )
            outputs = gold_outputs(sample)
            arguments = gold_arguments(sample, outputs)
            tools = tuple(
                tool_from_spec(
                    n,
                    fitted_spec(
                        sample.catalog.get(n) or {"description": n},
                        [a for c, a in zip(sample.calls, arguments, strict=True) if c.name == n],
                    ),
                )
                for n in names
            )
            self._cache[index] = (tools, outputs, arguments)
        tools, outputs, arguments = self._cache[index]
        return tools, outputs, arguments

    def available_tools(
        self, task_index: int, data: Mapping[str, Any]
    ) -> tuple[ToolDefinition, ...]:
        return self.replay(task_index)[0]

    def gold_script(self, index: int) -> list[Any]:
        """The scripted turns that make task ``index``'s gold calls, then answer."""
        sample = self.samples[index]
        _, outputs, arguments = self.replay(index)
        turns: list[Any] = [
            [ToolCall(id="", name=tool_name(c.name), arguments=a)]
            for c, a in zip(sample.calls, arguments, strict=True)
        ]
        turns.append(self.answer_text(index, outputs))
        return turns

    def answer_text(self, index: int, outputs: Sequence[Any]) -> str:
        return "I made all the calls the request needs."

    # -- episode -----------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        index = int((options or {}).get("task_index", 0))
        task = self.task(index)
        state = EnvState(
            task_index=index,
            observation=Observation(
                prompt=task.prompt,
                available_tools=self.available_tools(index, {}),
                system_prompt=INSTRUCTIONS,
            ),
            data={"calls": []},
        )
        return state, {"task_id": task.id, "task_index": index, "seed": seed}

    def step(self, state: EnvState, action: Action) -> StepResult:
        check_step(state, action)
        index = state.task_index
        sample = self.samples[index]
        tools, outputs, wanted = self.replay(index)
        by_name = {t.name: t for t in tools}
        originals = {tool_name(n): n for n in sample.catalog} | {
            tool_name(c.name): c.name for c in sample.calls
        }
        calls = [dict(c) for c in state.data["calls"]]
        if action.tool_calls and self.stop_on_miss and self._all_made(sample, calls):
            # ComplexFuncBench's runner ends a sample that calls on after its last gold call.
            late = tuple(
                ToolResult.failure(c.id, c.name, "not run: every call the request needs is made")
                for c in action.tool_calls
            )
            return self._result(state, action, late, calls, "called_after_done")
        results: list[ToolResult] = []
        misses = invalid = 0
        for call in action.tool_calls:
            tool = by_name.get(call.name)
            name = originals.get(call.name, call.name)
            arguments: dict[str, Any] = dict(call.arguments or {})
            if tool is None:
                known = ", ".join(sorted(by_name))
                results.append(
                    ToolResult.failure(call.id, call.name, f"unknown function; available: {known}")
                )
                calls.append({"name": name, "arguments": arguments, "gold": None})
                invalid += 1
                continue
            try:
                arguments = tool.validate_arguments(_given(call))
            except Exception as exc:  # the model gets the problem
                results.append(ToolResult.failure(call.id, call.name, exc))
                calls.append({"name": name, "arguments": arguments, "gold": None})
                invalid += 1
                continue
            gold = self._match(sample, name, arguments, wanted, calls)
            calls.append({"name": name, "arguments": _plain(arguments), "gold": gold})
            if gold is None:
                misses += 1
                results.append(ToolResult.failure(call.id, call.name, NO_MATCH))
            else:
                output = outputs[gold]
                text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
                results.append(ToolResult.success(call.id, call.name, text))
        end = None
        if not action.tool_calls:
            end = "answered"
        elif self.stop_on_miss and misses and misses == len(action.tool_calls) and not invalid:
            end = "no_call_matched"
        return self._result(state, action, tuple(results), calls, end)

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        return self.step(state, action)

    def _match(
        self,
        sample: NestedSample,
        name: str,
        arguments: Mapping[str, Any],
        wanted: Sequence[Mapping[str, Any]],
        calls: Sequence[Mapping[str, Any]],
    ) -> int | None:
        """The first gold call still due, with its inputs produced, that this call is."""
        used = {c["gold"] for c in calls if c.get("gold") is not None}
        produced = {sample.calls[i].label for i in used}
        for i, gold in enumerate(sample.calls):
            if i in used or gold.name != name:
                continue
            needs = {label for label, _ in references(gold.arguments)}
            if needs - produced:
                continue
            if self.same_call(arguments, wanted[i]):
                return i
        return None

    @staticmethod
    def _all_made(sample: NestedSample, calls: Sequence[Mapping[str, Any]]) -> bool:
        """Whether every gold call (the optional ones too) has been made."""
        made = {c["gold"] for c in calls if c.get("gold") is not None}
        return len(made) == len(sample.calls)

    def same_call(self, given: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
        """Whether a call's arguments are a gold call's (NESTFUL: values compared as text)."""
        return set(given) == set(wanted) and all(same_value(given[k], wanted[k]) for k in wanted)

    def _result(
        self,
        state: EnvState,
        action: Action,
        results: tuple[ToolResult, ...],
        calls: list[dict[str, Any]],
        end: str | None,
    ) -> StepResult:
        index = state.task_index
        step_count = state.step_count + 1
        truncated = end is None and step_count >= self.max_steps
        done = end is not None or truncated
        info: dict[str, Any] = {"tool_results": results, "step": step_count}
        metrics: dict[str, float] = {}
        success: bool | None = None
        if done:
            metrics, success = self.score(index, calls, end or "max_steps")
            info.update(correct=success, answer=None, end=end or "max_steps", metrics=metrics)
        if truncated:
            info["truncated_reason"] = f"no answer within {self.max_steps} steps"
        context = StepContext(
            calls=action.tool_calls,
            results=results,
            previous_calls=state.call_keys,
            text=action.text,
            correct=success,
            reference=self.task(index).reference,
            done=done,
            info={"metrics": metrics} if done else {},
        )
        next_state = dataclasses.replace(
            state,
            observation=dataclasses.replace(state.observation, tool_results=results),
            step_count=step_count,
            done=done,
            call_keys=state.call_keys + tuple(call_key(c) for c in action.tool_calls),
            answer=action.text if end == "answered" else state.answer,
            data={"calls": calls},
        )
        return StepResult(
            state=next_state,
            signals=compute_signals(self.rewards, context),
            terminated=end is not None,
            truncated=truncated,
            info=info,
        )

    def score(
        self, index: int, calls: Sequence[Mapping[str, Any]], end: str
    ) -> tuple[dict[str, float], bool]:
        """The benchmark's figures for a played sequence, and whether it succeeded."""
        raise NotImplementedError


class NestfulEnvironment(NestedCallEnvironment):
    """NESTFUL v1 (300 samples): scored by full and partial sequence accuracy and F1."""

    benchmark = "nestful"

    def __init__(self, **options: Any) -> None:
        super().__init__(nestful_samples(), **options)

    def default_rewards(self) -> tuple[Any, ...]:
        names = ("full_sequence", "partial_sequence", "name_f1", "param_f1", "call_f1")
        return (CorrectnessReward(), *(MetricReward(name=n) for n in names))

    def answer_text(self, index: int, outputs: Sequence[Any]) -> str:
        sample = self.samples[index]
        memory = {c.label: o for c, o in zip(sample.calls, outputs, strict=True) if c.label}
        from tooluse.envs.nested.replay import memory_of, resolve

        found = resolve(sample.result, {k: memory_of(v) for k, v in memory.items()})
        return "Here is what I found: " + json.dumps(found, ensure_ascii=False)

    def score(
        self, index: int, calls: Sequence[Mapping[str, Any]], end: str
    ) -> tuple[dict[str, float], bool]:
        sample = self.samples[index]
        _, _, wanted = self.replay(index)
        predicted = [(str(c["name"]), dict(c["arguments"])) for c in calls]
        gold = [(c.name, dict(a)) for c, a in zip(sample.calls, wanted, strict=True)]
        metrics = nestful_metrics(predicted, gold, [c.get("gold") for c in calls])
        return metrics, metrics["full_sequence"] == 1.0


class ComplexFuncBenchEnvironment(NestedCallEnvironment):
    """ComplexFuncBench (1,000 samples): per-call correctness, rule-based matching only."""

    benchmark = "complexfuncbench"
    stop_on_miss = True

    def __init__(self, **options: Any) -> None:
        super().__init__(complexfuncbench_samples(), **options)

    def default_rewards(self) -> tuple[Any, ...]:
        return (CorrectnessReward(), MetricReward(name="call_accuracy"))

    def same_call(self, given: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
        """ComplexFuncBench's rule-based match: same names, equal values
        (``categories_filter`` as a set of comma-separated items)."""
        if set(given) != set(wanted):
            return False
        for key, value in wanted.items():
            if key == "categories_filter" and isinstance(value, str):
                mine = given[key]
                if isinstance(mine, str) and _items(mine) == _items(value):
                    continue
            if given[key] != value:
                return False
        return True

    def score(
        self, index: int, calls: Sequence[Mapping[str, Any]], end: str
    ) -> tuple[dict[str, float], bool]:
        sample = self.samples[index]
        made = {c["gold"] for c in calls if c.get("gold") is not None}
        due = [i for i, c in enumerate(sample.calls) if c.name not in OPTIONAL_FUNCTIONS]
        accuracy = len(made) / len(sample.calls) if sample.calls else 1.0
        success = end == "answered" and all(i in made for i in due)
        return {"call_accuracy": accuracy}, success


def _items(text: str) -> set[str]:
    return {part.strip() for part in text.split(",")}


def _given(call: ToolCall) -> Any:
    raw = call.raw_arguments
    if not call.arguments and raw and raw.strip() not in ("{}", "null"):
        return raw
    return call.arguments


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
