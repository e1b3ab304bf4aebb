"""BFCL's multi-turn tool worlds: entries, executable class instances and the per-turn checks.

The only module of ``tooluse.envs`` that imports ``bfcl_eval`` (``pip install 'tooluse[eval]'``
for ``mpmath``, plus ``pip install --no-deps bfcl-eval``: its declared dependencies are not needed). It reads
the multi-turn categories, the function docs and the ground truth from the package data, builds
fresh instances of the executable classes (``GorillaFileSystem``, ``MathAPI``, ``MessageAPI``,
``TwitterAPI``, ``TicketAPI``, ``TradingBot``, ``TravelAPI``, ``VehicleControlAPI``) for each
world, and checks a turn with BFCL's own ``state_checker`` and ``response_checker``.

Unlike BFCL's executor, nothing lives in module globals and nothing is ``eval``-ed: a call is a
method looked up on the world's instances and called with its arguments, and ground-truth call
strings are read with :mod:`ast` (literal arguments only). Results are rendered as BFCL renders
them (text as is, a ``dict`` as JSON, anything else ``str``; an exception as
``"Error during execution: ..."``), so the response check compares the same strings.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from tooluse.envs.splits import check_split, split_of

__all__ = [
    "ADDED_FUNCTIONS_MESSAGE",
    "MULTI_TURN_CATEGORIES",
    "SUPPORTED_CLASSES",
    "MultiTurnEntry",
    "TurnCheck",
    "World",
    "check_turn",
    "function_docs",
    "ground_truth_world",
    "ground_truth_calls",
    "keyword_arguments",
    "load_multi_turn",
    "multi_turn_split",
    "multi_turn_split_entries",
    "multi_turn_test_requests",
    "parse_call",
    "render_result",
]

MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)

#: The classes whose code needs only the standard library and mpmath (the memory and web-search
#: classes need faiss, sentence-transformers or serpapi and are left out).
SUPPORTED_CLASSES = (
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
)

#: BFCL's user message for a turn where held-back functions become available.
ADDED_FUNCTIONS_MESSAGE = "I have updated some more functions you can choose from. What about now?"


def _bfcl() -> Any:
    try:
        import bfcl_eval
        from bfcl_eval.constants import executable_backend_config
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker
    except ImportError as exc:  # the extra is missing: say which one
        raise ImportError(
            "the BFCL multi-turn environments need bfcl-eval and mpmath: "
            "pip install 'tooluse[eval]' && pip install --no-deps 'bfcl-eval==2026.3.23'"
        ) from exc
    return bfcl_eval, executable_backend_config, multi_turn_checker


@dataclass(frozen=True, kw_only=True)
class MultiTurnEntry:
    """One BFCL multi-turn entry with its ground truth.

    ``turns[i]`` is the user message of turn ``i`` (``""`` for a turn that only adds held-back
    functions); ``ground_truth[i]`` the call strings that solve it; ``missed_functions[i]`` the
    functions that become available at turn ``i``.
    """

    id: str
    category: str
    turns: tuple[str, ...]
    ground_truth: tuple[tuple[str, ...], ...]
    initial_config: dict[str, Any]
    involved_classes: tuple[str, ...]
    missed_functions: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category


def _data_file(name: str) -> Any:
    bfcl_eval, _, _ = _bfcl()
    root = resources.files(bfcl_eval) / "data"
    for candidate in sorted((p.name for p in root.iterdir()), reverse=True):
        if candidate.startswith("BFCL_v") and candidate.endswith(f"_{name}.json"):
            return root / candidate, root / "possible_answer" / candidate
    raise FileNotFoundError(f"bfcl-eval ships no data file for category {name!r}")


def _jsonl(path: Any) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {number} is not valid JSON: {exc.msg}") from None
    return rows


@lru_cache(maxsize=8)
def load_multi_turn(category: str) -> tuple[MultiTurnEntry, ...]:
    """The entries of one multi-turn category, paired with their ground truth by id."""
    if category not in MULTI_TURN_CATEGORIES:
        raise ValueError(
            f"unknown BFCL multi-turn category {category!r}; "
            f"known: {', '.join(MULTI_TURN_CATEGORIES)}"
        )
    prompts, answers = _data_file(category)
    truth = {row["id"]: row["ground_truth"] for row in _jsonl(answers)}
    entries = []
    for row in _jsonl(prompts):
        classes = tuple(row["involved_classes"])
        unsupported = [c for c in classes if c not in SUPPORTED_CLASSES]
        if unsupported:
            continue
        turns = tuple(
            "\n".join(str(m.get("content", "")) for m in turn if m.get("role") == "user")
            for turn in row["question"]
        )
        entries.append(
            MultiTurnEntry(
                id=row["id"],
                category=category,
                turns=turns,
                ground_truth=tuple(tuple(t) for t in truth[row["id"]]),
                initial_config=row.get("initial_config", {}),
                involved_classes=classes,
                missed_functions={
                    int(k): tuple(v) for k, v in row.get("missed_function", {}).items()
                },
            )
        )
    return tuple(entries)


def multi_turn_split(entry: MultiTurnEntry) -> str:
    """The split (``"train"`` or ``"test"``) of a multi-turn entry.

    The four categories ask the same requests under the same entry number (``miss_func``,
    ``miss_param`` and ``long_context`` are ``multi_turn_base`` with a function held back, a
    parameter left out or a longer world), so all four are split together: entry N of every
    category goes where ``multi_turn_base_N`` goes, and no train entry of one category is
    another's test item."""
    number = entry.id.rsplit("_", 1)[-1]
    return split_of(f"multi_turn_base_{number}", salt="bfcl:multi_turn_base")


