"""``bfcl:multi_turn_answers``: the text answer after tool results, written by another model.

Every other teacher ends on a call or on a scripted sentence (``The answer is N.``, ``Done.``),
so a model trained on them learns to call again after a result instead of saying what it
found. This teacher takes the first request of each ``multi_turn_base`` train entry (its
functions and decoys as in ``bfcl:multi_turn_calls``), runs the entry's ground-truth calls in
BFCL's own classes, and asks a *writer* model (the untouched base model by default) for the
reply that follows the results. A reply is kept when it is grounded: it ends on its own (not
cut at ``max_tokens``), calls nothing, is at most ``MAX_REPLY_CHARS`` of plain text (no code,
no call syntax), says at least one value of the results that neither the request nor the calls'
arguments hold (a file's content, a price, a list's entries), and has no number that the
request, the arguments and the results lack. Up to ``samples`` replies are drawn per request,
in order. Left out and listed: requests that are a multi-turn test item (the categories are
split together by entry number, but one request is asked under two numbers; checked before the
writer runs), requests whose functions do not fit a training sequence, results
with no new value (``mkdir`` returns ``None``), and requests never answered grounded.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.providers.base import Backend
from tooluse.train.conversation import Conversation

__all__ = [
    "RESULT_ANSWERS",
    "AnswerWriting",
    "grounded_reply",
    "new_values",
    "result_answers",
]

RESULT_ANSWERS = "bfcl:multi_turn_answers"
#: Shortest string value that counts as information (``"ok"``, ``"id"`` do not).
MIN_VALUE_CHARS = 3
#: A longer value counts as said when this many of its words in a row are in the reply.
WINDOW_WORDS = 5
#: Longest kept reply, in characters: a short answer, not an essay about the result.
MAX_REPLY_CHARS = 240
WRITER_PROMPT = (
    "You are a helpful assistant. The tool results below answer the user's request. "
    "Reply to the user in one or two short sentences that state what the results say."
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[a-z0-9]+(?:[.'_-][a-z0-9]+)*")


@dataclass(frozen=True, kw_only=True)
class AnswerWriting:
    """How the writer is asked: its model string, replies drawn per request, sampling."""

    writer: str = "local:base"
    samples: int = 8
    temperature: float = 0.7
    max_tokens: int = 80
    #: The writer's system prompt (not part of the kept conversation).
    prompt: str = WRITER_PROMPT


def _parsed(output: str) -> Any:
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(output)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return output


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _said(value: str, text: str, words: Sequence[str]) -> bool:
    """Whether ``value`` is in ``text`` (ignoring case): whole, or a run of its words."""
    if value.lower() in text.lower():
        return True
    own = _words(value)
    if len(own) < WINDOW_WORDS:
        return False
    joined = " " + " ".join(words) + " "
    return any(
        " " + " ".join(own[i : i + WINDOW_WORDS]) + " " in joined
        for i in range(len(own) - WINDOW_WORDS + 1)
    )


def new_values(outputs: Sequence[str], known: str) -> list[str]:
    """The scalar values of the tool ``outputs`` (JSON or Python literals, else the text itself)
    that ``known`` (the request and the call arguments) does not already hold."""
    # imported here: tooluse.local needs the local extra, which `tooluse train` names if missing
    from tooluse.local.grounding import scalar_leaves

    known_words = _words(known)
    found: list[str] = []
    for output in outputs:
        for leaf in scalar_leaves(_parsed(output)):
            if leaf is None or isinstance(leaf, bool):
                continue
            value = str(leaf).strip()
            if len(value) < MIN_VALUE_CHARS and not isinstance(leaf, int | float):
                continue
            if value and value not in found and not _said(value, known, known_words):
                found.append(value)
    return found


def _numbers(text: str) -> set[float]:
    found = set()
    for number in _NUMBER.findall(text):
        try:
            found.add(float(number.replace(",", "")))
        except ValueError:
            continue
    return found


def grounded_reply(reply: str, values: Sequence[str], evidence: str) -> bool:
    """Whether ``reply`` is short, plain text (no code, no call syntax), says at least one of
    ``values``, and has no number that ``evidence`` (request, arguments, results) lacks."""
    if len(reply) > MAX_REPLY_CHARS or "`" in reply or "(" in reply or "\n\n" in reply:
        return False
    if not _numbers(reply) <= _numbers(evidence):
        return False
    words = _words(reply)
    return any(_said(value, reply, words) for value in values)


def _messages(entry: Any, conversation: Conversation) -> tuple[list[ChatMessage], list[str]]:
    """The request, the gold calls and their results in the entry's fresh world."""
    from tooluse.evals.bfcl.world import ground_truth_world

    user, reply = conversation.messages
    calls = tuple(
        ToolCall(id=f"call_{i}", name=c.name, arguments=c.arguments)
        for i, c in enumerate(reply.tool_calls)
    )
    _, outputs = ground_truth_world(entry, 0)
    messages = [user, ChatMessage(role="assistant", tool_calls=calls)]
    messages += [
        ChatMessage.tool_result(ToolResult(call_id=c.id, tool_name=c.name, output=out))
        for c, out in zip(calls, outputs, strict=True)
    ]
    return messages, outputs


