"""Tool calls for a model that has none natively: tools go into the prompt in a text format and
calls are read back from the reply, while it streams.

``TextToolsBackend(upstream, get_parser("hermes"))`` is a backend like any other. ``tooluse.run``
wraps a backend in it when the backend lacks native function calling and a
``tool_call_parser`` is given; with ``tooluse serve --model openai-compatible:URL --format
hermes`` it adds OpenAI-style tool calls to a server that only returns text.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from tooluse.events import StreamEvent, TextDelta
from tooluse.formats.base import ParsedToolResponse, ToolCallParser, collect_events
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage, new_call_id
from tooluse.providers.base import (
    BaseBackend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    StreamItem,
    ToolChoice,
    as_backend,
    final_result,
    turn_events,
)
from tooluse.tools.definition import ToolDefinition

__all__ = ["TextToolsBackend", "text_mode_view"]


class TextToolsBackend(BaseBackend):
    """``upstream`` (any backend) with tool calls written and read in ``parser``'s text format.

    The upstream is asked for plain text (no tools on the wire); the reply is parsed as it
    streams. Calls that could not be read come back as ``GenerationResult.parse_errors``; a
    call with no id gets a fresh one. ``message.metadata["raw_text"]`` keeps what the model
    wrote, so that the next prompt replays its own words.
    """

    def __init__(self, upstream: object, parser: ToolCallParser) -> None:
        self.upstream = as_backend(upstream)
        self.parser = parser
        self.name = getattr(upstream, "model", None) or getattr(upstream, "name", "") or ""

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(supports_error_results=False)

    def view(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        tool_choice: ToolChoice,
    ) -> tuple[ChatMessage, ...]:
        """The conversation as the upstream sees it (see :func:`text_mode_view`)."""
        if not tools or tool_choice == "none":
            return text_mode_view(messages, "", "auto", self.parser) if tools else tuple(messages)
        return text_mode_view(messages, self.parser.format_tools(tools), tool_choice, self.parser)

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        """The upstream's text, parsed as it arrives; ends with :class:`GenerationDone`."""
        reading = _Reading(self.parser, tools, tool_choice)
        for item in self.upstream.stream(self.view(messages, tools, tool_choice), (), params):
            yield from reading.feed(item)
        yield from reading.close()

    async def astream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamItem]:
        """Async :meth:`stream`: the upstream's async stream, parsed as it arrives."""
        reading = _Reading(self.parser, tools, tool_choice)
        view = self.view(messages, tools, tool_choice)
        async for item in self.upstream.astream(view, (), params):
            for event in reading.feed(item):
                yield event
        for closing in reading.close():
            yield closing

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return final_result(self.stream(messages, tools, params, tool_choice))

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        result: GenerationResult | None = None
        async for item in self.astream(messages, tools, params, tool_choice):
            if isinstance(item, GenerationDone):
                result = item.result
        return final_result([GenerationDone(result=result)] if result is not None else [])

    def __repr__(self) -> str:
        return f"TextToolsBackend({self.upstream!r}, {self.parser!r})"


