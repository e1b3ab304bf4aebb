"""JSON call formats with their own markers, on one configurable streaming machine.

Each format names the markers that open a body of JSON call object(s)
(``{"name": .., "arguments"|"parameters": {..}}``, or a list of them), the markers that may close
it, and markers that are dropped from content. Bodies stream through the shared JSON scanner, so a
call starts when its name is read and its argument text streams as it arrives.

- MiniMax-M1: ``<tool_calls>`` + one JSON object per line + ``</tool_calls>``; ``<think>``.
- GigaChat3: ``<|function_call|>{..}`` or ``function call<|role_sep|>\\n{..}``; content ends at
  ``<|message_sep|>``.
- InternLM2: ``<|action_start|><|plugin|>{"name", "parameters"}<|action_end|>``.
- Granite-20B-FC: ``<function_call> {..}`` before each call, no closing marker.
- LongCat: ``<longcat_tool_call>{..}</longcat_tool_call>``.
- Ernie 4.5: ``<tool_call>{..}</tool_call>`` after ``<think>`` reasoning; ``<response>`` wrappers
  dropped.
- Hunyuan A13B: ``<tool_calls>[..]</tool_calls>``; ``<think>`` reasoning, ``<answer>`` wrappers
  dropped.
- xLAM: a bare JSON list (or object) of calls at the start, or after reasoning, in a
  ```` ```json ```` fence, after ``[TOOL_CALLS]`` or inside ``<tool_call>``.
- JSON array (forced tool choice, as SGLang constrains it): the whole output is
  ``[{"name", "parameters"}, ..]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import TextFormatParser, tools_json_lines
from tooluse.formats.hermes import hermes_tools_prompt
from tooluse.formats.json_formats import _JsonFormatMachine
from tooluse.formats.lexer import MarkerSet
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "Ernie45Parser",
    "FunctionaryV32Parser",
    "GigaChat3Parser",
    "Granite20bFcParser",
    "HunyuanA13bParser",
    "InternLM2Parser",
    "JsonArrayParser",
    "JsonSectionMachine",
    "LongCatParser",
    "MiniMaxM1Parser",
    "XLamParser",
]

_WS = re.compile(r"[ \t\r\n]*")
_MAX_WAIT_WS = 64


class JsonSectionMachine(_JsonFormatMachine):
    """A configurable reader of JSON call bodies between markers (see the module docstring)."""

    #: Markers that open a body of call object(s).
    open_markers: tuple[str, ...] = ()
    #: Markers that may close a body (dropped when they follow it).
    close_markers: tuple[str, ...] = ()
    #: Markers removed from content wherever they appear outside bodies (with the whitespace
    #: that follows them).
    drop_markers: tuple[str, ...] = ()
    #: Several call objects may follow each other in one body (one per line, or comma-joined).
    repeat: bool = False
    #: A call object or list at the very start of the output counts without a marker.
    bare_start: bool = False

    def _call_openers(self) -> tuple[str, ...]:
        return self.open_markers

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        texts = [*self.open_markers, *self.drop_markers]
        if self.think_open:
            texts.append(self.think_open)
        self._text_markers = MarkerSet(texts) if texts else None
        ends = [*self.close_markers, *self.open_markers]
        self._terminators = MarkerSet(ends) if ends else None
        self._opener = ""
        self._state = "start" if self.bare_start else "text"

    def _step(self) -> bool:
        state = self._state
        if state == "start":
            return self._start_step()
        if state == "text":
            if self._text_markers is None:  # no markers: the rest is content
                self._emit_text(self._remaining())
                self._pos = len(self._buf)
                return False
            marker = self._text_until(self._text_markers)
            if marker is None:
                return False
            if marker in self.open_markers:
                self._open_body(marker)
            elif marker in self.drop_markers:
                self._state = "drop_space"
            elif marker == self.think_open:
                self._enter_reasoning()
                if self.bare_start:
                    self._state = "start"
            return True
        if state == "drop_space":  # the line break after a dropped marker goes with it
            match = _WS.match(self._buf, self._pos)
            self._pos = match.end() if match else self._pos
            if self._pos == len(self._buf) and not self._final:
                return False
            self._state = "text"
            return True
        if state == "body":
            progress = self._scan_body()
            if progress is not None:
                return progress
            if self._end_body() == "invalid":
                # Not followed by JSON: the marker was text (prose about the format); keep it.
                lead = "".join(self._raw_parts)
                self._raw_parts = []
                self._emit_text(self._opener + lead)
                if self._opener:
                    self._error(f"{self._opener!r} is not followed by a JSON call; kept as text")
                self._state = "text"
            else:
                self._state = "between"
            return True
        return self._between_step()

    def _open_body(self, marker: str) -> None:
        self._opener = marker
        self._open_calls(marker, self._terminators)
        self._state = "body"

    def _start_step(self) -> bool:
        """At the start of output: a bare call body, reasoning, or ordinary text."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end:]
        if not rest and not self._final and end - self._pos <= _MAX_WAIT_WS:
            return False
        if rest[:1] in ("{", "["):
            self._lead = self._buf[self._pos : end]
            self._pos = end
            self._open_body("")
            return True
        think = self.think_open
        if think and rest.startswith(think):
            self._pos = end + len(think)
            self._enter_reasoning()
            return True
        if think and think.startswith(rest) and not self._final:
            return False
        self._state = "text"
        return True

    def _between_step(self) -> bool:
        """After a body: a closing marker, another call object, or back to text."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        longest = max([len(m) for m in self.close_markers] + [1])
        rest = self._buf[end : end + longest]
        waiting = not self._final and end - self._pos <= _MAX_WAIT_WS
        if not rest and waiting:
            return False
        for marker in self.close_markers:
            if rest.startswith(marker):
                self._pos = end + len(marker)
                self._state = "text"
                return True
        if self.repeat and rest[:1] in ("{", ","):
            self._pos = end + (1 if rest[:1] == "," else 0)
            self._open_calls(self._opener, self._terminators)
            self._state = "body"
            return True
        if waiting and any(m.startswith(rest) for m in self.close_markers):
            return False
        self._state = "text"
        return True

    def _not_a_call(self, raw_value: str, problem: str) -> None:
        if not self._prefix:  # a bare JSON answer that is not a call is content
            self._emit_text(getattr(self, "_lead", "") + raw_value)
            self._lead = ""
        else:
            super()._not_a_call(raw_value, problem)

    def _end_body(self) -> str:
        scanner = self._scanner
        if (
            scanner is not None
            and not self._prefix
            and scanner.complete
            and scanner.calls_seen == 0
        ):
            # a bare list that holds no call object (``[1, 2]``) is an answer, not calls
            self._emit_text(getattr(self, "_lead", "") + self._body_raw())
            self._scanner = None
            return "complete"
        return super()._end_body()

    def _finish(self) -> None:
        if self._scanner is not None and self._end_body() == "invalid":
            lead = "".join(self._raw_parts)
            self._raw_parts = []
            self._emit_text(self._opener + lead + self._remaining())
            self._pos = len(self._buf)


def _section_parser(
    name: str,
    machine_attrs: dict[str, Any],
    doc: str,
    example: str,
) -> type[TextFormatParser]:
    machine = type(f"_{name.title().replace('_', '')}Machine", (JsonSectionMachine,), machine_attrs)

    def format_tools(self: TextFormatParser, tools: Sequence[ToolDefinition]) -> str:
        return (
            "You have access to the following functions:\n"
            + tools_json_lines(tools)
            + "\n\nTo call a function, reply with:\n"
            + example
        )

    return type(
        f"{name.title().replace('_', '')}Parser",
        (TextFormatParser,),
        {"name": name, "machine": machine, "format_tools": format_tools, "__doc__": doc},
    )


_CALL = '{"name": <function-name>, "arguments": <args-json-object>}'

MiniMaxM1Parser = _section_parser(
    "minimax_m1",
    {"open_markers": ("<tool_calls>",), "close_markers": ("</tool_calls>",), "repeat": True},
    "MiniMax-M1: ``<tool_calls>`` with one JSON call object per line, ``</tool_calls>``.",
    f"<tool_calls>\n{_CALL}\n...\n</tool_calls>",
)
GigaChat3Parser = _section_parser(
    "gigachat3",
    {
        "open_markers": ("<|function_call|>", "function call<|role_sep|>"),
        "close_markers": ("</s>",),
        "drop_markers": ("<|message_sep|>",),
        "think_open": None,
        "think_close": None,
    },
    "GigaChat3: ``<|function_call|>{..}`` or ``function call<|role_sep|>`` then the call object.",
    f"<|function_call|>{_CALL}",
)
InternLM2Parser = _section_parser(
    "internlm2",
    {
        "open_markers": ("<|action_start|><|plugin|>",),
        "close_markers": ("<|action_end|>",),
        "think_open": None,
        "think_close": None,
    },
    'InternLM2: ``<|action_start|><|plugin|>{"name", "parameters"}<|action_end|>``.',
    '<|action_start|><|plugin|>\n{"name": <function-name>, "parameters": <args-json-object>}'
    "<|action_end|>",
)
Granite20bFcParser = _section_parser(
    "granite_20b_fc",
    {"open_markers": ("<function_call>",), "think_open": None, "think_close": None},
    "Granite-20B-FunctionCalling: ``<function_call> {..}`` before each call.",
    f"<function_call> {_CALL}",
)
LongCatParser = _section_parser(
    "longcat",
    {"open_markers": ("<longcat_tool_call>",), "close_markers": ("</longcat_tool_call>",)},
    "LongCat-Flash: ``<longcat_tool_call>{..}</longcat_tool_call>``.",
    f"<longcat_tool_call>\n{_CALL}\n</longcat_tool_call>",
)
HunyuanA13bParser = _section_parser(
    "hunyuan_a13b",
    {
        "open_markers": ("<tool_calls>",),
        "close_markers": ("</tool_calls>",),
        "drop_markers": ("<answer>", "</answer>"),
    },
    "Hunyuan-A13B: ``<tool_calls>[..]</tool_calls>``, ``<think>`` and ``<answer>`` sections.",
    f"<tool_calls>[{_CALL}]</tool_calls>",
)


class _Ernie45Machine(JsonSectionMachine):
    open_markers = ("<tool_call>",)
    close_markers = ("</tool_call>",)
    drop_markers = ("<response>", "</response>")


class Ernie45Parser(TextFormatParser):
    """Ernie 4.5: Hermes-style ``<tool_call>{..}</tool_call>`` with ``<think>`` reasoning and
    ``<response>`` wrappers around the answer."""

    name = "ernie45"
    machine = _Ernie45Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return hermes_tools_prompt(tools)


class _XLamMachine(JsonSectionMachine):
    open_markers = ("```json", "[TOOL_CALLS]", "<tool_call>")
    close_markers = ("```", "</tool_call>")
    bare_start = True


class XLamParser(TextFormatParser):
    """xLAM: a JSON list of ``{"name", "arguments"}`` calls, bare or fenced."""

    name = "xlam"
    machine = _XLamMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        schemas = json.dumps([t.to_openai_schema()["function"] for t in tools], ensure_ascii=False)
        return (
            "[BEGIN OF AVAILABLE TOOLS]\n" + schemas + "\n[END OF AVAILABLE TOOLS]\n\n"
            "[BEGIN OF FORMAT INSTRUCTION]\nTo call tools, the output MUST be a JSON list: "
            '[{"name": "func_name1", "arguments": {"argument1": "value1"}}, ... (more tool '
            "calls as required)]. If no function call is needed, answer in plain text.\n"
            "[END OF FORMAT INSTRUCTION]"
        )


class _JsonArrayMachine(JsonSectionMachine):
    bare_start = True
    think_open: str | None = None
    think_close: str | None = None


class JsonArrayParser(TextFormatParser):
    """The JSON array a server constrains output to for a forced tool choice
    (``tool_choice="required"`` or a named tool): ``[{"name", "parameters"}, ..]``."""

    name = "json_array"
    machine = _JsonArrayMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return (
            "You have access to the following functions:\n" + tools_json_lines(tools) + "\n\n"
            'Reply with a JSON array of calls: [{"name": <function-name>, '
            '"parameters": <args-json-object>}, ...]'
        )


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}")
_FUNCTIONARY_SEP = ">>>"
#: A header line longer than this is content, not a function name.
_MAX_HEADER = 130


class _FunctionaryV32Machine(_JsonFormatMachine):
    """``>>>NAME\\n{json}`` segments; ``all`` is the content recipient, ``python`` takes code."""

    think_open: str | None = None
    think_close: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "start"
        self._sep = MarkerSet([_FUNCTIONARY_SEP])
        self._header_end = MarkerSet(["\n", _FUNCTIONARY_SEP])
        self._header_parts: list[str] = []
        self._name = ""

    def _step(self) -> bool:
        state = self._state
        if state == "start":  # the prompt usually ends with ">>>"; the output may repeat it
            rest = self._buf[self._pos : self._pos + 3]
            if not self._final and len(rest) < 3 and _FUNCTIONARY_SEP.startswith(rest):
                return False
            if rest == _FUNCTIONARY_SEP:
                self._pos += 3
            self._state = "header"
            return True
        if state == "header":
            return self._header_step()
        if state == "peek":
            return self._peek_step()
        if state == "text":
            if self._text_until(self._sep) is None:
                return False
            self._state = "header"
            return True
        if state == "args":
            self._open_arguments(f">>>{self._name}\n", self._name, self._sep)
            self._state = "body"
            return True
        if state == "body":
            return self._body_step("after", self._sep)
        if state == "raw":
            return self._raw_step()
        if state == "code":
            got = self._collect_until(self._sep)
            if got is None:
                return False
            self._whole_call(self._name, {"code": got[0]}, raw=f">>>{self._name}\n" + got[0])
            self._state = "header"
            return True
        # "after" a call's arguments: the next ">>>" segment, or trailing text
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + 3]
        waiting = not self._final and end - self._pos <= _MAX_WAIT_WS
        if waiting and len(rest) < 3 and _FUNCTIONARY_SEP.startswith(rest):
            return False
        if rest == _FUNCTIONARY_SEP:
            self._pos = end + 3
            self._state = "header"
        else:
            self._state = "text"
        return True

    def _header_step(self) -> bool:
        if not any(self._header_parts):
            # ">>>>NAME": the separator is the last three of a run of ">" (text before a call
            # may end in ">"), so the ones before it are content
            run = self._pos
            while run < len(self._buf) and self._buf[run] == ">":
                run += 1
            if run > self._pos:
                self._emit_text(self._buf[self._pos : run])
                self._pos = run
        found = self._header_end.find(self._buf, self._pos, self._final)
        self._header_parts.append(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        header = "".join(self._header_parts)
        if found.marker is None and not self._final and len(header) <= _MAX_HEADER:
            return False
        self._header_parts = []
        if found.marker == "\n":
            name = header.strip()
            if name == "all":
                self._pos = found.marker_end
                self._state = "text"
                return True
            if _NAME.fullmatch(name):
                self._pos = found.marker_end
                self._name = name
                self._state = "peek"
                return True
        # not a recipient header: the segment is content
        self._emit_text(header)
        self._state = "text"
        return True

    def _peek_step(self) -> bool:
        first = self._peek_value_start()
        if first is None:
            return False
        self._state = "args" if first == "{" or self._name != "python" else "code"
        return True


class FunctionaryV32Parser(TextFormatParser):
    """Functionary v3.2: ``>>>NAME\n{arguments}`` per call, ``>>>all\n`` for the answer."""

    name = "functionary_v3_2"
    machine = _FunctionaryV32Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        lines = [
            "// Supported function definitions that should be called when necessary.",
            "namespace functions {",
            "",
        ]
        for tool in tools:
            lines.append(f"// {tool.description}" if tool.description else "//")
            schema = json.dumps(tool.parameters_schema, ensure_ascii=False)
            lines.append(f"type {tool.name} = (_: {schema}) => any;")
            lines.append("")
        lines.append("} // namespace functions")
        lines.append(
            "\nStart each reply with >>>all for text to the user, or >>>NAME followed by a "
            "new line and the JSON arguments to call a function."
        )
        return "\n".join(lines)
