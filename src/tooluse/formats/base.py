"""The parser interface of text tool-call formats and the streaming machine they share.

A format parser turns a model's raw text into assistant content, reasoning and tool calls.
Every parser streams: ``parser.stream(tools)`` returns a :class:`ToolCallStream` whose
``feed(delta)`` / ``close()`` return events from :mod:`tooluse.events`. ``parse(text)`` is
``feed(text)`` + ``close()`` folded by :func:`collect_events`, so a complete parse and any split
of the same text into deltas give the same result by construction.

``ArgumentsDelta`` texts of one call add up to its arguments: the model's own text for JSON
formats (so Python-literal arguments stream as written), JSON for formats with another syntax
(XML parameters, Python calls, Gemma call objects). Python-call lists and Gemma call objects
stream one argument at a time through :class:`ArgumentsWriter` (a value is sent when the comma or
bracket after it arrives; a long string value therefore arrives whole); calls inside a
```` ```tool_code ```` block or a bare ``<function_calls>`` block arrive whole.

Unknown tool names: the call is still returned (as a ``ToolCallFinished``) so the loop can answer
its id with a validation failure, and a ``ParseError`` naming the tool is recorded as well.
Broken argument text: the call is returned with ``arguments={}`` and ``raw_arguments`` set to the
text, plus a ``ParseError``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tooluse.events import (
    ArgumentsDelta,
    ParseError,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from tooluse.formats.lexer import CodeReader, MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, decode_arguments
from tooluse.messages import ToolCall, new_call_id
from tooluse.tools.definition import ToolDefinition

if TYPE_CHECKING:
    from tooluse.formats.special_tokens import SpecialTokenGuard

__all__ = [
    "ArgumentsWriter",
    "ParsedToolResponse",
    "StreamMachine",
    "TextFormatParser",
    "ToolCallParser",
    "ToolCallStream",
    "collect_events",
    "tools_json_lines",
]

ToolsArg = Sequence[ToolDefinition] | Iterable[ToolDefinition] | None


@dataclass(frozen=True, kw_only=True)
class ParsedToolResponse:
    """One assistant turn read from text: content, reasoning, tool calls and parse errors."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    errors: tuple[ParseError, ...] = ()
    reasoning: str = ""

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)


@runtime_checkable
class ToolCallStream(Protocol):
    """An incremental parser of one assistant turn."""

    def feed(self, delta: str) -> list[StreamEvent]: ...

    def close(self) -> list[StreamEvent]: ...


@runtime_checkable
class ToolCallParser(Protocol):
    """A text tool-call format: the prompt side (``format_tools``) and the output side."""

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str: ...

    def parse(self, text: str, available_tools: ToolsArg = ()) -> ParsedToolResponse: ...

    def stream(self, available_tools: ToolsArg = ()) -> ToolCallStream: ...


