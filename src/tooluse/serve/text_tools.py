"""Tool calls for a model that has none natively: tools go into the prompt in a text format and
calls are read back from the reply, while it streams.

``TextToolsBackend(upstream, get_parser("hermes"))`` is a backend like any other: with ``tooluse
serve --model openai-compatible:URL --format hermes`` it adds OpenAI-style tool calls to a server
that only returns text.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from tooluse.events import StreamEvent, TextDelta
from tooluse.formats.base import collect_events
from tooluse.loop_core import text_mode_view
from tooluse.messages import ChatMessage, Usage
from tooluse.providers.base import (
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ToolChoice,
    final_result,
)
from tooluse.tools.definition import ToolDefinition

__all__ = ["TextToolsBackend"]


class TextToolsBackend:
    """``upstream`` (any backend) with tool calls written and read in ``parser``'s text format."""

    def __init__(self, upstream: Any, parser: Any) -> None:
        self.upstream = upstream
        self.parser = parser
        self.name = getattr(upstream, "model", None) or getattr(upstream, "name", "") or ""

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(supports_error_results=False)

    def _view(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        tool_choice: ToolChoice,
    ) -> tuple[ChatMessage, ...]:
        if not tools or tool_choice == "none":
            return text_mode_view(messages, "", "auto", self.parser) if tools else tuple(messages)
        return text_mode_view(messages, self.parser.format_tools(tools), tool_choice, self.parser)

    def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamEvent | GenerationDone]:
        """The upstream's text, parsed as it arrives; ends with :class:`GenerationDone`."""
        view = self._view(messages, tools, tool_choice)
        machine = self.parser.stream(tools if tool_choice != "none" else ())
        events: list[StreamEvent] = []
        upstream_result: GenerationResult | None = None
        stream = getattr(self.upstream, "stream_with_tools", None)
        if callable(stream):
            for event in stream(view, (), params, "none"):
                if isinstance(event, GenerationDone):
                    upstream_result = event.result
                elif isinstance(event, TextDelta):
                    for parsed in machine.feed(event.text):
                        events.append(parsed)
                        yield parsed
        else:
            upstream_result = self.upstream.generate_with_tools(view, (), params, "none")
            for parsed in machine.feed(upstream_result.text):
                events.append(parsed)
                yield parsed
        for parsed in machine.close():
            events.append(parsed)
            yield parsed
        yield GenerationDone(result=self._result(events, upstream_result))

    def _result(
        self, events: Sequence[StreamEvent], upstream: GenerationResult | None
    ) -> GenerationResult:
        parsed = collect_events(events)
        usage = upstream.usage if upstream is not None else Usage()
        finish = (
            "tool_calls" if parsed.tool_calls else (upstream.finish_reason if upstream else "stop")
        )
        text = parsed.text.strip()  # the blank line a model writes before its calls
        message = ChatMessage(
            role="assistant",
            content=text,
            tool_calls=parsed.tool_calls,
            reasoning=parsed.reasoning,
            # what the model wrote, so the next turn's prompt replays its own text
            metadata={"raw_text": upstream.text if upstream is not None else parsed.text},
        )
        return GenerationResult(
            text=text,
            tool_calls=parsed.tool_calls,
            reasoning=parsed.reasoning,
            usage=usage,
            finish_reason=finish,
            message=message,
            raw={"parse_errors": [e.message for e in parsed.errors]},
        )

    def generate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return final_result(self.stream_with_tools(messages, tools, params, tool_choice))

    async def agenerate_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return await asyncio.to_thread(
            self.generate_with_tools, messages, tools, params, tool_choice
        )

    async def astream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamEvent | GenerationDone]:
        events = await asyncio.to_thread(
            lambda: list(self.stream_with_tools(messages, tools, params, tool_choice))
        )
        for event in events:
            yield event

    def __repr__(self) -> str:
        return f"TextToolsBackend({self.upstream!r}, {self.parser!r})"
