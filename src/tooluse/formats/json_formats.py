"""JSON tool-call formats: Llama 3.x, Mistral (before and from v11) and DeepSeek V3 / V3.1.

- Llama 3.1-3.3: a bare ``{"name": .., "parameters": {..}}`` at the start of the turn or after
  ``<|python_tag|>``, several joined by ``;``; built-in tools as
  ``<|python_tag|>brave_search.call(query="..")``; with code mode's program tool offered, the
  code after ``<|python_tag|>`` (the code interpreter's channel) is a call of it.
- Mistral before v11: ``[TOOL_CALLS][{"name": .., "arguments": {..}}, ..]``.
- Mistral v11+: ``[TOOL_CALLS]name[ARGS]{..}`` per call, optionally ``[CALL_ID]id`` before
  ``[ARGS]``; ``[THINK]..[/THINK]`` reasoning (Magistral).
- DeepSeek V3/R1: ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`` + a fenced json block;
  V3.1: ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}``; both inside
  ``<｜tool▁calls▁begin｜>..<｜tool▁calls▁end｜>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import TextFormatParser, tools_json_lines
from tooluse.formats.json_calls import JsonCallMachine
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, parse_python_calls
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "DeepSeekV3Parser",
    "DeepSeekV31Parser",
    "FunctionTagParser",
    "KimiK2Parser",
    "Llama3JsonParser",
    "MistralParser",
    "MistralV11Parser",
]

_WS = re.compile(r"[ \t\r\n]*")
_WS_ANY = re.compile(r"\s+")
_MAX_WAIT_WS = 64
_NAME = re.compile(r"[A-Za-z0-9_.\-:/]{1,128}")
# A call object after prose: it must open with its "name" (or OpenAI "type") key.
_CALL_HEAD = re.compile(r'\{\s*"(?:name|type)"\s*:')
_CALL_HEAD_PARTIAL = re.compile(r'\{\s*(?:"(?:|n|na|nam|name|name"\s*|t|ty|typ|type|type"\s*))?\Z')


class _JsonFormatMachine(JsonCallMachine):
    """Adds the "body" and "after" steps shared by these formats."""

    def _peek_value_start(self) -> str | None:
        """The first non-space character ahead (``""`` at the end of output), or ``None`` when
        only spaces are buffered so far; the spaces are consumed."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        if end < len(self._buf):
            self._pos = end
            return self._buf[end]
        if self._final:
            self._pos = end
            return ""
        self._pos = end
        return None

    def _body_step(self, after: str, raw_terminators: MarkerSet) -> bool:
        progress = self._scan_body()
        if progress is not None:
            return progress
        if self._end_body() == "invalid":
            self._state = "raw"
            self._raw_terminators = raw_terminators
            self._after_raw = after
        else:
            self._state = after
        return True

    def _raw_step(self) -> bool:
        raw = self._collect_raw(self._raw_terminators)
        if raw is None:
            return False
        self._end_invalid(raw)
        self._state = self._after_raw
        return True


