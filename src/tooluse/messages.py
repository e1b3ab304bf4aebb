"""Conversation data: tool calls, tool results, chat messages and token usage.

All types are frozen dataclasses; build new ones with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from tooluse.media import File, Image, MediaPart

__all__ = [
    "AssistantPart",
    "ChatMessage",
    "ProviderState",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "Usage",
    "call_key",
    "new_call_id",
]

Role = Literal["system", "user", "assistant", "tool"]


# One shared encoder: json.dumps with options builds a new encoder per call (argument strings
# are encoded for every call of every replayed turn).
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def new_call_id() -> str:
    """A fresh tool call id, valid for every provider's id pattern (``call_`` + 24 hex)."""
    return "call_" + uuid.uuid4().hex[:24]


def call_key(call: ToolCall, sep: str = ":") -> str:
    """A call's identity for spotting repeats: its name, canonical arguments and undecoded
    text, whatever its id (``sep`` joins them; saved keys keep the separator they had)."""
    try:
        args = json.dumps(call.arguments, sort_keys=True, default=str)
    except (TypeError, ValueError):
        args = repr(call.arguments)
    return f"{call.name}{sep}{args}{sep}{call.raw_arguments or ''}"


@dataclass(frozen=True, kw_only=True)
class ProviderState:
    """Opaque state a provider wants back unchanged, tagged with the provider (and model) that issued it.

    Examples: an Anthropic thinking signature, a Gemini thought signature, an OpenAI Responses
    reasoning item. Adapters replay it only to the same provider (and model, when both are
    known) and drop it on a switch, because other providers reject or misread it.
    """

    provider: str
    model: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def replayable_to(self, provider: str, model: str = "") -> bool:
        """Whether this state may be sent to ``provider``/``model``."""
        if self.provider != provider:
            return False
        return not (self.model and model and self.model != model)


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A model's request to run one tool.

    ``arguments`` is the decoded argument object. When the model sent text that is not a JSON
    object, ``arguments`` is ``{}`` and ``raw_arguments`` keeps the text so that validation can
    report it to the model instead of losing it.
    """

    id: str = field(default_factory=new_call_id)
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    # Provider-specific state attached to the call (a Gemini thought signature, a Responses item id).
    state: ProviderState | None = field(default=None, compare=False, repr=False)
    # True when the provider sent no id and tooluse minted one; never echoed back to that provider.
    synthetic_id: bool = field(default=False, compare=False)
    #: The program that made this call (code mode: the id of the model's program, tooluse's own
    #: or a provider's); ``None`` for a call the model made itself.
    caller: str | None = None

    def arguments_json(self) -> str:
        """The arguments as compact JSON text (the raw text when it could not be decoded)."""
        if self.raw_arguments is not None and not self.arguments:
            return self.raw_arguments
        return _COMPACT_JSON.encode(self.arguments)


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """The outcome of one tool call; exactly one per call id.

    ``output`` is the text every model reads. ``parts`` is set when the tool returned images
    or files (alone or in a list with text): the providers with vision get those parts in
    their own form, and ``output`` holds the text with a placeholder for each image or file.
    """

    call_id: str
    tool_name: str
    output: str
    is_error: bool = False
    structured: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    parts: tuple[MediaPart, ...] = ()

    @property
    def media(self) -> tuple[Image | File, ...]:
        """The images and files among the parts."""
        return tuple(p for p in self.parts if not isinstance(p, str))

    @classmethod
    def success(
        cls, call_id: str, tool_name: str, output: Any, *, structured: Any = None, **metadata: Any
    ) -> ToolResult:
        """A successful result; non-string output is rendered as JSON (or ``str``); images and
        files (or a list holding some) become ``parts``."""
        parts = media_parts(output)
        if parts:
            return cls(
                call_id=call_id,
                tool_name=tool_name,
                output=parts_text(parts),
                metadata=dict(metadata),
                parts=parts,
            )
        return cls(
            call_id=call_id,
            tool_name=tool_name,
            output=render_output(output),
            structured=output if structured is None and not isinstance(output, str) else structured,
            metadata=dict(metadata),
        )

    @classmethod
    def failure(cls, call_id: str, tool_name: str, error: Any, **metadata: Any) -> ToolResult:
        """A failed result; ``error`` (text or exception) becomes ``error: ...`` for the model."""
        if isinstance(error, BaseException):
            text = getattr(error, "model_message", None) or f"{type(error).__name__}: {error}"
        else:
            text = str(error)
        if not text.startswith("error:"):
            text = f"error: {text}"
        return cls(
            call_id=call_id,
            tool_name=tool_name,
            output=text,
            is_error=True,
            metadata=dict(metadata),
        )


def media_parts(output: Any) -> tuple[MediaPart, ...]:
    """``output`` as result parts when it holds images or files (else ``()``): an image or a
    file alone, or a list of them and texts (other items are rendered as text)."""
    if isinstance(output, (Image, File)):
        return (output,)
    if isinstance(output, (list, tuple)) and any(isinstance(o, (Image, File)) for o in output):
        return tuple(o if isinstance(o, (str, Image, File)) else render_output(o) for o in output)
    return ()


def parts_text(parts: tuple[MediaPart, ...]) -> str:
    """The text of result parts, each image or file as its placeholder."""
    return "\n".join(p if isinstance(p, str) else p.placeholder() for p in parts)


def render_output(output: Any) -> str:
    """Tool output as text: strings unchanged, JSON-able values as JSON, anything else ``str``."""
    if isinstance(output, str):
        return output
    if output is None:
        return ""
    try:
        return json.dumps(output, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError):
        return str(output)


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Token counts and, when the model's price is known, the cost in USD; adding two gives
    the sum (a cost is known once any part of it is).

    ``input_tokens`` counts every prompt token; ``cache_read_tokens`` and
    ``cache_write_tokens`` are the part of them the provider read from or wrote to its prompt
    cache (0 when it reported none).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost: float | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost is not None or other.cost is not None:
            cost = (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
            cost=cost,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True, kw_only=True)
class ReasoningPart:
    """Reasoning the model showed (``text``) and/or opaque reasoning ``state`` to replay."""

    text: str = ""
    state: ProviderState | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class TextPart:
    """Visible assistant text; ``state`` holds e.g. a Gemini thought signature on that part."""

    text: str
    state: ProviderState | None = field(default=None, compare=False, repr=False)


AssistantPart = Union[ReasoningPart, TextPart, ToolCall]


@dataclass(frozen=True, kw_only=True)
class ChatMessage:
    """One turn of a conversation.

    - ``role="assistant"`` may carry ``tool_calls`` and ``reasoning`` text.
    - ``role="tool"`` carries one ``result`` (its ``output`` is also the ``content``); build it
      with :meth:`ChatMessage.tool_result`.
    - ``metadata`` is free-form (the loop stores ``tool_trail`` there).
    - ``parts`` keeps an assistant turn's exact order (reasoning, text, tool calls) and the
      provider-tagged reasoning state. When given, it wins; ``content``, ``tool_calls`` and
      ``reasoning`` are filled from it if left empty. When empty, :meth:`ordered_parts` derives
      the order reasoning, text, calls.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    result: ToolResult | None = None
    reasoning: str = ""
    name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    parts: tuple[AssistantPart, ...] = ()

    def __post_init__(self) -> None:
        if self.content is None:  # callers pass result.text, which may be None
            object.__setattr__(self, "content", "")
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if not isinstance(self.parts, tuple):
            object.__setattr__(self, "parts", tuple(self.parts))
        if self.parts:
            if not self.content:
                text = "".join(p.text for p in self.parts if isinstance(p, TextPart))
                object.__setattr__(self, "content", text)
            if not self.tool_calls:
                calls = tuple(p for p in self.parts if isinstance(p, ToolCall))
                object.__setattr__(self, "tool_calls", calls)
            if not self.reasoning:
                thought = "".join(p.text for p in self.parts if isinstance(p, ReasoningPart))
                object.__setattr__(self, "reasoning", thought)

    def ordered_parts(self) -> tuple[AssistantPart, ...]:
        """The assistant turn as ordered parts (``parts``, else reasoning, text, calls)."""
        if self.parts:
            return self.parts
        out: list[AssistantPart] = []
        if self.reasoning:
            out.append(ReasoningPart(text=self.reasoning))
        if self.content:
            out.append(TextPart(text=self.content))
        out.extend(self.tool_calls)
        return tuple(out)

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls, content: str = "", tool_calls: tuple[ToolCall, ...] | list[ToolCall] = ()
    ) -> ChatMessage:
        return cls(role="assistant", content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool_result(cls, result: ToolResult) -> ChatMessage:
        """The tool turn answering one call."""
        return cls(role="tool", content=result.output, result=result, name=result.tool_name)

    @property
    def tool_call_id(self) -> str | None:
        return self.result.call_id if self.result is not None else None
