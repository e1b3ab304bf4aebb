"""``ScriptedBackend``: replays given turns, for deterministic tests of tool-using code."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Union

from tooluse.messages import ChatMessage, ToolCall, Usage
from tooluse.providers.base import (
    BaseBackend,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    StreamItem,
    ToolChoice,
    result_events,
)
from tooluse.tools.definition import ToolDefinition

__all__ = ["ScriptedBackend", "ScriptedRequest"]

ScriptedTurn = Union[str, Sequence[ToolCall], GenerationResult]


@dataclass(frozen=True, kw_only=True)
class ScriptedRequest:
    """What the backend was asked, kept for assertions."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolDefinition, ...]
    params: SamplingParams | None
    tool_choice: ToolChoice


class ScriptedBackend(BaseBackend):
    """Answers each request with the next scripted turn.

    Each turn is a final text (``str``), a list of :class:`ToolCall`, or a full
    :class:`GenerationResult`. Running out of turns raises ``IndexError`` naming the request.
    Every request is recorded in ``requests``.
    """

    def __init__(
        self,
        responses: Sequence[ScriptedTurn],
        *,
        capabilities: ModelCapabilities | None = None,
        name: str = "scripted",
    ) -> None:
        self._responses = list(responses)
        self._next = 0
        self._capabilities = capabilities or ModelCapabilities()
        self.name = name
        self.requests: list[ScriptedRequest] = []

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    @property
    def remaining(self) -> int:
        return len(self._responses) - self._next

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """The next scripted turn (the request is recorded first)."""
        self.requests.append(
            ScriptedRequest(
                messages=tuple(messages), tools=tuple(tools), params=params, tool_choice=tool_choice
            )
        )
        if self._next >= len(self._responses):
            raise IndexError(
                f"ScriptedBackend has no response left for request #{len(self.requests)}"
            )
        turn = self._responses[self._next]
        self._next += 1
        return _to_result(turn)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return self.generate(messages, tools, params, tool_choice)

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        """The next scripted turn as events (replaying a script needs no thread)."""
        return result_events(self.generate(messages, tools, params, tool_choice))


def _to_result(turn: ScriptedTurn) -> GenerationResult:
    if isinstance(turn, GenerationResult):
        return turn
    usage = Usage(requests=1)
    if isinstance(turn, str):
        return GenerationResult(text=turn, usage=usage, finish_reason="stop")
    calls = tuple(turn)
    if not all(isinstance(c, ToolCall) for c in calls):
        raise TypeError("a scripted turn is a str, a list of ToolCall or a GenerationResult")
    return GenerationResult(tool_calls=calls, usage=usage, finish_reason="tool_calls")
