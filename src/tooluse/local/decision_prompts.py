"""The text the deciders read, apart from their scoring (which needs numpy and a model): the
request a decision is about and the yes/no question, shared with the relevance teacher of
:mod:`tooluse.train.relevance`, which trains on exactly these words."""

from __future__ import annotations

from collections.abc import Sequence

from tooluse.messages import ChatMessage
from tooluse.tools.definition import ToolDefinition

__all__ = ["MAX_REQUEST_CHARS", "NO", "YES", "latest_request", "yes_no_messages"]

MAX_REQUEST_CHARS = 600
YES, NO = "Yes", "No"


def yes_no_messages(request: str, tools: Sequence[ToolDefinition]) -> tuple[ChatMessage, ...]:
    """The question :class:`~tooluse.local.decision.YesNoDecider` asks, as messages: the
    tools with their descriptions in the system message, the request (its last
    ``MAX_REQUEST_CHARS`` characters) in the user's."""
    listing = "; ".join(f"{t.name}: {t.description}" for t in tools)
    line = " ".join(request.split())[-MAX_REQUEST_CHARS:]
    question = (
        f"Question: {line}\nDoes answering this question need one of the tools? "
        f"Answer {YES} or {NO}."
    )
    return (
        ChatMessage(
            role="system", content=f"You decide if a question needs a tool. Tools: {listing}"
        ),
        ChatMessage(role="user", content=question),
    )


def latest_request(messages: Sequence[ChatMessage]) -> tuple[str, bool]:
    """The text of the latest user message, and whether tool results followed it."""
    answered = False
    for message in reversed(messages):
        if message.role == "tool":
            answered = True
        elif message.role == "user":
            return message.content, answered
    return "", answered
