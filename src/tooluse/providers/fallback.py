"""``FallbackBackend``: several backends in order; when one fails, the next answers.

::

    backend = FallbackBackend([load_model("openai:gpt-4o"), load_model("anthropic:claude-sonnet-4-5")])

Which failures move on is configurable (``fall_back_on``, by default every
:class:`~tooluse.errors.BackendError`: HTTP errors, timeouts, broken streams); any other error
is raised at once. When every backend fails, :class:`FallbackError` lists each cause in order.
A stream falls back only while it has sent nothing: once events went out, its error is raised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from tooluse.errors import BackendError
from tooluse.messages import ChatMessage
from tooluse.providers.base import (
    Backend,
    BaseBackend,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    StreamItem,
    ToolChoice,
    as_backend,
)
from tooluse.tools.definition import ToolDefinition

__all__ = ["FallbackBackend", "FallbackError"]


class FallbackError(BackendError):
    """Every backend of a :class:`FallbackBackend` failed; ``causes`` holds ``(backend label,
    exception)`` for each, in the order they were tried."""

    def __init__(self, causes: Sequence[tuple[str, BaseException]]) -> None:
        lines = "; ".join(
            f"{n}. {label}: {type(exc).__name__}: {exc}" for n, (label, exc) in enumerate(causes, 1)
        )
        super().__init__(f"every backend failed: {lines}")
        self.causes = tuple(causes)


def _label(backend: Backend) -> str:
    for attribute in ("model_spec", "model", "name"):
        value = getattr(backend, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(backend).__name__


class FallbackBackend(BaseBackend):
    """``backends`` tried in order for each request; the first answer wins.

    ``fall_back_on``: the exception types that move on to the next backend (default
    ``BackendError``); ``should_fall_back(exc)`` decides instead when given. ``capabilities``
    are what every backend can do, so a request never asks a fallback for more than it has.
    """

    def __init__(
        self,
        backends: Sequence[Any],
        *,
        fall_back_on: tuple[type[BaseException], ...] = (BackendError,),
        should_fall_back: Callable[[BaseException], bool] | None = None,
    ) -> None:
        if not backends:
            raise ValueError("FallbackBackend needs at least one backend")
        self.backends = tuple(as_backend(b) for b in backends)
        self.fall_back_on = fall_back_on
        self.should_fall_back = should_fall_back
        self.name = " -> ".join(_label(b) for b in self.backends)

    @property
    def capabilities(self) -> ModelCapabilities:
        values = [dataclasses.asdict(b.capabilities) for b in self.backends]
        return ModelCapabilities(**{key: all(v[key] for v in values) for key in values[0]})

    def _failed(
        self, backend: Backend, exc: Exception, causes: list[tuple[str, BaseException]]
    ) -> None:
        """Keep ``exc`` as a cause and go on, or raise it when it is not one that counts."""
        moves_on = (
            self.should_fall_back(exc)
            if self.should_fall_back is not None
            else isinstance(exc, self.fall_back_on)
        )
        if not moves_on:
            raise exc
        causes.append((_label(backend), exc))

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        causes: list[tuple[str, BaseException]] = []
        for backend in self.backends:
            try:
                return await backend.agenerate(messages, tools, params, tool_choice)
            except Exception as exc:
                self._failed(backend, exc, causes)
        raise FallbackError(causes)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        causes: list[tuple[str, BaseException]] = []
        for backend in self.backends:
            try:
                return backend.generate(messages, tools, params, tool_choice)
            except Exception as exc:
                self._failed(backend, exc, causes)
        raise FallbackError(causes)

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        causes: list[tuple[str, BaseException]] = []
        for backend in self.backends:
            sent = False
            try:
                for item in backend.stream(messages, tools, params, tool_choice):
                    sent = True
                    yield item
                return
            except Exception as exc:
                if sent:  # events went out: they cannot be taken back
                    raise
                self._failed(backend, exc, causes)
        raise FallbackError(causes)

    async def astream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamItem]:
        causes: list[tuple[str, BaseException]] = []
        for backend in self.backends:
            sent = False
            try:
                async for item in backend.astream(messages, tools, params, tool_choice):
                    sent = True
                    yield item
                return
            except Exception as exc:
                if sent:  # events went out: they cannot be taken back
                    raise
                self._failed(backend, exc, causes)
        raise FallbackError(causes)

    def __repr__(self) -> str:
        return f"FallbackBackend({list(self.backends)!r})"