class _Reading:
    """One turn of upstream text going through a parser's stream machine."""

    def __init__(self, parser: Any, tools: Sequence[ToolDefinition], choice: ToolChoice) -> None:
        offered = tuple(tools) if choice != "none" else ()
        stream = getattr(parser, "stream", None)
        # A parser with ``parse`` only reads the whole reply once it is complete.
        self.machine = stream(offered) if callable(stream) else None
        self.parser = parser
        self.offered = offered
        self.pieces: list[str] = []
        self.events: list[StreamEvent] = []
        self.upstream: GenerationResult | None = None
        self.streamed = False

    def feed(self, item: StreamItem) -> Iterator[StreamEvent]:
        if isinstance(item, GenerationDone):
            self.upstream = item.result
            if not self.streamed:  # an upstream that sent its text only at the end
                yield from self._text(item.result.text)
        elif isinstance(item, TextDelta):
            self.streamed = True
            yield from self._text(item.text)

    def close(self) -> Iterator[StreamItem]:
        if self.machine is not None:
            yield from self._parsed(self.machine.close())
            parsed = collect_events(self.events)
        else:
            parsed = self.parser.parse("".join(self.pieces), self.offered)
            yield from turn_events(parsed.errors, parsed.text, parsed.tool_calls)
        yield GenerationDone(result=self._result(parsed))

    def _text(self, text: str) -> Iterator[StreamEvent]:
        if self.machine is None:
            self.pieces.append(text)
            return
        yield from self._parsed(self.machine.feed(text))

    def _parsed(self, events: Iterable[StreamEvent]) -> Iterator[StreamEvent]:
        for event in events:
            self.events.append(event)
            yield event

    def _result(self, parsed: ParsedToolResponse) -> GenerationResult:
        upstream = self.upstream
        usage = upstream.usage if upstream is not None else Usage()
        calls = _with_ids(parsed.tool_calls)
        finish = "tool_calls" if calls else (upstream.finish_reason if upstream else "stop")
        text = parsed.text.strip()  # the blank line a model writes before its calls
        raw_text = upstream.text if upstream is not None else parsed.text
        message = ChatMessage(
            role="assistant",
            content=text,
            tool_calls=calls,
            reasoning=(upstream.reasoning if upstream else "") or parsed.reasoning,
            # what the model wrote, so the next turn's prompt replays its own text
            metadata={"raw_text": raw_text},
        )
        return GenerationResult(
            text=text,
            tool_calls=calls,
            reasoning=message.reasoning,
            parse_errors=tuple(parsed.errors),
            usage=usage,
            finish_reason=finish,
            message=message,
            raw={"parse_errors": [e.message for e in parsed.errors]},
        )


def _with_ids(calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    return tuple(
        call if call.id else dataclasses.replace(call, id=new_call_id(), synthetic_id=True)
        for call in calls
    )


def _tool_results_text(parser: Any, results: Sequence[ToolResult]) -> str:
    """Tool results as the text a model without native tools reads (the parser's own wording
    when it has ``format_tool_results``, else ``<tool_response>`` blocks as Hermes/Qwen use)."""
    render = getattr(parser, "format_tool_results", None)
    if callable(render):
        return str(render(list(results)))
    return "\n".join(f"<tool_response>\n{r.output}\n</tool_response>" for r in results)


def _calls_text(message: ChatMessage) -> str:
    """An assistant turn with calls but no recorded text (history from elsewhere), as text."""
    blocks = [
        "<tool_call>\n"
        + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
        + "\n</tool_call>"
        for c in message.tool_calls
    ]
    return "\n".join([message.content, *blocks]).strip()


def text_mode_view(
    history: Sequence[ChatMessage], tools_text: str, choice: ToolChoice, parser: Any
) -> tuple[ChatMessage, ...]:
    """The history as a model without native tools sees it: tools in the system prompt, its own
    turns as the text it wrote, and tool results as a user turn. Plain roles only, so the view
    is valid for any backend (no call ids to match)."""
    if choice == "required":
        tools_text += "\n\nYou must call at least one of these tools now."
    elif choice not in ("auto", "none"):
        tools_text += f"\n\nYou must call the tool {choice!r} now."
    out: list[ChatMessage] = []
    pending: list[ToolResult] = []
    for message in history:
        if message.role == "tool" and message.result is not None:
            pending.append(message.result)
            continue
        if pending:
            out.append(ChatMessage.user(_tool_results_text(parser, pending)))
            pending = []
        if message.role == "assistant" and message.tool_calls:
            text = message.metadata.get("raw_text")
            message = ChatMessage(
                role="assistant", content=text if text is not None else _calls_text(message)
            )
        out.append(message)
    if pending:
        out.append(ChatMessage.user(_tool_results_text(parser, pending)))
    if not tools_text:
        return tuple(out)
    if out and out[0].role == "system":
        out[0] = dataclasses.replace(out[0], content=f"{out[0].content}\n\n{tools_text}".strip())
    else:
        out.insert(0, ChatMessage.system(tools_text))
    return tuple(out)
