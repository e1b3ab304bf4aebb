"""Teachers for deciding and choosing, from BFCL categories that the held-out BFCL table never
scores: when to answer without a call, and which of several tools to call with which arguments.

- (``bfcl:live_irrelevance`` and every other single-turn category are environments with a gold
  answer, :mod:`tooluse.evals.bfcl.single_turn`, played like any other teacher.)
- ``bfcl:multi_turn_calls``: the first user turn of each ``multi_turn_base`` train entry asked
  on its own, its ground-truth calls as the answer, with the called functions and up to
  ``DECOYS`` other functions of the entry's classes on offer (all of a class's functions do not
  fit a short training sequence; decoys are added while the docs stay within
  ``MAX_DOC_CHARS``).
- ``bfcl:relevance``: the yes/no question of :mod:`tooluse.train.relevance` on train
  entries: ``Yes`` for the first turns above and the requests of ``RELEVANT_CATEGORIES`` with
  their own functions; ``No`` for ``live_irrelevance`` and for those requests offered another
  entry's functions (:func:`~tooluse.train.relevance.mismatched`), as many ``No`` as ``Yes``.

Entries whose function docs exceed ``MAX_DOC_CHARS`` characters of JSON, or whose request
exceeds ``MAX_REQUEST_CHARS``, are left out: with the tool prompt they would not fit the short
sequences training runs on.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from tooluse.evals.bfcl.single_turn import NO_TOOL_REPLY
from tooluse.messages import ChatMessage, ToolCall
from tooluse.tools.definition import ToolDefinition
from tooluse.train.conversation import Conversation
from tooluse.train.relevance import (
    RelevanceCase,
    cases_from_conversations,
    mismatched,
    relevance_conversations,
)

__all__ = [
    "BFCL_TEACHERS",
    "NO_TOOL_REPLY",
    "bfcl_relevance_cases",
    "bfcl_teacher_conversations",
    "first_turn",
]

BFCL_TEACHERS = ("bfcl:multi_turn_calls", "bfcl:relevance")
#: Single-turn categories with requests their functions serve, outside the held-out table.
RELEVANT_CATEGORIES = (
    "simple_java",
    "simple_javascript",
    "live_parallel",
    "live_parallel_multiple",
    "live_relevance",
)
DECOYS = 3
MAX_DOC_CHARS = 1600
MAX_REQUEST_CHARS = 1000


def _tools(docs: Sequence[dict[str, Any]]) -> tuple[ToolDefinition, ...] | None:
    from tooluse.evals.bfcl.data import tool_from_bfcl_function

    if len(json.dumps(list(docs))) > MAX_DOC_CHARS:
        return None
    try:
        return tuple(tool_from_bfcl_function(doc) for doc in docs)
    except ValueError:
        return None


def _single_turn(entry: Any) -> tuple[tuple[ToolDefinition, ...], list[ChatMessage]] | None:
    """An entry's functions as tools and its messages, when the functions fit and the
    messages end with the user's request; None otherwise."""
    tools = _tools(entry.functions)
    messages = entry.messages()
    if not tools or not messages or messages[-1].role != "user":
        return None
    return tools, messages


def _irrelevance(split: str, size: int, seed: int) -> list[Conversation]:
    """``live_irrelevance`` requests answered without a call (its environment's gold turn)."""
    from tooluse.envs import environment_registry

    env = environment_registry.get(
        name="bfcl:live_irrelevance",
        split=split,
        sample=size,
        seed=seed,
        max_doc_chars=MAX_DOC_CHARS,
        max_request_chars=MAX_REQUEST_CHARS,
    )
    conversations = []
    for index, task in enumerate(env.tasks):
        state, _ = env.reset(options={"task_index": index})
        system = state.observation.system_prompt
        messages = (
            *([ChatMessage.system(system)] if system else []),
            ChatMessage.user(task.prompt),
            ChatMessage(role="assistant", content=NO_TOOL_REPLY),
        )
        conversations.append(
            Conversation(
                messages=messages, tools=env.available_tools(index, {}), source=f"bfcl:{task.id}"
            )
        )
    return conversations


