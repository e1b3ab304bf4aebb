"""The training conversation: what every source of training data (SFT files, scripted
teachers) produces and :func:`tooluse.train.data.render_examples` turns into text."""

from __future__ import annotations

from dataclasses import dataclass

from tooluse.messages import ChatMessage
from tooluse.tools.definition import ToolDefinition

__all__ = ["Conversation"]


@dataclass(frozen=True, kw_only=True)
class Conversation:
    """One training conversation: messages, the tools offered, where it came from."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolDefinition, ...] = ()
    source: str = ""