def collect_events(events: Iterable[StreamEvent]) -> ParsedToolResponse:
    """Fold a stream of events into the :class:`ParsedToolResponse` it adds up to."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    errors: list[ParseError] = []
    for event in events:
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            reasoning.append(event.text)
        elif isinstance(event, ToolCallFinished):
            calls.append(event.call)
        elif isinstance(event, ParseError):
            errors.append(event)
    return ParsedToolResponse(
        text="".join(text),
        tool_calls=tuple(calls),
        errors=tuple(errors),
        reasoning="".join(reasoning),
    )


class ArgumentsWriter:
    """Writes one call's arguments as a JSON object, one member at a time, while it streams.

    ``member`` sends a member as soon as the format has read it (``open_string``,
    ``string_piece`` and ``close_string`` send a string member as its text arrives, for formats
    whose strings need no unescaping); ``close`` receives the
    arguments the call finally has and sends whatever the members sent so far lack (a member
    that could not be read alone, or a later duplicate), then the closing brace. So the texts
    always decode to the final arguments, however well the early members were read.
    """

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self._sent: dict[str, str] = {}  # key -> JSON text of the value sent last
        self._open_key: str | None = None  # a string value being sent piece by piece
        self._closed = False

    def _lead(self, key: str) -> str:
        return ("{" if not self._sent else ", ") + json.dumps(key, ensure_ascii=False) + ": "

    def member(self, key: str, value: Any) -> None:
        if self._closed or self._open_key is not None:
            return
        try:
            value_text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return  # left for close(), which sends the final value
        if self._sent.get(key) == value_text:
            return  # already sent (a string value streamed piece by piece)
        self._emit(self._lead(key) + value_text)
        self._sent[key] = value_text

    def open_string(self, key: str) -> None:
        """Begin a string value whose text follows in :meth:`string_piece` calls."""
        if self._closed or self._open_key is not None:
            return
        self._emit(self._lead(key) + '"')
        self._sent[key] = ""  # unknown until close_string
        self._open_key = key

    def string_piece(self, text: str) -> None:
        if self._open_key is not None and text:
            self._emit(json.dumps(text, ensure_ascii=False)[1:-1])

    def close_string(self, value: str) -> None:
        """End the open string value; ``value`` is its whole text."""
        if self._open_key is not None:
            self._emit('"')
            self._sent[self._open_key] = json.dumps(value, ensure_ascii=False)
            self._open_key = None

    def close(self, arguments: dict[str, Any]) -> None:
        if self._closed:
            return
        if self._open_key is not None:  # cut off inside a string: its value stays unknown
            self._emit('"')
            self._open_key = None
        for key, value in arguments.items():
            if self._sent.get(key) != _json_text(value):
                self.member(key, value)
        self._closed = True
        self._emit("}" if self._sent else "{}")


#: Steps in a row that may claim progress without reading further into the text (changing
#: state only), before the machine gives up. Real formats need a handful.
_MAX_IDLE_STEPS = 256


class StreamMachine:
    """Shared streaming machinery: input buffer, event list, reasoning and call bookkeeping.

    Subclasses implement :meth:`_step`, which reads ``self._buf`` from ``self._pos`` and returns
    ``False`` when it needs more input to decide (it is then called again after the next
    ``feed``, or with ``self._final`` set after ``close``). A step must consume everything it can,
    so the unconsumed tail stays bounded by one marker's length.
    """

    #: Markers that open and close reasoning (``None`` when the format has none).
    think_open: str | None = "<think>"
    think_close: str | None = "</think>"
    #: Whether the model writes its calls inside open reasoning (Kimi-K2-Thinking): a call
    #: opener (:meth:`_call_openers`) then ends the reasoning wherever it appears. Otherwise an
    #: opener ends only reasoning that the prompt opened (``reasoning_started``), at a line start.
    calls_in_reasoning: bool = False

    def __init__(
        self,
        available_tools: ToolsArg = (),
        *,
        reasoning_started: bool = False,
        id_factory: Callable[[], str] = new_call_id,
    ) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        for tool in available_tools or ():
            if not isinstance(tool, ToolDefinition):  # a Tool or a documented function
                from tooluse.tools import as_tool

                tool = as_tool(tool)
            self._tools[tool.name] = tool
        self._buf = ""
        self._pos = 0
        self._final = False
        self._closed = False
        self._out: list[StreamEvent] = []
        self._gathered: list[str] = []
        self._code_fallback = False  # a code block had a stray quote (see _collect_code)
        self._next_index = 0
        self._new_id = id_factory
        self._in_reasoning = reasoning_started and self.think_close is not None
        self._think_close_set = MarkerSet([self.think_close]) if self.think_close else None
        # A call opener ends reasoning opened by the prompt and never closed (Qwen3.5, GLM-4.7
        # and others: the model may go straight to a call without "</think>").
        openers = [m for m in self._call_openers() if m]
        self._reasoning_exits = (
            MarkerSet([self.think_close, *openers]) if self.think_close and openers else None
        )
        self._prompt_reasoning = self._in_reasoning
        self._reasoning_line_start = True
        # Reasoning ended by a call rather than its closing marker: a "</think>" written after
        # the calls is then a leftover marker, not text.
        self._reasoning_cut_by_call = False
        self._guard: SpecialTokenGuard | None = None  # set by feed_tokens / special_tokens

    # -- public interface ------------------------------------------------------------------
    def feed(self, delta: str) -> list[StreamEvent]:
        """Consume the next piece of model text; return the events it completes."""
        if self._closed:
            raise RuntimeError("feed() after close()")
        if not delta:
            return []
        self._buf = self._buf[self._pos :] + delta if self._pos < len(self._buf) else delta
        self._pos = 0
        self._run()
        return self._take()

    def close(self) -> list[StreamEvent]:
        """End of output: flush held-back text, report unfinished calls."""
        if self._closed:
            return []
        guard = self._guard
        held = self.feed(guard.flush()) if guard is not None else []
        self._final = True
        self._run()
        self._finish()
        self._closed = True
        events = held + self._take()
        return guard.clean(events) if guard is not None else events

    def special_tokens(self, texts: Iterable[str]) -> StreamMachine:
        """Declare the texts of the tokenizer's special tokens (``<tool_call>``, ``<think>``,
        ...) for :meth:`feed_tokens`: typed inside ordinary tokens, they are text. Returns the
        machine."""
        from tooluse.formats.special_tokens import SpecialTokenGuard

        if self._guard is None:
            self._guard = SpecialTokenGuard(texts)
        else:
            for text in texts:
                self._guard.special_text(text)
        return self

    def feed_tokens(self, tokens: Iterable[tuple[int, str, bool]]) -> list[StreamEvent]:
        """Consume tokens as the backend produced them, ``(token_id, text, is_special)``: a
        format marker counts only where it came as a special token (one declared with
        :meth:`special_tokens`, or already seen as special), so a marker typed inside an
        argument or an answer stays text. Returns the events, as :meth:`feed` does. Feed one
        stream either by tokens or by text, not both."""
        if self._guard is None:
            self.special_tokens(())
        guard = self._guard
        assert guard is not None
        events: list[StreamEvent] = []
        for _token_id, text, is_special in tokens:
            events.extend(self.feed(guard.special(text) if is_special else guard.normal(text)))
        return guard.clean(events)

    # -- for subclasses ---------------------------------------------------------------------
    def _step(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _finish(self) -> None:
        """Called once after the last step at end of input."""

    def _run(self) -> None:
        # Each step returns True only when it consumed input or changed state, so this ends.
        # The guard below turns a step that breaks that rule into a reported error, not a hang:
        # progress means reading past the furthest point reached so far (or a new buffer), so
        # states that hand the same position back and forth are caught as well.
        idle = 0
        buf, furthest = self._buf, self._pos
        while True:
            progressed = self._reasoning_step() if self._in_reasoning else self._step()
            if not progressed:
                break
            if self._buf is not buf or self._pos > furthest:
                buf, furthest, idle = self._buf, self._pos, 0
                continue
            idle += 1
            if idle > _MAX_IDLE_STEPS:
                self._error("parser made no progress; the rest of the output is kept as text")
                self._emit_text(self._remaining())
                self._pos = len(self._buf)
                break

    def _take(self) -> list[StreamEvent]:
        out, self._out = self._out, []
        return out

    def _remaining(self) -> str:
        return self._buf[self._pos :]

    def _emit_text(self, text: str) -> None:
        if text:
            self._out.append(TextDelta(text=text))

    def _emit_reasoning(self, text: str) -> None:
        if text:
            self._out.append(ReasoningDelta(text=text))

    def _error(self, message: str, raw: str = "", index: int | None = None) -> None:
        self._out.append(ParseError(message=message, raw=raw, index=index))

    def _text_until(self, markers: MarkerSet) -> str | None:
        """Emit content text up to the next of ``markers`` and consume that marker; return it,
        or ``None`` when more text is needed (or the output ended) before one arrives."""
        found = markers.find(self._buf, self._pos, self._final)
        self._emit_text(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None:
            return None
        self._pos = found.marker_end
        return found.marker

    def _collect_until(self, markers: MarkerSet) -> tuple[str, str | None] | None:
        """Gather text up to the next of ``markers`` and consume the marker. Returns
        ``(text, marker)`` when found (``marker`` is ``None`` at the end of output), or ``None``
        while more text is needed; the text gathered so far is kept between calls."""
        found = markers.find(self._buf, self._pos, self._final)
        self._gathered.append(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None and not self._final:
            return None
        if found.marker is not None:
            self._pos = found.marker_end
        text, self._gathered = "".join(self._gathered), []
        return text, found.marker

    def _collect_code(self, reader: CodeReader) -> tuple[str, str | None] | None:
        """Like :meth:`_collect_until` for a block of code: its closing marker counts only
        outside string literals, so a value may contain it.

        A block whose quotes never balance (a stray apostrophe) would run to the end of the
        output; then, at the end, its first closing marker ends it after all and the text that
        followed is read again. That happens at most once per turn (later blocks then end at
        their first marker), so the cost stays linear, and a split never changes the result.
        """
        if self._code_fallback:
            return self._collect_until(MarkerSet([reader.close]))
        self._pos, closed = reader.collect(self._buf, self._pos, self._final)
        if closed:
            return reader.take(), reader.close
        if not self._final:
            return None
        code = reader.take()
        cut = code.find(reader.close)
        if cut < 0:
            return code, None
        self._code_fallback = True
        self._buf = code[cut + len(reader.close) :] + self._buf[self._pos :]
        self._pos = 0
        return code[:cut], reader.close

    def _call_openers(self) -> tuple[str, ...]:
        """Markers that begin a call in this format (they may end open reasoning)."""
        return ()

    def _reasoning_step(self) -> bool:
        """Inside ``<think>``: everything up to the closing marker is reasoning. A call opener
        ends it too when the format writes calls inside reasoning, or when the prompt opened
        the reasoning and the opener starts a line; the call is then read as a call."""
        assert self._think_close_set is not None
        exits_active = self._reasoning_exits is not None and (
            self.calls_in_reasoning or self._prompt_reasoning
        )
        markers = self._reasoning_exits if exits_active else self._think_close_set
        assert markers is not None
        found = markers.find(self._buf, self._pos, self._final)
        self._reasoning_piece(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None:
            if self._final:
                self._in_reasoning = False
            return False
        if found.marker != self.think_close:
            if self.calls_in_reasoning or self._reasoning_line_start:
                self._in_reasoning = False  # the opener stays unread: the format reads the call
                self._reasoning_cut_by_call = True
                return True
            self._reasoning_piece(found.marker)  # an opener quoted mid-line is reasoning text
        self._pos = found.marker_end
        self._in_reasoning = found.marker != self.think_close and self._in_reasoning
        return True

    def _reasoning_piece(self, text: str) -> None:
        self._emit_reasoning(text)
        visible = text.rstrip(" \t")
        if visible:
            self._reasoning_line_start = visible.endswith(("\n", "\r"))

    def _enter_reasoning(self) -> None:
        self._in_reasoning = True
        self._prompt_reasoning = False
        self._reasoning_line_start = True

    # -- calls --------------------------------------------------------------------------------
    def _start_call(self, name: str, call_id: str | None = None) -> tuple[int, str]:
        index = self._next_index
        self._next_index += 1
        cid = call_id or self._new_id()
        self._out.append(ToolCallStarted(index=index, name=name, id=cid))
        return index, cid

    def _emit_arguments(self, index: int, text: str) -> None:
        if text:
            self._out.append(ArgumentsDelta(index=index, text=text))

    def _begin_streamed_call(self, name: str) -> tuple[int, str, ArgumentsWriter]:
        """Start a call whose arguments will stream member by member (see ``ArgumentsWriter``)."""
        index, cid = self._start_call(name)
        return index, cid, ArgumentsWriter(lambda text: self._emit_arguments(index, text))

    def _end_streamed_call(
        self,
        started: tuple[int, str, ArgumentsWriter],
        name: str,
        arguments: Any,
        *,
        raw_arguments: str | None = None,
        raw: str = "",
        problem: str | None = None,
    ) -> None:
        """Finish a call begun with :meth:`_begin_streamed_call`."""
        index, cid, writer = started
        args, _, _ = normalise_arguments(arguments, raw_arguments)
        writer.close(args)
        self._finish_call(
            index, cid, name, arguments, raw_arguments=raw_arguments, raw=raw, problem=problem
        )

    def _finish_call(
        self,
        index: int,
        call_id: str,
        name: str,
        arguments: Any,
        *,
        raw_arguments: str | None = None,
        raw: str = "",
        problem: str | None = None,
    ) -> ToolCall:
        """Emit ``ToolCallFinished`` (and errors) for a started call; ``arguments`` may be any
        decoded value or text: it is normalised to a dict here."""
        args, raw_args, arg_problem = normalise_arguments(arguments, raw_arguments)
        call = ToolCall(id=call_id, name=name, arguments=args, raw_arguments=raw_args)
        self._out.append(ToolCallFinished(index=index, call=call))
        if problem or arg_problem:
            self._error(problem or arg_problem or "", raw or (raw_args or ""), index)
        if self._tools and name not in self._tools:
            known = ", ".join(sorted(self._tools))
            self._error(f"unknown tool {name!r}; available tools: {known}", raw or name, index)
        return call

    def _whole_call(
        self,
        name: str,
        arguments: Any,
        *,
        raw_arguments: str | None = None,
        raw: str = "",
        problem: str | None = None,
        call_id: str | None = None,
        arguments_text: str | None = None,
    ) -> None:
        """Emit a complete call at once: started, one arguments delta, finished."""
        index, cid = self._start_call(name, call_id)
        args, raw_args, _ = normalise_arguments(arguments, raw_arguments)
        if arguments_text is None:
            arguments_text = ToolCall(
                name=name, arguments=args, raw_arguments=raw_args
            ).arguments_json()
        self._emit_arguments(index, arguments_text)
        self._finish_call(
            index, cid, name, arguments, raw_arguments=raw_arguments, raw=raw, problem=problem
        )

    def _tool(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def _program_tool(self) -> str | None:
        """The offered program tool of code mode (its definition says so in ``metadata``),
        which a family's code channel calls: the code it writes there is the program."""
        return next((n for n, t in self._tools.items() if t.metadata.get("code_mode")), None)