def _written(
    backend: Backend,
    messages: Sequence[ChatMessage],
    conversation: Conversation,
    how: AnswerWriting,
    seed: int,
    values: Sequence[str],
    evidence: str,
) -> str | None:
    """The writer's first grounded reply in ``how.samples`` draws, or None."""
    from tooluse.providers.base import SamplingParams

    asked = [ChatMessage.system(how.prompt), *messages] if how.prompt else list(messages)
    for draw in range(how.samples):
        params = SamplingParams(
            temperature=how.temperature, max_tokens=how.max_tokens, seed=seed * 1000 + draw
        )
        result = backend.generate(asked, conversation.tools, params, tool_choice="none")
        text = (result.text or "").strip()
        if result.tool_calls or not text or result.finish_reason == "length":
            continue
        if grounded_reply(text, values, evidence):
            return text
    return None


def _answered(
    entry: Any, asked: Conversation, backend: Backend, how: AnswerWriting, seed: int
) -> Conversation | str:
    """The entry's conversation with a grounded reply, or why it has none."""
    messages, outputs = _messages(entry, asked)
    known = messages[0].content + json.dumps([c.arguments for c in messages[1].tool_calls])
    values = new_values(outputs, known)
    if not values:
        return "the results hold nothing new"
    evidence = known + "\n".join(outputs)
    text = _written(backend, messages, asked, how, seed, values, evidence)
    if text is None:
        return f"no grounded reply in {how.samples} draws"
    return Conversation(
        messages=(*messages, ChatMessage(role="assistant", content=text)),
        tools=asked.tools,
        source=f"bfcl:{entry.id}/turn0-answer",
    )


def result_answers(
    *,
    split: str = "train",
    size: int = 200,
    seed: int = 0,
    how: AnswerWriting | None = None,
    backend: Backend | None = None,
) -> tuple[list[Conversation], list[str]]:
    """At most ``size`` conversations (request, calls, results, grounded reply) of the
    ``split`` entries, and the entries left out (``"id (why)"``): among them those whose
    request is a test item of a multi-turn category (asked before the writer runs).
    ``backend`` writes instead of loading ``how.writer`` (and is left open)."""
    from tooluse.evals.bfcl.world import multi_turn_split_entries, multi_turn_test_requests
    from tooluse.providers.model_registry import load_model
    from tooluse.train.bfcl_teachers import first_turn

    how = how or AnswerWriting()
    rng = random.Random(seed)
    entries = multi_turn_split_entries("multi_turn_base", split)
    tested = multi_turn_test_requests()
    owned = backend is None
    writer = load_model(how.writer) if backend is None else backend
    conversations: list[Conversation] = []
    rejected: list[str] = []
    try:
        for number, entry in enumerate(entries):
            if len(conversations) == size:
                break
            asked = first_turn(entry, rng)
            if asked is None:
                rejected.append(f"{entry.id} (its functions do not fit)")
                continue
            if asked.messages[0].content.strip() in tested:
                rejected.append(f"{entry.id} (its request is a multi-turn test item)")
                continue
            answered = _answered(entry, asked, writer, how, seed + number)
            if isinstance(answered, str):
                rejected.append(f"{entry.id} ({answered})")
            else:
                conversations.append(answered)
    finally:
        close = getattr(writer, "close", None)
        if owned and callable(close):
            close()
    return conversations, rejected
