"""The relevance teacher: the yes/no question of :class:`~tooluse.local.decision.YesNoDecider`
("does answering this question need one of the tools?") with its right answer.

These conversations are exactly the text that decider renders
(:func:`~tooluse.local.decision_prompts.yes_no_messages`), answered ``Yes`` or ``No``. Asking is a separate prompt from calling, so learning when to answer ``No`` does
not teach the call prompt to stop calling (which is what no-call replies under the tool prompt
did: the model learned the rate of no-call turns, not the rule).

- ``relevance:NAME``: the question asked of teacher ``NAME``'s conversations: ``Yes`` where
  the first reply calls a tool, ``No`` where it answers in text.
- ``bfcl:relevance`` (:func:`tooluse.train.bfcl_teachers.bfcl_teacher_conversations`): BFCL
  train entries of categories the held-out table never scores, with ``No`` cases made by
  :func:`mismatched`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from tooluse.local.decision_prompts import NO, YES, latest_request, yes_no_messages
from tooluse.messages import ChatMessage
from tooluse.tools.definition import ToolDefinition
from tooluse.train.conversation import Conversation

__all__ = [
    "RELEVANCE_PREFIX",
    "RelevanceCase",
    "cases_from_conversations",
    "mismatched",
    "relevance_conversations",
]

#: ``relevance:NAME`` asks the question of teacher ``NAME``'s conversations.
RELEVANCE_PREFIX = "relevance:"
_PICKS = 20  # random tries for a tool set that shares no name with the request's own


@dataclass(frozen=True, kw_only=True)
class RelevanceCase:
    """A request, the tools on offer, and whether answering it needs one of them."""

    request: str
    tools: tuple[ToolDefinition, ...]
    needs_tool: bool
    source: str = ""


def cases_from_conversations(conversations: Sequence[Conversation]) -> list[RelevanceCase]:
    """One case per conversation with tools: its first reply's request, and whether that reply
    calls a tool."""
    cases = []
    for conversation in conversations:
        messages = conversation.messages
        index = next((i for i, m in enumerate(messages) if m.role == "assistant"), None)
        if index is None or not conversation.tools:
            continue
        request, _ = latest_request(messages[:index])
        if request.strip():
            cases.append(
                RelevanceCase(
                    request=request,
                    tools=conversation.tools,
                    needs_tool=bool(messages[index].tool_calls),
                    source=conversation.source,
                )
            )
    return cases


def mismatched(cases: Sequence[RelevanceCase], rng: random.Random) -> list[RelevanceCase]:
    """Each ``Yes`` case's request again, with the tools of another ``Yes`` case that share no
    name with its own: a request the tools on offer cannot serve (BFCL's irrelevance category
    is made the same way). Cases with no such partner are left out."""
    needing = [case for case in cases if case.needs_tool]
    out = []
    for case in needing:
        names = {tool.name for tool in case.tools}
        for _ in range(_PICKS):
            other = rng.choice(needing)
            if names.isdisjoint(tool.name for tool in other.tools):
                out.append(
                    RelevanceCase(
                        request=case.request,
                        tools=other.tools,
                        needs_tool=False,
                        source=f"{case.source}+tools:{other.source}",
                    )
                )
                break
    return out


def relevance_conversations(cases: Sequence[RelevanceCase]) -> list[Conversation]:
    """The yes/no conversation of each case, in the decider's own words."""
    return [
        Conversation(
            messages=(
                *yes_no_messages(case.request, case.tools),
                ChatMessage(role="assistant", content=YES if case.needs_tool else NO),
            ),
            source=f"{RELEVANCE_PREFIX}{case.source}",
        )
        for case in cases
    ]