def normalise_arguments(
    arguments: Any, raw_arguments: str | None = None
) -> tuple[dict[str, Any], str | None, str | None]:
    """Arguments as a dict, with the raw text and a problem description when they are not one.

    Accepts a dict, ``None`` (no arguments), or text holding a JSON / Python-literal object
    (arguments sent double-encoded as a string).
    """
    if arguments is None:
        return {}, raw_arguments, None
    if isinstance(arguments, dict):
        return arguments, None, None
    if isinstance(arguments, str):
        stripped = arguments.strip()
        if not stripped:
            return {}, None, None
        try:
            decoded = decode_arguments(stripped)
        except LiteralSyntaxError as exc:
            return {}, arguments, f"arguments are not valid JSON: {exc}"
        if isinstance(decoded, dict):
            return decoded, None, None
        return {}, arguments, f"arguments must be an object, got {type(decoded).__name__}"
    raw = raw_arguments if raw_arguments is not None else _json_text(arguments)
    return {}, raw, f"arguments must be an object, got {type(arguments).__name__}"


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def tools_json_lines(tools: Iterable[ToolDefinition], indent: int | None = None) -> str:
    """The tools' OpenAI-style schemas as JSON, one per line: the tools section most prompt
    formats use."""
    return "\n".join(
        json.dumps(t.to_openai_schema(), ensure_ascii=False, indent=indent) for t in tools
    )