def multi_turn_split_entries(category: str, split: str | None) -> tuple[MultiTurnEntry, ...]:
    """The entries of ``category`` in ``split`` (all of them when ``split`` is None)."""
    entries = load_multi_turn(category)
    if check_split(split) is None:
        return entries
    return tuple(e for e in entries if multi_turn_split(e) == split)


def multi_turn_test_requests() -> frozenset[str]:
    """Every user request of a test entry of the four multi-turn categories."""
    return frozenset(
        turn.strip()
        for category in MULTI_TURN_CATEGORIES
        for entry in multi_turn_split_entries(category, "test")
        for turn in entry.turns
        if turn.strip()
    )


@lru_cache(maxsize=16)
def _class_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    bfcl_eval, config, _ = _bfcl()
    path = (
        resources.files(bfcl_eval)
        / "data"
        / "multi_turn_func_doc"
        / config.MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    )
    return tuple(_jsonl(path))


def function_docs(classes: Sequence[str]) -> list[dict[str, Any]]:
    """The BFCL function docs of ``classes`` (deep copies, in class order)."""
    return [copy.deepcopy(doc) for name in classes for doc in _class_docs(name)]


def render_result(value: Any) -> str:
    """A method's return value as BFCL renders it for the model and the response check."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class World:
    """Fresh instances of an entry's classes, loaded with its initial configuration.

    :meth:`call` runs one method; a method name maps to the last involved class that has it,
    as in BFCL.
    """

    def __init__(self, entry: MultiTurnEntry) -> None:
        _, config, _ = _bfcl()
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for class_name in entry.involved_classes:
            module = importlib.import_module(config.CLASS_FILE_PATH_MAPPING[class_name])
            instance = getattr(module, class_name)()
            if class_name not in config.STATELESS_CLASSES:
                instance._load_scenario(
                    copy.deepcopy(entry.initial_config.get(class_name, {})),
                    long_context=entry.long_context,
                )
            self.instances[class_name] = instance
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = method

    def call(
        self, name: str, arguments: Mapping[str, Any], args: Sequence[Any] = ()
    ) -> tuple[str, bool]:
        """Run ``name(*args, **arguments)``: the rendered result and whether it failed.

        A method that raises gives BFCL's ``"Error during execution: ..."`` text; a result that
        is a dict with an ``"error"`` key also counts as failed (the classes report misuse so).
        """
        method = self.methods.get(name)
        if method is None:
            return f"Error during execution: name '{name}' is not defined", True
        try:
            value = method(*args, **copy.deepcopy(dict(arguments)))
        except Exception as exc:  # the class's own failure goes back to the model as text
            return f"Error during execution: {exc}", True
        return render_result(value), isinstance(value, dict) and "error" in value


def parse_call(text: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """A BFCL ground-truth call string (``"cd(folder='doc')"``) as name, args and kwargs."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not a call: {text!r} ({exc.msg})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    try:
        args = tuple(ast.literal_eval(a) for a in node.args)
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    except ValueError:
        raise ValueError(f"call arguments are not literals: {text!r}") from None
    return node.func.id, args, kwargs


