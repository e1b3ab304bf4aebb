"""Builds one assistant turn (ordered parts, usage, finish reason) from decoded provider pieces.

Used by every adapter's response decoder and stream assembler, so that the resulting
:class:`GenerationResult` and its message look the same whatever the provider.
"""

from __future__ import annotations

from typing import Any

from tooluse.messages import (
    AssistantPart,
    ChatMessage,
    ProviderState,
    ReasoningPart,
    TextPart,
    ToolCall,
    Usage,
    new_call_id,
)
from tooluse.providers.base import GenerationResult
from tooluse.providers.wire_common import decode_arguments

__all__ = ["TurnBuilder", "make_call"]


def make_call(
    call_id: str | None, name: str, raw_arguments: Any, state: ProviderState | None = None
) -> ToolCall:
    """A :class:`ToolCall` from wire pieces; a missing id is minted and marked synthetic."""
    arguments, raw = decode_arguments(raw_arguments)
    return ToolCall(
        id=call_id or new_call_id(),
        name=name,
        arguments=arguments,
        raw_arguments=raw,
        state=state,
        synthetic_id=not call_id,
    )


class TurnBuilder:
    """Collects parts in arrival order; ``slot``s hold calls whose arguments are still streaming."""

    def __init__(self) -> None:
        self._parts: list[AssistantPart | None] = []

    def text(self, text: str, state: ProviderState | None = None) -> None:
        if not text and state is None:
            return
        last = self._parts[-1] if self._parts else None
        if isinstance(last, TextPart) and last.state is None and state is None:
            self._parts[-1] = TextPart(text=last.text + text)
        else:
            self._parts.append(TextPart(text=text, state=state))

    def reasoning(self, text: str, state: ProviderState | None = None) -> None:
        if not text and state is None:
            return
        last = self._parts[-1] if self._parts else None
        if isinstance(last, ReasoningPart) and last.state is None and state is None:
            self._parts[-1] = ReasoningPart(text=last.text + text)
        else:
            self._parts.append(ReasoningPart(text=text, state=state))

    def replace_last_reasoning_state(self, state: ProviderState) -> None:
        """Attach state (a signature that arrives after the text) to the latest reasoning part."""
        for i in range(len(self._parts) - 1, -1, -1):
            part = self._parts[i]
            if isinstance(part, ReasoningPart):
                self._parts[i] = ReasoningPart(text=part.text, state=state)
                return
        self._parts.append(ReasoningPart(state=state))

    def call(self, call: ToolCall) -> None:
        self._parts.append(call)

    def slot(self) -> int:
        """Reserve the position of a call that is still streaming; fill it with :meth:`fill`."""
        self._parts.append(None)
        return len(self._parts) - 1

    def fill(self, slot: int, call: ToolCall) -> None:
        self._parts[slot] = call

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self._parts if isinstance(p, ToolCall))

    def build(
        self, *, finish_reason: str, usage: Usage, raw: Any = None, metadata: dict | None = None
    ) -> GenerationResult:
        parts = tuple(p for p in self._parts if p is not None)
        message = ChatMessage(role="assistant", parts=parts, metadata=dict(metadata or {}))
        calls = message.tool_calls
        if calls and finish_reason == "stop":
            # Some providers (Gemini) say STOP even when the turn holds calls.
            finish_reason = "tool_calls"
        return GenerationResult(
            text=message.content,
            tool_calls=calls,
            reasoning=message.reasoning,
            usage=usage,
            finish_reason=finish_reason,
            message=message,
            raw=raw,
        )