class TextFormatParser:
    """Base of the built-in format parsers: ``parse`` is ``stream`` run over the whole text."""

    #: Registry name of the format.
    name: str = ""
    #: The streaming machine class of the format.
    machine: type[StreamMachine] = StreamMachine

    def __init__(self, *, reasoning_started: bool = False) -> None:
        self.reasoning_started = reasoning_started

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:  # pragma: no cover
        raise NotImplementedError

    def stream(
        self, available_tools: ToolsArg = (), *, id_factory: Callable[[], str] = new_call_id
    ) -> StreamMachine:
        """A fresh incremental parser for one assistant turn."""
        return self.machine(
            available_tools, reasoning_started=self.reasoning_started, id_factory=id_factory
        )

    def parse(self, text: str, available_tools: ToolsArg = ()) -> ParsedToolResponse:
        """Read a complete assistant turn."""
        machine = self.stream(available_tools)
        events = machine.feed(text)
        events.extend(machine.close())
        return collect_events(events)

    def parse_tokens(
        self,
        tokens: Iterable[tuple[int, str, bool]],
        available_tools: ToolsArg = (),
        *,
        special_tokens: Iterable[str] = (),
    ) -> ParsedToolResponse:
        """Read a complete turn given as ``(token_id, text, is_special)`` tokens: markers count
        only as special tokens (see :meth:`StreamMachine.feed_tokens`)."""
        machine = self.stream(available_tools).special_tokens(special_tokens)
        events = machine.feed_tokens(tokens)
        events.extend(machine.close())
        return collect_events(events)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
