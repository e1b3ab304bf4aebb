"""The model seam: :class:`Backend`, the :class:`BaseBackend` every backend builds on, and the
result types of one request.

A backend turns a list of :class:`ChatMessage` plus tool definitions into one assistant turn
(:class:`GenerationResult`). The contract is one async method, :meth:`BaseBackend.agenerate`;
:class:`BaseBackend` derives the blocking call (``generate``) and the streamed ones (``stream``,
``astream``) from it, and a backend overrides only what it does natively (the HTTP backends
stream from the wire, the local model generates in its own thread). HTTP backends, the local
llama.cpp backend, ``TextToolsBackend`` and the scripted test backend are all ``BaseBackend``s.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, Union, runtime_checkable

from tooluse.errors import BackendError
from tooluse.events import ParseError, StreamEvent, TextDelta, ToolCallFinished, ToolCallStarted
from tooluse.messages import ChatMessage, ToolCall, Usage
from tooluse.sync_bridge import iter_async_on_thread, run_coroutine_blocking
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ProviderProgram",
    "Backend",
    "BaseBackend",
    "as_backend",
    "GenerationDone",
    "GenerationResult",
    "ModelCapabilities",
    "SamplingParams",
    "StreamingBackend",
    "StreamItem",
    "ToolChoice",
    "final_result",
    "result_events",
    "turn_events",
    "without_media",
]

log = logging.getLogger("tooluse.providers")

# "auto" | "none" | "required" | a tool name (forces that tool)
ToolChoice = Union[Literal["auto", "none", "required"], str]


@dataclass(frozen=True, kw_only=True)
class SamplingParams:
    """Sampling settings and request options; ``None`` leaves the backend's default.

    ``cache_tools`` puts a prompt-cache breakpoint after the tool definitions where the
    provider takes one (Anthropic ``cache_control``, Bedrock ``cachePoint``; OpenAI and Gemini
    cache on their own). ``deferred_tools`` names tools the provider's own tool search loads on
    demand (sent marked deferred, with the provider's search tool); the loop sets it for a
    :class:`~tooluse.retrieval.tool_search.ToolSearch` when the backend
    ``supports_tool_search``, and wires without tool search send every tool as usual.
    ``code_execution`` lets the provider run the model's programs (its own code mode: Claude's
    programmatic tool calling, OpenAI Responses'): each tool goes out with the callers of
    :meth:`~tooluse.tools.definition.ToolDefinition.code_mode_callers`, and the calls a
    program makes come back as calls whose ``caller`` names it; the loop sets it for
    ``code_mode=CodeMode(provider=True)`` when the backend ``supports_code_execution``.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    parallel_tool_calls: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    cache_tools: bool = False
    deferred_tools: frozenset[str] = frozenset()
    code_execution: bool = False


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
    # Whether images and files in tool results can be sent (else their text placeholders are).
    supports_vision: bool = True
    # Whether the provider searches deferred tools itself (SamplingParams.deferred_tools).
    supports_tool_search: bool = False
    # Whether the provider runs programs that call the tools (SamplingParams.code_execution).
    supports_code_execution: bool = False


@dataclass(frozen=True, kw_only=True)
class ProviderProgram:
    """A program the provider runs for the model (its own code mode), as one turn shows it:
    ``code`` when the program started in the turn, ``output`` (and ``is_error``) once its
    result came. ``runner`` names the provider; the calls the program makes are the turn's
    calls whose ``caller`` is ``id``."""

    id: str
    runner: str
    code: str | None = None
    output: str | None = None
    is_error: bool = False


@dataclass(frozen=True, kw_only=True)
class GenerationResult:
    """One assistant turn as a backend returned it.

    ``finish_reason`` is normalised across providers: ``stop``, ``tool_calls`` (whenever the turn
    holds calls, whatever the provider said), ``length``, ``content_filter``, ``refusal``,
    ``pause_turn`` or ``malformed_tool_call`` (the model emitted a call that could not be read;
    worth a retry). ``message`` keeps the ordered parts and provider state for replay.
    ``parse_errors`` are the calls a text-format model wrote that could not be read; the loop
    sends them back to the model when the turn holds no call.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    parse_errors: tuple[ParseError, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    message: ChatMessage | None = None
    raw: Any = field(default=None, repr=False, compare=False)
    #: Programs the provider ran or started in this turn (its own code mode).
    programs: tuple[ProviderProgram, ...] = ()

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


#: What a streamed turn yields: stream events, then one :class:`GenerationDone`.
StreamItem = Union[StreamEvent, GenerationDone]


def final_result(events: Iterable[Any]) -> GenerationResult:
    """The turn a stream of events ends with (its :class:`GenerationDone`)."""
    for event in events:
        if isinstance(event, GenerationDone):
            return event.result
    raise BackendError("the generation ended without a result")


def without_media(messages: Sequence[ChatMessage], model: str) -> list[ChatMessage]:
    """``messages`` with the images and files of tool results left out (their text
    placeholders stay), for a model without vision; says so once in the log."""
    out, dropped = [], 0
    for message in messages:
        result = message.result
        if result is not None and result.media:
            dropped += len(result.media)
            message = dataclasses.replace(message, result=dataclasses.replace(result, parts=()))
        out.append(message)
    if dropped:
        log.warning(
            "%s has no vision: %d image(s)/file(s) of tool results were sent as text placeholders",
            model or "the model",
            dropped,
        )
    return out


def turn_events(
    errors: Sequence[ParseError], text: str, calls: Sequence[ToolCall]
) -> Iterator[StreamEvent]:
    """The stream events of a turn known whole: its parse errors, its text, its calls."""
    yield from errors
    if text:
        yield TextDelta(text=text)
    for index, call in enumerate(calls):
        yield ToolCallStarted(index=index, name=call.name, id=call.id)
        yield ToolCallFinished(index=index, call=call)


def result_events(result: GenerationResult) -> Iterator[StreamItem]:
    """A whole turn replayed as the events a stream of it would have given, ending with its
    :class:`GenerationDone` (how a backend that cannot stream answers ``stream``)."""
    yield from turn_events(result.parse_errors, result.text, result.tool_calls)
    yield GenerationDone(result=result)


@runtime_checkable
class Backend(Protocol):
    """A model that answers a conversation, possibly with tool calls: what the loop, the
    structured extraction, the evaluations and the server call. Build one on
    :class:`BaseBackend`."""

    @property
    def capabilities(self) -> ModelCapabilities: ...

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult: ...

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult: ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]: ...

    def astream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamItem]: ...


#: The old name of a backend that streams; every :class:`Backend` streams now.
StreamingBackend = Backend


class BaseBackend(abc.ABC):
    """The base of every backend: implement :meth:`agenerate`; the rest is derived.

    - ``generate``: ``agenerate`` run to completion (on a fresh event loop, in a helper thread
      when called from inside a running loop). Override it when the backend has a native
      blocking call (an HTTP client, a model in this process).
    - ``astream``: ``agenerate``'s turn replayed as events. Override it to stream for real.
    - ``stream``: ``astream`` driven on a thread of its own, its events handed over as they
      come, so a backend that streams asynchronously streams in blocking code too.

    Every streamed turn ends with :class:`GenerationDone` holding the whole turn. The names of
    earlier releases (``generate_with_tools``, ``agenerate_with_tools``, ``stream_with_tools``,
    ``astream_with_tools``) call these; a subclass written against them (overriding
    ``generate_with_tools``, say) has that method serve the new name too.
    """

    # The new names a subclass serves with its earlier-name methods (see __init_subclass__).
    _tooluse_aliased: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Runs before ABCMeta counts the abstract methods, so a subclass that overrides only
        # ``agenerate_with_tools`` is complete.
        aliased = set()
        for old, new in _LEGACY_NAMES.items():
            if callable(cls.__dict__.get(old)) and new not in cls.__dict__:
                setattr(cls, new, cls.__dict__[old])
                aliased.add(new)
        # Kept on the class itself (not in a registry of this process), so that a class sent
        # by value to another process (Ray pickles test classes so) still knows its aliases.
        cls._tooluse_aliased = frozenset(aliased)

    @property
    def capabilities(self) -> ModelCapabilities:
        """What the backend does natively (everything, unless a backend says otherwise)."""
        return _ALL_CAPABILITIES

    @abc.abstractmethod
    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """One assistant turn (text and/or tool calls) for ``messages``, offering ``tools``."""

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """The blocking :meth:`agenerate`."""
        return run_coroutine_blocking(self.agenerate(messages, tools, params, tool_choice))

    async def astream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamItem]:
        """The turn as stream events, ending with :class:`GenerationDone`."""
        result = await self.agenerate(messages, tools, params, tool_choice)
        for item in result_events(result):
            yield item

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        """The blocking :meth:`astream`: its events as they come."""
        return iter_async_on_thread(lambda: self.astream(messages, tools, params, tool_choice))

    # -- the names of earlier releases --------------------------------------------------------

    def generate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """Same as :meth:`generate`."""
        method: Any = _own(self, "generate")
        return method(messages, tools, params, tool_choice)  # type: ignore[no-any-return]

    async def agenerate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """Same as :meth:`agenerate`."""
        method: Any = _own(self, "agenerate")
        return await method(messages, tools, params, tool_choice)  # type: ignore[no-any-return]

    def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        """Same as :meth:`stream`."""
        method: Any = _own(self, "stream")
        return method(messages, tools, params, tool_choice)  # type: ignore[no-any-return]

    def astream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamItem]:
        """Same as :meth:`astream`."""
        method: Any = _own(self, "astream")
        return method(messages, tools, params, tool_choice)  # type: ignore[no-any-return]


_ALL_CAPABILITIES = ModelCapabilities()


def _own(backend: BaseBackend, name: str) -> Any:
    """``backend``'s method ``name``, skipping aliased earlier-name methods: when such a method
    calls ``super().generate_with_tools(...)``, that reaches the implementation above it
    rather than itself again."""
    for klass in type(backend).__mro__:
        found = klass.__dict__.get(name)
        if found is not None and name not in klass.__dict__.get("_tooluse_aliased", ()):
            return found.__get__(backend, type(backend))
    raise AttributeError(name)  # pragma: no cover - BaseBackend defines every name


_LEGACY_NAMES = {
    "generate_with_tools": "generate",
    "agenerate_with_tools": "agenerate",
    "stream_with_tools": "stream",
    "astream_with_tools": "astream",
}


class _LegacyBackend(BaseBackend):
    """An object written to the interface of earlier releases (``generate_with_tools`` and
    friends, no ``agenerate``), seen through :class:`Backend`."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        self.name = getattr(wrapped, "name", None) or type(wrapped).__name__

    @property
    def capabilities(self) -> ModelCapabilities:
        found = getattr(self.wrapped, "capabilities", None)
        return found if isinstance(found, ModelCapabilities) else _ALL_CAPABILITIES

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        native = getattr(self.wrapped, "agenerate_with_tools", None)
        if native is not None:
            result: GenerationResult = await native(messages, tools, params, tool_choice)
            return result
        import asyncio

        return await asyncio.to_thread(self.generate, messages, tools, params, tool_choice)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        native = getattr(self.wrapped, "generate_with_tools", None)
        if native is None:
            return super().generate(messages, tools, params, tool_choice)
        result: GenerationResult = native(messages, tools, params, tool_choice)
        return result

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        native = getattr(self.wrapped, "stream_with_tools", None)
        if native is None:
            return result_events(self.generate(messages, tools, params, tool_choice))
        items: Iterator[StreamItem] = native(messages, tools, params, tool_choice)
        return items

    async def astream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamItem]:
        native = getattr(self.wrapped, "astream_with_tools", None)
        if native is None:
            for item in result_events(await self.agenerate(messages, tools, params, tool_choice)):
                yield item
            return
        async for item in native(messages, tools, params, tool_choice):
            yield item

    def __repr__(self) -> str:
        return repr(self.wrapped)


def as_backend(obj: Any) -> Backend:
    """``obj`` as a :class:`Backend`: itself when it is one; an object written to the earlier
    interface (``generate_with_tools``...) behind an adapter; anything else is refused."""
    if isinstance(obj, BaseBackend):
        return obj
    if all(callable(getattr(obj, name, None)) for name in _CONTRACT):
        return obj  # type: ignore[no-any-return]
    if callable(getattr(obj, "generate_with_tools", None)) or callable(
        getattr(obj, "agenerate_with_tools", None)
    ):
        return _LegacyBackend(obj)
    raise TypeError(
        f"{type(obj).__name__} is not a backend: build it on tooluse.BaseBackend (implement "
        "agenerate) or get one from tooluse.load_model"
    )


_CONTRACT = ("agenerate", "generate", "stream", "astream")
