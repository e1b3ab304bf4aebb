"""Conversation data: tool calls, tool results, chat messages and token usage.

All types are frozen dataclasses; build new ones with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ChatMessage", "Role", "ToolCall", "ToolResult", "Usage", "new_call_id"]

Role = Literal["system", "user", "assistant", "tool"]


def new_call_id() -> str:
    """A fresh tool call id, valid for every provider's id pattern (``call_`` + 24 hex)."""
    return "call_" + uuid.uuid4().hex[:24]


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

    def arguments_json(self) -> str:
        """The arguments as compact JSON text (the raw text when it could not be decoded)."""
        if self.raw_arguments is not None and not self.arguments:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """The outcome of one tool call; exactly one per call id."""

    call_id: str
    tool_name: str
    output: str
    is_error: bool = False
    structured: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def success(
        cls, call_id: str, tool_name: str, output: Any, *, structured: Any = None, **metadata: Any
    ) -> ToolResult:
        """A successful result; non-string output is rendered as JSON (or ``str``)."""
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
    """Token counts; adding two gives the sum."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
        )


@dataclass(frozen=True, kw_only=True)
class ChatMessage:
    """One turn of a conversation.

    - ``role="assistant"`` may carry ``tool_calls`` and ``reasoning`` text.
    - ``role="tool"`` carries one ``result`` (its ``output`` is also the ``content``); build it
      with :meth:`ChatMessage.tool_result`.
    - ``metadata`` is free-form (the loop stores ``tool_trail`` there).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    result: ToolResult | None = None
    reasoning: str = ""
    name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.content is None:  # callers pass result.text, which may be None
            object.__setattr__(self, "content", "")
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

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
