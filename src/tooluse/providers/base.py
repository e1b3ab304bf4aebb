"""The backend interface every model backend implements, and its result types.

A backend turns a list of :class:`ChatMessage` plus tool definitions into one assistant turn
(:class:`GenerationResult`). HTTP backends, the local llama.cpp backend and the scripted test
backend all implement :class:`Backend`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Union, runtime_checkable

from tooluse.errors import BackendError
from tooluse.events import StreamEvent
from tooluse.messages import ChatMessage, ToolCall, Usage
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "Backend",
    "GenerationDone",
    "GenerationResult",
    "ModelCapabilities",
    "SamplingParams",
    "ToolChoice",
    "final_result",
]

# "auto" | "none" | "required" | a tool name (forces that tool)
ToolChoice = Union[Literal["auto", "none", "required"], str]


@dataclass(frozen=True, kw_only=True)
class SamplingParams:
    """Sampling settings; ``None`` leaves the backend's default."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    parallel_tool_calls: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ModelCapabilities:
    """What a backend can do natively.

    A ``tool_choice`` the backend lacks is downgraded explicitly (with a logged warning) or
    refused with a clear error, never dropped silently.
    """

    supports_function_calling: bool = True
    supports_streaming: bool = True
    supports_parallel_tool_calls: bool = True
    supports_tool_choice_required: bool = True
    supports_tool_choice_none: bool = True
    supports_named_tool_choice: bool = True
    # Whether a tool result can be flagged as an error on the wire (else "Error: ..." text).
    supports_error_results: bool = True


@dataclass(frozen=True, kw_only=True)
class GenerationResult:
    """One assistant turn as a backend returned it.

    ``finish_reason`` is normalised across providers: ``stop``, ``tool_calls`` (whenever the turn
    holds calls, whatever the provider said), ``length``, ``content_filter``, ``refusal``,
    ``pause_turn`` or ``malformed_tool_call`` (the model emitted a call that could not be read;
    worth a retry). ``message`` keeps the ordered parts and provider state for replay.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    message: ChatMessage | None = None
    raw: Any = field(default=None, repr=False, compare=False)

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)

    def to_message(self) -> ChatMessage:
        """The assistant message to append to the history (``message`` when the backend set it)."""
        if self.message is not None:
            return self.message
        return ChatMessage(
            role="assistant",
            content=self.text,
            tool_calls=self.tool_calls,
            reasoning=self.reasoning,
        )


@dataclass(frozen=True, kw_only=True)
class GenerationDone:
    """Last event of a streamed generation: the whole turn."""

    result: GenerationResult


def final_result(events: Iterable[Any]) -> GenerationResult:
    """The turn a stream of events ends with (its :class:`GenerationDone`): how a streaming
    backend answers ``generate_with_tools``."""
    for event in events:
        if isinstance(event, GenerationDone):
            return event.result
    raise BackendError("the generation ended without a result")


@runtime_checkable
class Backend(Protocol):
    """A model that answers a conversation, possibly with tool calls."""

    @property
    def capabilities(self) -> ModelCapabilities: ...

    def generate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult: ...

    async def agenerate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult: ...


class StreamingBackend(Backend, Protocol):
    """A backend that can also stream a turn as events, ending with :class:`GenerationDone`."""

    def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamEvent | GenerationDone]: ...

    def astream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamEvent | GenerationDone]: ...
