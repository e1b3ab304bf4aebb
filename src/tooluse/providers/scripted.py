"""``ScriptedBackend``: replays given turns, for deterministic tests of tool-using code."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Union

from tooluse.events import TextDelta, ToolCallFinished, ToolCallStarted
from tooluse.messages import ChatMessage, ToolCall, Usage
from tooluse.providers.base import (
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ToolChoice,
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


class ScriptedBackend:
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

    def generate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
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

    async def agenerate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return self.generate_with_tools(messages, tools, params, tool_choice)

    def generate(
        self, messages: Sequence[ChatMessage], params: SamplingParams | None = None
    ) -> GenerationResult:
        """Plain text generation (no tools offered)."""
        return self.generate_with_tools(messages, (), params, "none")

    async def agenerate(
        self, messages: Sequence[ChatMessage], params: SamplingParams | None = None
    ) -> GenerationResult:
        return self.generate(messages, params)

    def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[object]:
        result = self.generate_with_tools(messages, tools, params, tool_choice)
        if result.text:
            yield TextDelta(text=result.text)
        for index, call in enumerate(result.tool_calls):
            yield ToolCallStarted(index=index, name=call.name, id=call.id)
            yield ToolCallFinished(index=index, call=call)
        yield GenerationDone(result=result)

    async def astream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[object]:
        """Async :meth:`stream_with_tools`."""
        for event in self.stream_with_tools(messages, tools, params, tool_choice):
            yield event


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