class _LlamaMachine(_JsonFormatMachine):
    think_open: str | None = None
    think_close: str | None = None
    _ends = ("<|eom_id|>", "<|eot_id|>")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "start"
        self._text_markers = MarkerSet(["<|python_tag|>", "{"])
        self._terminators = MarkerSet(self._ends)
        self._builtin_end = MarkerSet(self._ends)
        self._lead = ""  # spaces before a bare JSON object at the start of the turn

    def _step(self) -> bool:
        state = self._state
        if state == "text":
            return self._text_step()
        if state == "body":
            return self._body_step("between", self._terminators)
        if state == "start":
            return self._start_step()
        if state == "maybe_call":
            return self._maybe_call_step()
        if state == "tag":
            return self._tag_step()
        if state == "raw":
            return self._raw_step()
        if state == "builtin":
            return self._builtin_step()
        return self._between_step()

    def _start_step(self) -> bool:
        """The start of the turn: a bare JSON object (after spaces) is a call."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        if end == len(self._buf) and not self._final and end - self._pos <= _MAX_WAIT_WS:
            return False
        if end < len(self._buf) and self._buf[end] == "{":
            self._lead = self._buf[self._pos : end]
            self._pos = end
            self._open_calls("", self._terminators)
            self._state = "body"
        else:
            self._state = "text"
        return True

    def _text_step(self) -> bool:
        marker = self._text_until(self._text_markers)
        if marker is None:
            return False
        if marker == "{":
            self._pos -= 1
            self._state = "maybe_call"
        else:
            self._state = "tag"
        return True

    def _maybe_call_step(self) -> bool:
        # After prose, a JSON object is a call only when it opens with its "name" key.
        if _CALL_HEAD.match(self._buf, self._pos):
            self._lead = ""
            self._open_calls("", self._terminators)
            self._state = "body"
            return True
        rest = self._buf[self._pos : self._pos + _MAX_WAIT_WS + 1]
        if not self._final and len(rest) <= _MAX_WAIT_WS and _CALL_HEAD_PARTIAL.match(rest):
            return False
        self._emit_text("{")
        self._pos += 1
        self._state = "text"
        return True

    def _tag_step(self) -> bool:
        """After ``<|python_tag|>`` (or ``;``): JSON calls, or a built-in tool's Python call."""
        first = self._peek_value_start()
        if first is None:
            return False
        if first in ("{", "["):
            self._open_calls("<|python_tag|>", self._terminators)
            self._state = "body"
        else:
            self._state = "builtin"
        return True

    def _builtin_step(self) -> bool:
        got = self._collect_until(self._builtin_end)
        if got is None:
            return False
        self._builtin_calls(got[0])
        self._state = "text"
        return True

    def _between_step(self) -> bool:
        """Between calls: "; {" continues, an end token is dropped, anything else is text."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + 12]
        if not rest and not self._final and end - self._pos <= _MAX_WAIT_WS:
            return False
        if rest.startswith(";"):
            self._pos = end + 1
            self._state = "tag"
            return True
        if rest.startswith("{"):  # calls separated by a line break or a space only
            self._lead = self._buf[self._pos : end]
            self._pos = end
            self._open_calls("", self._terminators)
            self._state = "body"
            return True
        for marker in self._ends:
            if rest.startswith(marker):
                self._pos = end + len(marker)
                self._state = "text"
                return True
            if not self._final and marker.startswith(rest) and len(rest) < len(marker):
                return False
        self._state = "text"
        return True

    def _builtin_calls(self, code: str) -> None:
        raw = "<|python_tag|>" + code
        program = self._program_tool()
        if program is not None:  # code mode: the code interpreter's block is the program
            self._whole_call(program, {"code": code.strip()}, raw=raw)
            return
        try:
            calls = parse_python_calls(code.strip())
        except LiteralSyntaxError as exc:
            self._error(f"built-in tool call is not a Python call: {exc}", raw)
            return
        if not calls:
            self._error("empty <|python_tag|> block", raw)
        for name, arguments in calls:
            self._whole_call(name.removesuffix(".call"), arguments, raw=raw)

    def _end_scanned(self, scanner: Any, raw: str) -> str:
        if not self._prefix and not scanner.complete and self._current is None:
            # a bare answer that starts with "{" but never became a call object is content
            self._emit_text(self._lead + raw)
            self._lead = ""
            return "cut"
        return super()._end_scanned(scanner, raw)

    def _not_a_call(self, raw_value: str, problem: str) -> None:
        if not self._prefix:
            # a bare JSON answer that is not a call is content
            self._emit_text(self._lead + raw_value)
            self._lead = ""
        else:
            super()._not_a_call(raw_value, problem)


class Llama3JsonParser(TextFormatParser):
    """Llama 3.1 / 3.2 / 3.3 JSON tool calls (``{"name", "parameters"}``, ``<|python_tag|>``)."""

    name = "llama3_json"
    machine = _LlamaMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return (
            "Given the following functions, please respond with a JSON for a function call with "
            "its proper arguments that best answers the given prompt.\n\n"
            'Respond in the format {"name": function name, "parameters": dictionary of argument '
            "name and its value}. Do not use variables.\n\n" + tools_json_lines(tools, indent=4)
        )


class _MistralMachine(_JsonFormatMachine):
    """Both Mistral layouts, whichever follows ``[TOOL_CALLS]``: a JSON list of call objects
    (before v11), or ``NAME[CALL_ID]ID[ARGS]{..}`` (v11; ``[ARGS]`` may be missing when a
    server strips special tokens, so ``NAME{..}`` is read too)."""

    think_open = "[THINK]"
    think_close = "[/THINK]"
    stream_calls = False  # call objects carry the model's own 9-character ids

    def _call_openers(self) -> tuple[str, ...]:
        return ("[TOOL_CALLS]",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "text"
        self._text_markers = MarkerSet(["[TOOL_CALLS]", "[THINK]"])
        self._terminators = MarkerSet(["[TOOL_CALLS]", "</s>"])
        self._name_end = MarkerSet(["[ARGS]", "[CALL_ID]", "[TOOL_CALLS]", "{"])
        self._id_end = MarkerSet(["[ARGS]", "[TOOL_CALLS]", "{"])
        self._call_name = ""
        self._call_id: str | None = None

    def _text_step(self) -> bool:
        marker = self._text_until(self._text_markers)
        if marker is None:
            return False
        if marker == "[THINK]":
            self._enter_reasoning()
        else:
            self._state = "dispatch"
        return True

    def _step(self) -> bool:
        state = self._state
        if state == "text":
            return self._text_step()
        if state == "dispatch":
            first = self._peek_value_start()
            if first is None:
                return False
            if first in ("[", "{", ""):
                self._open_calls("[TOOL_CALLS]", self._terminators)
                self._state = "body"
            else:
                self._state = "name"
                self._call_id = None
            return True
        if state == "name":
            return self._name_step()
        if state == "call_id":
            got = self._collect_until(self._id_end)
            if got is None:
                return False
            self._call_id = got[0].strip() or None
            if got[1] == "{":
                self._pos -= 1
            elif got[1] != "[ARGS]":
                self._error("[CALL_ID] is not followed by [ARGS]", "[TOOL_CALLS]" + self._call_name)
                self._state = "dispatch" if got[1] else "text"
                return True
            self._state = "args"
            return True
        if state == "args":
            prefix = f"[TOOL_CALLS]{self._call_name}[ARGS]"
            self._open_arguments(prefix, self._call_name, self._terminators, self._call_id)
            self._state = "body"
            return True
        if state == "body":
            return self._body_step("after", self._terminators)
        if state == "raw":
            return self._raw_step()
        if self._skip_closing("</s>") is None:
            return False
        self._state = "text"
        return True

    def _name_step(self) -> bool:
        got = self._collect_until(self._name_end)
        if got is None:
            return False
        text, marker = got
        name = text.strip()
        if marker in ("[ARGS]", "[CALL_ID]", "{") and _NAME.fullmatch(name):
            self._call_name = name
            if marker == "{":  # "[ARGS]" left out: the arguments object starts here
                self._pos -= 1
            self._state = "call_id" if marker == "[CALL_ID]" else "args"
        elif marker in ("[ARGS]", "{"):
            # not a name: keep the whole call text for the report
            self._prefix = "[TOOL_CALLS]" + text + marker
            self._state = "raw"
            self._raw_terminators = self._terminators
            self._after_raw = "after"
        else:
            self._error(
                "[TOOL_CALLS] is not followed by a tool name and [ARGS]", "[TOOL_CALLS]" + text
            )
            self._state = "text" if marker is None else "dispatch"
        return True


class MistralParser(TextFormatParser):
    """Mistral before tokenizer v11 (7B v0.3, Nemo): ``[TOOL_CALLS][{..}, ..]``; the v11 layout
    is read too."""

    name = "mistral"
    machine = _MistralMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        schemas = [t.to_openai_schema() for t in tools]
        return "[AVAILABLE_TOOLS]" + json.dumps(schemas, ensure_ascii=False) + "[/AVAILABLE_TOOLS]"


class _MistralV11Machine(_MistralMachine):
    """Only the v11 layout (``NAME[ARGS]{..}``, ``[ARGS]`` optional), so that a template's
    rendered calls tell the two formats apart."""

    stream_calls = True

    def _step(self) -> bool:
        if self._state == "dispatch":
            self._state = "name"
            self._call_id = None
            return True
        return super()._step()


class MistralV11Parser(MistralParser):
    """Mistral from tokenizer v11 (Small 3.x, Devstral, Magistral): ``[TOOL_CALLS]name[ARGS]{..}``."""

    name = "mistral_v11"
    machine = _MistralV11Machine


_DS_CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
_DS_CALLS_END = "<｜tool▁calls▁end｜>"
_DS_CALL_BEGIN = "<｜tool▁call▁begin｜>"
_DS_CALL_END = "<｜tool▁call▁end｜>"
_DS_SEP = "<｜tool▁sep｜>"


class _DeepSeekMachine(_JsonFormatMachine):
    fenced = True  # V3/R1 put the arguments in a ```json fence; V3.1 does not
    calls_begin, calls_end = _DS_CALLS_BEGIN, _DS_CALLS_END
    call_begin, call_end, sep = _DS_CALL_BEGIN, _DS_CALL_END, _DS_SEP

    def _call_openers(self) -> tuple[str, ...]:
        return (self.calls_begin, self.call_begin)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "text"
        self._text_markers = MarkerSet(
            [self.calls_begin, self.call_begin, self.calls_end, "<think>", "</think>"]
        )
        self._calls_markers = MarkerSet([self.call_begin, self.calls_end])
        self._section: list[str] = []  # text inside the calls section that is not a call
        self._section_calls = False  # whether the open section holds a call yet
        self._in_section = False
        self._header_end = MarkerSet([self.sep, self.call_end, self.calls_end])
        self._name_end = MarkerSet(["\n", self.call_end, self.calls_end])
        ends = [self.call_end, self.calls_end] + (["```"] if self.fenced else [])
        self._terminators = MarkerSet(ends)
        self._name = ""
        self._call_id: str | None = None

    def _step(self) -> bool:
        state = self._state
        if state == "text":
            return self._text_step()
        if state == "body":
            return self._body_step("close", MarkerSet([self.call_end, self.calls_end]))
        if state == "calls":
            return self._calls_step()
        if state == "header":
            return self._header_step()
        if state == "name":
            return self._name_step()
        if state == "fence":
            if self._skip_closing("```json") is None:
                return False
            self._state = "args"
            return True
        if state == "args":
            return self._args_step()
        if state == "raw":
            return self._raw_step()
        return self._close_step()

    def _text_step(self) -> bool:
        found = self._text_markers.find(self._buf, self._pos, self._final)
        self._emit_text(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None:
            return False
        self._pos = found.marker_end
        if found.marker == "<think>":
            self._enter_reasoning()
        elif found.marker == "</think>":
            if not self._reasoning_cut_by_call:
                self._emit_text(found.marker)
            self._reasoning_cut_by_call = False
        elif found.marker == self.calls_begin:
            self._state = "calls"
            self._section, self._section_calls, self._in_section = [], False, True
        elif found.marker == self.call_begin:
            self._section_calls = True
            self._state = "header"
        # a stray end-of-section marker (the model closed a section twice) is dropped
        return True

    def _header_step(self) -> bool:
        """The call header up to the separator (V3.1: the name, and an id where embedded)."""
        got = self._collect_until(self._header_end)
        if got is None:
            return False
        text, marker = got
        if marker != self.sep:
            self._error("tool call has no separator", self.call_begin + text)
            self._state = self._after_call() if marker == self.call_end else "text"
            return True
        if self.fenced:
            self._state = "name"
        else:
            self._name, self._call_id = self._split_header(text.strip())
            self._state = "args"
        return True

    def _name_step(self) -> bool:
        """V3/R1: the tool name on the line after the separator."""
        got = self._collect_until(self._name_end)
        if got is None:
            return False
        self._name = got[0].strip()
        if got[1] != "\n":
            self._error("tool call has no arguments", self.call_begin + self._name)
            self._state = self._after_call() if got[1] == self.call_end else "text"
            return True
        self._state = "fence"
        return True

    def _args_step(self) -> bool:
        if not _NAME.fullmatch(self._name):
            self._error("tool call has no valid name", self.call_begin + self._name)
            self._state = "raw"
            self._raw_terminators = MarkerSet([self.call_end, self.calls_end])
            self._after_raw = "close"
            self._prefix = ""
            return True
        self._open_arguments(
            self.call_begin + self._name, self._name, self._terminators, self._call_id
        )
        self._state = "body"
        return True

    def _raw_step(self) -> bool:
        raw = self._collect_raw(self._raw_terminators)
        if raw is None:
            return False
        if self._current is not None:
            self._end_invalid(raw)
        self._state = self._after_raw
        return True

    def _close_step(self) -> bool:
        """An optional closing fence, then the end of this call."""
        if self.fenced and self._skip_closing("```") is None:
            return False
        if self._skip_closing(self.call_end) is None:
            return False
        self._state = self._after_call()
        return True

    def _after_call(self) -> str:
        # a call outside any section (its begin marker alone) is followed by content
        return "calls" if self._in_section else "text"

    def _calls_step(self) -> bool:
        """Inside the calls section. Text between calls is kept, whitespace and all: a section
        that ends without any call was not one, so it goes back to content verbatim, markers
        included; in a section with calls, stray text is reported (and left out of content)."""
        found = self._calls_markers.find(self._buf, self._pos, self._final)
        self._section.append(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None and not self._final:
            return False
        if found.marker == self.call_begin:
            self._pos = found.marker_end
            self._flush_section(None)
            self._section_calls = True
            self._state = "header"
            return True
        if found.marker is not None:
            self._pos = found.marker_end
        self._flush_section(found.marker or "")
        self._state = "text"
        self._in_section = False
        return found.marker is not None

    def _flush_section(self, end: str | None) -> None:
        """Release the section text gathered so far; ``end`` is the section's end marker (``""``
        at the end of output), ``None`` when a call follows."""
        text, self._section = "".join(self._section), []
        if end is not None and not self._section_calls:
            self._emit_text(self.calls_begin + text + end)
        elif text.strip():
            self._error("text inside the tool-call section is not a call; left out", text)

    def _split_header(self, header: str) -> tuple[str, str | None]:
        """The tool name (and call id, when the format embeds one) from a call header."""
        return header, None


class _DeepSeekV31Machine(_DeepSeekMachine):
    fenced = False


class DeepSeekV3Parser(TextFormatParser):
    """DeepSeek V3 / R1 tool calls (type, separator, name, fenced JSON arguments)."""

    name = "deepseek_v3"
    machine = _DeepSeekMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return (
            "## Tools\n\n### Function\n\nYou have the following functions available:\n\n"
            + "\n".join(
                f"- `{t.name}`:\n```json\n{json.dumps(t.to_openai_schema(), ensure_ascii=False)}\n```"
                for t in tools
            )
        )


class DeepSeekV31Parser(DeepSeekV3Parser):
    """DeepSeek V3.1 tool calls (name, separator, raw JSON arguments)."""

    name = "deepseek_v31"
    machine = _DeepSeekV31Machine


_KIMI_HEADER = re.compile(r"(?:functions\.)?([A-Za-z0-9_\-.]+?)(?::\d+)?")


class _KimiK2Machine(_DeepSeekV31Machine):
    calls_begin, calls_end = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
    call_begin, call_end = "<|tool_call_begin|>", "<|tool_call_end|>"
    sep = "<|tool_call_argument_begin|>"
    calls_in_reasoning = True  # Kimi-K2-Thinking writes its calls inside <think>

    def _split_header(self, header: str) -> tuple[str, str | None]:
        # "functions.get_weather:0" is both the name and the call id
        match = _KIMI_HEADER.fullmatch(header)
        name = match.group(1) if match else header
        if name.isdigit() and len(self._tools) == 1:
            # only a counter ("0"): the call can only be to the one tool there is
            name = next(iter(self._tools))
        return name, header or None


class KimiK2Parser(DeepSeekV3Parser):
    """Kimi K2: ``<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{..}``."""

    name = "kimi_k2"
    machine = _KimiK2Machine


class _FunctionTagMachine(_JsonFormatMachine):
    think_open: str | None = None
    think_close: str | None = None
    open_tag, close_tag = "<function=", "</function>"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "text"
        self._text_markers = MarkerSet([self.open_tag])
        self._name_end = MarkerSet([">", "\n", self.close_tag])
        self._terminators = MarkerSet([self.close_tag, self.open_tag])

    def _step(self) -> bool:
        state = self._state
        if state == "text":
            marker = self._text_until(self._text_markers)
            if marker is None:
                return False
            self._state = "name"
            return True
        if state == "name":
            got = self._collect_until(self._name_end)
            if got is None:
                return False
            text, marker = got
            if marker != ">" or not _NAME.fullmatch(text.strip()):
                # not a call: the tag was literal text
                self._emit_text(self.open_tag + text + (marker or ""))
                self._state = "text"
                return True
            name = text.strip()
            self._open_arguments(f"{self.open_tag}{name}>", name, self._terminators)
            self._state = "body"
            return True
        if state == "body":
            return self._body_step("after", self._terminators)
        if state == "raw":
            return self._raw_step()
        if self._skip_closing(self.close_tag) is None:
            return False
        self._state = "text"
        return True


class FunctionTagParser(TextFormatParser):
    """``<function=NAME>{..}</function>``: Llama 3.1 custom tools and Functionary v3.1."""

    name = "function_tag"
    machine = _FunctionTagMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        lines = []
        for tool in tools:
            lines.append(
                f"Use the function '{tool.name}' to: {tool.description}\n"
                + json.dumps(tool.to_openai_schema()["function"], ensure_ascii=False)
            )
        return (
            "You have access to the following functions:\n\n"
            + "\n\n".join(lines)
            + "\n\nIf you choose to call a function ONLY reply in the following format:\n"
            '<function=example_function_name>{"example_name": "example_value"}</function>\n'
            "Put the entire function call reply on one line."
        )
