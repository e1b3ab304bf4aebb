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


class _Run:
    """Text or reasoning still growing; pieces are joined once, at build time."""

    __slots__ = ("kind", "pieces")

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.pieces = [text]

    def part(self) -> AssistantPart:
        text = "".join(self.pieces)
        return TextPart(text=text) if self.kind == "text" else ReasoningPart(text=text)


class TurnBuilder:
    """Collects parts in arrival order; ``slot``s hold calls whose arguments are still streaming."""

    def __init__(self) -> None:
        self._parts: list[AssistantPart | _Run | None] = []

    def _add(self, kind: str, text: str, state: ProviderState | None) -> None:
        if not text and state is None:
            return
        last = self._parts[-1] if self._parts else None
        if state is None and isinstance(last, _Run) and last.kind == kind:
            last.pieces.append(text)
        elif state is None:
            self._parts.append(_Run(kind, text))
        elif kind == "text":
            self._parts.append(TextPart(text=text, state=state))
        else:
            self._parts.append(ReasoningPart(text=text, state=state))

    def text(self, text: str, state: ProviderState | None = None) -> None:
        self._add("text", text, state)

    def reasoning(self, text: str, state: ProviderState | None = None) -> None:
        self._add("reasoning", text, state)

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
        self,
        *,
        finish_reason: str,
        usage: Usage,
        raw: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> GenerationResult:
        parts = tuple(p.part() if isinstance(p, _Run) else p for p in self._parts if p is not None)
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
