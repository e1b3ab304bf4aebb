"""Building a recipe's dataset: each source's gold conversations, the leak check, the counts.

::

    built = build_dataset(load_recipe("generalist.toml"), Path("runs/data"))
    built.conversations, built.report["sources"]["bfcl:parallel"], built.report["shares"]

Each source is an environment's teacher on its train split (:func:`tooluse.train.data.teacher_data`):
its conversations are played through the environment, and the tasks whose gold answer the
environment's checker rejects are left out, counted and listed. Then every user message of every
conversation is checked against the test items of every test split (:mod:`tooluse.train.leaks`):
the recipe's own sources, :data:`BENCHMARK_TEST_SPLITS` and the recipe's ``test_splits``. A leak
refuses the build (``TrainDataError`` listing the first examples) unless the recipe says
``drop = true``, which leaves those conversations out and lists them.

``OUT/data.jsonl`` holds one conversation a line (``source``, ``messages``, ``tools``: what
:func:`~tooluse.train.data.read_sft_jsonl` reads), ``OUT/report.json`` the counts per source, the
tasks left out and why, the leaks, the shares of training turns with no call, with several calls
and with a text answer after tool results, and the data's SHA-256. A build whose report names the
same recipe digest is read back instead of built again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooluse.train.conversation import Conversation
from tooluse.train.data import TrainDataError, read_sft_jsonl, teacher_data
from tooluse.train.leaks import Leak, LeakIndex, TestItem
from tooluse.train.recipe import Recipe
from tooluse.train.relevance import RELEVANCE_PREFIX
from tooluse.train.result_answers import RESULT_ANSWERS
from tooluse.train.sft import write_json

__all__ = [
    "BENCHMARK_TEST_SPLITS",
    "DATA_FILE",
    "REPORT_FILE",
    "BuiltDataset",
    "build_dataset",
    "test_items",
    "turn_shares",
]

DATA_FILE = "data.jsonl"
REPORT_FILE = "report.json"
_LISTED = 5  # examples named in a refusal
#: Test splits checked whatever the recipe names: every BFCL category this project scores, the
#: arithmetic of the training benchmark, and the τ²-bench and nested-call environments.
BENCHMARK_TEST_SPLITS = (
    "bfcl:simple_python",
    "bfcl:simple_java",
    "bfcl:simple_javascript",
    "bfcl:multiple",
    "bfcl:parallel",
    "bfcl:parallel_multiple",
    "bfcl:irrelevance",
    "bfcl:live_simple",
    "bfcl:live_multiple",
    "bfcl:live_parallel",
    "bfcl:live_parallel_multiple",
    "bfcl:live_irrelevance",
    "bfcl:live_relevance",
    "bfcl:format_sensitivity",
    "bfcl:multi_turn_base",
    "bfcl:multi_turn_miss_func",
    "bfcl:multi_turn_miss_param",
    "bfcl:multi_turn_long_context",
    "math:arithmetic",
    "reasoning_gym:basic_arithmetic",
    "reasoning_gym:chain_sum",
    "reasoning_gym:products",
    "reasoning_gym:gsm_symbolic",
    "tau2:airline",
    "tau2:retail",
    "tau2:telecom",
    "nestful",
    "complexfuncbench",
)
#: Teachers whose test split is another's.
_TESTED_AS = {
    "bfcl:multi_turn_calls": "bfcl:multi_turn_base",
    RESULT_ANSWERS: "bfcl:multi_turn_base",
    "bfcl:relevance": "",
}


@dataclass(frozen=True, kw_only=True)
class BuiltDataset:
    """The recipe's conversations and the build's report (``OUT/report.json``)."""

    conversations: tuple[Conversation, ...]
    report: dict[str, Any] = field(default_factory=dict)


# -- the test items ------------------------------------------------------------------------------


def _bfcl_items(name: str) -> list[TestItem]:
    from tooluse.evals.bfcl.data import (
        BFCL_CATEGORIES,
        load_bfcl_category,
        load_format_sensitivity,
        split_of_entry,
    )
    from tooluse.evals.bfcl.world import multi_turn_split_entries

    category = name.removeprefix("bfcl:")
    if category.startswith("multi_turn"):
        return [
            TestItem(source=name, id=f"{entry.id}/turn{number}", text=turn)
            for entry in multi_turn_split_entries(category, "test")
            for number, turn in enumerate(entry.turns)
        ]
    if category == "format_sensitivity":
        entries = load_format_sensitivity()
    elif category in BFCL_CATEGORIES:
        entries = load_bfcl_category(category)
    else:
        return []
    return [
        TestItem(source=name, id=entry.id.rsplit(":", 1)[-1], text=str(message.get("content", "")))
        for entry in entries
        if split_of_entry(entry) == "test"
        for turn in entry.question
        for message in turn
        if message.get("role", "user") == "user"
    ]


def test_items(name: str, *, size: int = 200) -> list[TestItem]:
    """The test items of environment ``name``: every request of a BFCL test entry, the prompts
    of the first ``size`` tasks of a procedural test split (all of a fixed set's)."""
    if name.startswith("bfcl:"):
        return _bfcl_items(name)
    from tooluse.envs import environment_registry

    # τ²-bench's conversations need a customer to open: the scripted one (no model runs)
    extra = {"user": "gold"} if name.startswith("tau2:") and not name.endswith(":solo") else {}
    try:
        env = environment_registry.get(name=name, split="test", size=size, **extra)
    except (TypeError, ValueError):  # a fixed set (or math:arithmetic's fixed 50): as it is
        env = environment_registry.get(name=name, split="test", **extra)
    with env:
        return [
            TestItem(source=name, id=task.id or str(number), text=task.prompt)
            for number, task in enumerate(env.tasks)
        ]


def _test_split_names(recipe: Recipe) -> tuple[list[str], list[str]]:
    """The test splits to check: the recipe's (sources and ``test_splits``), then the
    benchmarks' that this install has."""
    from tooluse.envs import environment_registry

    asked = [s.name.removeprefix(RELEVANCE_PREFIX) for s in recipe.sources]
    named = [_TESTED_AS.get(n, n) for n in (*asked, *recipe.leak_check.test_splits)]
    own = list(dict.fromkeys(n for n in named if n))
    present = [
        name
        for name in BENCHMARK_TEST_SPLITS
        if name not in own
        and (name.startswith(("bfcl:", "reasoning_gym:")) or name in environment_registry)
    ]
    return own, present


def _leak_index(recipe: Recipe, report: Callable[[str], None]) -> tuple[LeakIndex, list[str]]:
    check = recipe.leak_check
    items: list[TestItem] = []
    own, present = _test_split_names(recipe)
    for name in own:
        try:
            items += test_items(name, size=check.test_size)
        except (KeyError, ValueError, FileNotFoundError) as exc:
            reason = exc.args[0] if exc.args else exc
            raise TrainDataError(f"leak check: no test split of {name!r} ({reason})") from None
    for name in present:
        try:
            items += test_items(name, size=check.test_size)
        except (KeyError, FileNotFoundError, ImportError) as exc:  # data this install lacks
            report(f"leak check: {name} not indexed ({exc})")
    return LeakIndex(items, n=check.n, threshold=check.threshold), [*own, *present]


def _user_texts(conversations: Sequence[Conversation]) -> list[tuple[int, str]]:
    return [
        (number, message.content)
        for number, conversation in enumerate(conversations)
        for message in conversation.messages
        if message.role == "user" and message.content.strip()
    ]


# -- the counts ---------------------------------------------------------------------------------


def turn_shares(conversations: Sequence[Conversation]) -> dict[str, Any]:
    """The training turns (assistant turns) and the shares with no call, with several calls,
    and answering in text after tool results."""
    turns = no_call = several = text_after = 0
    for conversation in conversations:
        messages = conversation.messages
        for index, message in enumerate(messages):
            if message.role != "assistant":
                continue
            turns += 1
            calls = len(message.tool_calls)
            no_call += calls == 0
            several += calls >= 2
            text_after += calls == 0 and index > 0 and messages[index - 1].role == "tool"
    share = (lambda count: round(count / turns, 4)) if turns else (lambda count: 0.0)
    return {
        "turns": turns,
        "no_call": share(no_call),
        "several_calls": share(several),
        "text_after_tool_results": share(text_after),
    }


# -- the build ----------------------------------------------------------------------------------


def _conversation_line(conversation: Conversation) -> str:
    from tooluse.envs.trajectory import message_to_dict

    return json.dumps(
        {
            "source": conversation.source,
            "messages": [message_to_dict(m) for m in conversation.messages],
            "tools": [t.to_openai_schema() for t in conversation.tools],
        },
        ensure_ascii=False,
    )


def _gather(
    recipe: Recipe, report: Callable[[str], None]
) -> tuple[list[Conversation], list[str], dict[str, Any]]:
    """Every source's conversations, each one's source label, and the counts per source."""
    conversations: list[Conversation] = []
    labels: list[str] = []
    sources: dict[str, Any] = {}
    for source in recipe.sources:
        data = teacher_data(
            source.name,
            split=source.split,
            size=source.count,
            seed=recipe.seed,
            answer=source.answer,
            options=source.options,
        )
        label = source.name if source.answer == "submit" else f"{source.name} (text answers)"
        sources[label] = {
            "asked": source.count,
            "kept": len(data.conversations),
            "rejected": len(data.rejected),
            "rejected_tasks": list(data.rejected),
        }
        left = f", {len(data.rejected)} left out (gold answer rejected or no script)"
        report(f"{label}: {len(data.conversations)} conversations{left if data.rejected else ''}")
        if not data.conversations:
            raise TrainDataError(f"source {label} gave no conversation (asked for {source.count})")
        conversations += data.conversations
        labels += [label] * len(data.conversations)
    return conversations, labels, sources


def _refusal(leaks: Sequence[Leak], total: int) -> TrainDataError:
    listed = "; ".join(leak.describe() for leak in leaks[:_LISTED])
    more = f"; and {len(leaks) - _LISTED} more" if len(leaks) > _LISTED else ""
    return TrainDataError(
        f"leak check: {len(leaks)} of {total} training conversations hold a test item: "
        f"{listed}{more} (drop = true under [leak_check] leaves them out)"
    )


def _checked(
    recipe: Recipe, conversations: list[Conversation], report: Callable[[str], None]
) -> tuple[list[int], dict[str, Any]]:
    """The numbers of the conversations that hold no test item, and the check's summary."""
    index, names = _leak_index(recipe, report)
    texts = _user_texts(conversations)
    leaks_by_conversation: dict[int, Leak] = {}
    for number, text in texts:
        hit = index.find(text)
        if hit is not None and number not in leaks_by_conversation:
            source = conversations[number].source
            leaks_by_conversation[number] = Leak(
                train_source=source, train_text=text, item=hit[0], share=hit[1]
            )
    leaks = [leaks_by_conversation[n] for n in sorted(leaks_by_conversation)]
    check = recipe.leak_check
    summary = {
        "n": check.n,
        "threshold": check.threshold,
        "test_splits": names,
        "test_items": len(index.items),
        "leaks": len(leaks),
        "dropped": [leak.describe() for leak in leaks] if check.drop else [],
    }
    if leaks and not check.drop:
        raise _refusal(leaks, len(conversations))
    report(
        f"leak check: {len(index.items)} test items of {len(names)} test splits, "
        f"{check.n}-grams: {len(leaks)} leaks" + (" (left out)" if leaks else "")
    )
    return [n for n in range(len(conversations)) if n not in leaks_by_conversation], summary


def _previous(out: Path, recipe: Recipe) -> BuiltDataset | None:
    report_path, data_path = out / REPORT_FILE, out / DATA_FILE
    if not (report_path.is_file() and data_path.is_file()):
        return None
    try:
        previous = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    digest = hashlib.sha256(data_path.read_bytes()).hexdigest()
    if previous.get("recipe_digest") != recipe.digest or previous.get("data_sha256") != digest:
        return None
    return BuiltDataset(conversations=tuple(read_sft_jsonl(data_path)), report=previous)


def build_dataset(recipe: Recipe, out: Path, report: Callable[[str], None] = print) -> BuiltDataset:
    """Build (or read back) the recipe's dataset into ``out`` (see the module)."""
    previous = _previous(out, recipe)
    if previous is not None:
        report(f"{out / DATA_FILE}: built before from this recipe")
        return previous
    conversations, labels, sources = _gather(recipe, report)
    kept_numbers, leaks = _checked(recipe, conversations, report)
    kept = [conversations[n] for n in kept_numbers]
    for label in sources:
        own = [conversations[n] for n in kept_numbers if labels[n] == label]
        sources[label]["conversations"] = len(own)
        sources[label].update(turn_shares(own))
    out.mkdir(parents=True, exist_ok=True)
    text = "".join(_conversation_line(c) + "\n" for c in kept)
    partial = out / f".{DATA_FILE}.partial"
    partial.write_text(text, encoding="utf-8")
    partial.replace(out / DATA_FILE)
    built = {
        "recipe": str(recipe.path) if recipe.path else recipe.name,
        "recipe_name": recipe.name,
        "recipe_digest": recipe.digest,
        "seed": recipe.seed,
        "data_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "conversations": len(kept),
        "shares": turn_shares(kept),
        "sources": sources,
        "leak_check": leaks,
    }
    write_json(out / REPORT_FILE, built)
    return BuiltDataset(conversations=tuple(kept), report=built)