def first_turn(entry: Any, rng: random.Random) -> Conversation | None:
    from tooluse.evals.bfcl.world import function_docs, ground_truth_calls

    calls = ground_truth_calls(entry)[0] if entry.ground_truth else []
    if not calls or not entry.turns[0]:
        return None
    docs = {doc["name"]: doc for doc in function_docs(entry.involved_classes)}
    called = list(dict.fromkeys(name for name, _ in calls))
    if any(name not in docs for name in called):
        return None
    others = [name for name in docs if name not in called]
    chosen = list(called)
    for name in rng.sample(others, len(others)):  # decoys while the docs fit
        if len(chosen) - len(called) == DECOYS:
            break
        if len(json.dumps([docs[n] for n in (*chosen, name)])) <= MAX_DOC_CHARS:
            chosen.append(name)
    rng.shuffle(chosen)
    tools = _tools([docs[name] for name in chosen])
    if tools is None:
        return None
    reply = ChatMessage(
        role="assistant",
        tool_calls=tuple(ToolCall(name=name, arguments=arguments) for name, arguments in calls),
    )
    user = ChatMessage(role="user", content=entry.turns[0])
    return Conversation(messages=(user, reply), tools=tools, source=f"bfcl:{entry.id}/turn0")


def _multi_turn_calls(split: str, size: int, seed: int) -> list[Conversation]:
    from tooluse.evals.bfcl.world import multi_turn_split_entries

    rng = random.Random(seed)
    conversations = []
    for entry in multi_turn_split_entries("multi_turn_base", split):  # the environment's split
        conversation = first_turn(entry, rng)
        if conversation is not None:
            conversations.append(conversation)
        if len(conversations) == size:
            break
    return conversations


def _relevant_requests(split: str) -> list[RelevanceCase]:
    from tooluse.evals.bfcl.data import load_bfcl_category, select_entries

    cases = []
    for category in RELEVANT_CATEGORIES:
        for entry in select_entries(load_bfcl_category(category), split=split):
            usable = _single_turn(entry)
            if usable is None:
                continue
            tools, messages = usable
            if len(messages[-1].content) <= MAX_REQUEST_CHARS:
                cases.append(
                    RelevanceCase(
                        request=messages[-1].content,
                        tools=tools,
                        needs_tool=True,
                        source=f"bfcl:{entry.id}",
                    )
                )
    return cases


def bfcl_relevance_cases(split: str = "train", seed: int = 0) -> list[RelevanceCase]:
    """The cases of ``bfcl:relevance`` in its order: as many that need a tool as not, shuffled
    with ``seed`` (so a prefix keeps both in about equal numbers)."""
    rng = random.Random(seed)
    yes = cases_from_conversations(_multi_turn_calls(split, 10**6, seed)) + _relevant_requests(
        split
    )
    irrelevant = cases_from_conversations(_irrelevance(split, len(yes) // 2, seed))
    no = irrelevant + mismatched(yes, rng)[: len(yes) - len(irrelevant)]
    cases = yes + no
    rng.shuffle(cases)
    return cases


def _relevance(split: str, size: int, seed: int) -> list[Conversation]:
    return relevance_conversations(bfcl_relevance_cases(split, seed)[:size])


def bfcl_teacher_conversations(
    teacher: str, *, split: str = "train", size: int = 200, seed: int = 0
) -> list[Conversation]:
    """At most ``size`` conversations of ``teacher`` (one of :data:`BFCL_TEACHERS`) on the
    ``split`` entries."""
    if teacher == "bfcl:multi_turn_calls":
        return _multi_turn_calls(split, size, seed)
    if teacher == "bfcl:relevance":
        return _relevance(split, size, seed)
    raise ValueError(f"no BFCL teacher {teacher!r}; teachers: {', '.join(BFCL_TEACHERS)}")