def keyword_arguments(
    world: World, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """``args`` bound to the method's parameter names, merged with ``kwargs``."""
    if not args:
        return dict(kwargs)
    method = world.methods.get(name)
    if method is None:
        raise ValueError(f"unknown function {name!r}")
    bound = inspect.signature(method).bind_partial(*args, **kwargs)
    return dict(bound.arguments)


def ground_truth_calls(entry: MultiTurnEntry) -> list[list[tuple[str, dict[str, Any]]]]:
    """The ground truth per turn as (name, keyword arguments) pairs (positional arguments
    bound to their parameter names), ready to send as tool calls."""
    world = World(entry)
    turns = []
    for turn in entry.ground_truth:
        calls = []
        for text in turn:
            name, args, kwargs = parse_call(text)
            calls.append((name, keyword_arguments(world, name, args, kwargs)))
        turns.append(calls)
    return turns


def ground_truth_world(entry: MultiTurnEntry, upto_turn: int) -> tuple[World, list[str]]:
    """The world after the ground truth of turns ``0..upto_turn``, and that turn's results."""
    world = World(entry)
    results: list[str] = []
    for turn in range(upto_turn + 1):
        results = []
        for text in entry.ground_truth[turn]:
            name, args, kwargs = parse_call(text)
            results.append(world.call(name, kwargs, args)[0])
    return world, results


@dataclass(frozen=True, kw_only=True)
class TurnCheck:
    """BFCL's verdict on one turn: did the model act, does the state match, are the results in."""

    turn: int
    checked: bool
    acted: bool = True
    state_valid: bool = True
    response_valid: bool = True
    error_type: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.acted and self.state_valid and self.response_valid

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "checked": self.checked,
            "valid": self.valid,
            "acted": self.acted,
            "state_valid": self.state_valid,
            "response_valid": self.response_valid,
            "error_type": self.error_type,
            "details": json.loads(json.dumps(self.details, default=str)),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnCheck:
        return cls(
            turn=int(data["turn"]),
            checked=bool(data["checked"]),
            acted=bool(data.get("acted", True)),
            state_valid=bool(data.get("state_valid", True)),
            response_valid=bool(data.get("response_valid", True)),
            error_type=str(data.get("error_type", "")),
            details=dict(data.get("details", {})),
        )


def check_turn(
    entry: MultiTurnEntry,
    turn: int,
    world: World,
    model_results: Sequence[str],
    calls_this_turn: int,
) -> TurnCheck:
    """Check turn ``turn`` as BFCL's ``multi_turn_checker`` does.

    ``world`` is the model's world after the turn, ``model_results`` the rendered results of
    all the model's calls so far (every turn). A turn whose ground truth is empty is not
    checked; otherwise the model must have made a call, every instance's public attributes
    must equal the ground-truth world's (``state_checker``), and every ground-truth result of
    the turn must be among the model's results (``response_checker``, as a multiset).
    """
    if not entry.ground_truth[turn]:
        return TurnCheck(turn=turn, checked=False)
    if calls_this_turn == 0:
        return TurnCheck(
            turn=turn,
            checked=True,
            acted=False,
            error_type="multi_turn:empty_turn_model_response",
        )
    _, _, checker = _bfcl()
    truth, truth_results = ground_truth_world(entry, turn)
    state = checker.state_checker(world.instances, truth.instances)
    response = checker.response_checker(list(model_results), truth_results, turn)
    details: dict[str, Any] = {}
    error_type = ""
    if not state["valid"]:
        error_type = state["error_type"]
        details["differences"] = state["details"]["differences"]
    if not response["valid"]:
        error_type = error_type or response["error_type"]
        details["missing_results"] = response["details"]["missing_items"]
    return TurnCheck(
        turn=turn,
        checked=True,
        state_valid=bool(state["valid"]),
        response_valid=bool(response["valid"]),
        error_type=error_type,
        details=details,
    )
