"""Hermes / Qwen2.5 / Qwen3 format: ``<tool_call>{"name": .., "arguments": {..}}</tool_call>``.

An opening tag that is not followed by JSON is kept as text (and reported). Also read: a list
of calls inside one block (``<tool_call>[{..}, {..}]</tool_call>``, as SmolLM2
writes), ``parameters`` instead of ``arguments``, arguments as a JSON string or with Python
literals, an unclosed last block (output cut at the stop token), and ``<think>`` reasoning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from tooluse.formats.base import TextFormatParser, tools_json_lines
from tooluse.formats.json_calls import JsonCallMachine
from tooluse.formats.lexer import MarkerSet
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "GraniteParser",
    "HermesMachine",
    "HermesToolCallParser",
    "JambaParser",
    "NemotronParser",
    "Phi4MiniParser",
    "hermes_tools_prompt",
]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
# After a call object: a comma, then (group 1) the next object's brace.
_MORE = re.compile(r"[ \t\r\n]*,[ \t\r\n]*(\{)?")
_BLANK = re.compile(r"[ \t\r\n]*")


class HermesMachine(JsonCallMachine):
    """Streaming reader of the Hermes format."""

    open_marker: str = OPEN
    close_marker: str | None = CLOSE
    #: Other spellings of the opener the model family writes (Granite 3.1: ``<tool_call>``).
    other_openers: tuple[str, ...] = ()

    def _call_openers(self) -> tuple[str, ...]:
        return (self.open_marker, *self.other_openers)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._opened = self.open_marker  # the opener of the current body, as written
        self._closer = self.close_marker  # the closing marker of the current body
        markers = [self.open_marker, *self.other_openers]
        markers += [self.think_open] if self.think_open else []
        self._text_markers = MarkerSet(markers)
        ends = [self.open_marker] + ([self.close_marker] if self.close_marker else [])
        self._terminators = MarkerSet(ends)
        self._state = "text"

    def _step(self) -> bool:
        if self._state == "text":
            marker = self._text_until(self._text_markers)
            if marker is None:
                return False
            if marker == self.think_open:
                self._enter_reasoning()
            else:
                self._begin_block(marker)
            return True
        if self._state == "body":
            progress = self._scan_body()
            if progress is not None:
                return progress
            if self._end_body() != "invalid":
                self._state = "after"
                return True
            # Not followed by JSON: the opener was literal text (prose about the format, or the
            # word "functools"); keep it as text so nothing after it is swallowed, and report it
            # when the format has a closing marker (a real but malformed call attempt).
            lead = "".join(self._raw_parts)
            self._raw_parts = []
            self._emit_text(self._opened + lead)
            if self._closer is not None:
                self._error(
                    f"{self._opened!r} is not followed by a JSON call; kept as text",
                    self._opened,
                )
            self._state = "text"
            return True
        # "after" a body: another call object after a comma (two objects, one block), else
        # drop the closing marker when it follows
        blank = _BLANK.match(self._buf, self._pos)
        blank_end = blank.end() if blank else self._pos
        if blank_end == len(self._buf) and not self._final and blank_end - self._pos <= 64:
            return False  # what follows the object decides
        more = _MORE.match(self._buf, self._pos)
        if more is not None:
            if more.group(1):
                self._pos = more.end() - 1
                self._open_calls(self._opened, self._terminators)
                self._state = "body"
                return True
            at_end = more.end() == len(self._buf)
            if at_end and not self._final and more.end() - self._pos <= 64:
                return False
        if self._closer and self._skip_closing(self._closer) is None:
            return False
        self._state = "text"
        return True

    def _begin_block(self, marker: str) -> None:
        """A call block opened with ``marker`` begins at ``self._pos``."""
        self._opened = marker
        self._closer = self.close_marker
        self._open_calls(marker, self._terminators)
        self._state = "body"


def hermes_tools_prompt(tools: Sequence[ToolDefinition]) -> str:
    """The tools section of a Hermes/Qwen system prompt (as Qwen's chat template writes it)."""
    lines = [
        "# Tools",
        "",
        "You may call one or more functions to assist with the user query.",
        "",
        "You are provided with function signatures within <tools></tools> XML tags:",
        "<tools>",
    ]
    if tools:
        lines.append(tools_json_lines(tools))
    lines += [
        "</tools>",
        "",
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:",
        "<tool_call>",
        '{"name": <function-name>, "arguments": <args-json-object>}',
        "</tool_call>",
    ]
    return "\n".join(lines)


class HermesToolCallParser(TextFormatParser):
    """Hermes-style tool calls (NousResearch Hermes, Qwen2.5, Qwen3 and many fine-tunes).

    ``format_tools`` gives the system-prompt section; ``parse`` reads a whole response;
    ``stream`` reads it delta by delta with the same result.
    """

    name = "hermes"
    machine = HermesMachine

    def __init__(self, *, reasoning_started: bool = False, lenient: bool = False) -> None:
        super().__init__(reasoning_started=reasoning_started)
        #: Also read calls wrapped the way other models wrap them (see ``hermes_lenient``).
        self.lenient = lenient
        if lenient:
            from tooluse.formats.hermes_lenient import LenientHermesMachine

            self.machine = LenientHermesMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return hermes_tools_prompt(tools)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lenient=True)" if self.lenient else super().__repr__()


def _json_list_parser(
    name: str,
    open_marker: str,
    close_marker: str | None,
    doc: str,
    other_openers: tuple[str, ...] = (),
) -> type[TextFormatParser]:
    machine = type(
        f"_{name}Machine",
        (HermesMachine,),
        {"open_marker": open_marker, "close_marker": close_marker, "other_openers": other_openers},
    )

    def format_tools(self: TextFormatParser, tools: Sequence[ToolDefinition]) -> str:
        schemas = json.dumps([t.to_openai_schema() for t in tools], ensure_ascii=False, indent=2)
        example = open_marker + '[{"name": <function-name>, "arguments": <args-json-object>}]'
        return (
            "You have access to the following functions:\n" + schemas + "\n\nTo call functions, "
            "reply with " + example + (close_marker or "")
        )

    return type(
        f"{name.title().replace('_', '')}Parser",
        (TextFormatParser,),
        {"name": name, "machine": machine, "format_tools": format_tools, "__doc__": doc},
    )


GraniteParser = _json_list_parser(
    "granite",
    "<|tool_call|>",
    None,
    "Granite 3.x: ``<|tool_call|>[{name, arguments}, ...]`` (3.1 also writes ``<tool_call>``).",
    other_openers=("<tool_call>",),
)
JambaParser = _json_list_parser(
    "jamba", "<tool_calls>", "</tool_calls>", "Jamba / Hunyuan: ``<tool_calls>[...]</tool_calls>``."
)
Phi4MiniParser = _json_list_parser(
    "phi4_mini", "functools", None, "Phi-4-mini / Firefunction: ``functools[{...}, ...]``."
)
NemotronParser = _json_list_parser(
    "nemotron", "<TOOLCALL>", "</TOOLCALL>", "Nemotron: ``<TOOLCALL>[...]</TOOLCALL>``."
)
