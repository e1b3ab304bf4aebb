"""Qwen3-Coder XML format: ``<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>``.

Values are raw text (one leading and one trailing newline trimmed), typed by the tool's schema:
string parameters stream as JSON string fragments as they arrive; other types are decoded as
JSON or Python literals when the parameter closes (text that does not decode stays a string).
A closing tag counts only when what follows can continue the call (``</parameter>`` must be
followed by another parameter, ``</function>``, ``</tool_call>`` or the end), so code containing
``</parameter>`` inside a value is kept as value text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import StreamMachine, TextFormatParser, tools_json_lines
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, decode_arguments
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "GlmParser",
    "MiniMaxM2Parser",
    "Qwen3CoderParser",
    "SeedOssParser",
    "qwen3_coder_tools_prompt",
]

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
FN_OPEN, FN_CLOSE = "<function=", "</function>"
PARAM_OPEN, PARAM_CLOSE = "<parameter=", "</parameter>"

_NAME = re.compile(r"[A-Za-z0-9_.\-:]{1,128}")
_WS = re.compile(r"[ \t\r\n]*")
_WS_ANY = re.compile(r"\s+")
_LAYOUT = re.compile(r"(?:[ \t\r\n]|\\n)*")
_MAX_WAIT_WS = 64


def _param_type(tool: ToolDefinition | None, key: str) -> str:
    """``"string"`` (stream as text), ``"typed"`` (decode at close) or ``"infer"``."""
    if tool is None:
        return "infer"
    prop = (tool.parameters_schema.get("properties") or {}).get(key)
    if not isinstance(prop, dict):
        return "infer"
    kind = prop.get("type")
    if kind == "string":
        return "string"
    if isinstance(kind, str):
        return "typed"
    return "infer"


class _Qwen3CoderMachine(StreamMachine):
    call_open, call_close = CALL_OPEN, CALL_CLOSE
    fn_open, fn_close = FN_OPEN, FN_CLOSE
    param_open, param_close = PARAM_OPEN, PARAM_CLOSE
    #: What ends a parameter name, and the tag (if any) that must follow before the value.
    key_end: str = ">"
    value_open: str | None = None
    #: Whether a value written inline (no newline after its opening tag) keeps a trailing newline
    #: before ``</parameter>``: that newline is then part of the value (Seed-OSS file edits),
    #: not layout. Padded values (newline after the tag) always lose one on each side.
    keep_inline_newline: bool = False

    def _call_openers(self) -> tuple[str, ...]:
        return (self.call_open,)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # What may follow each closing tag for it to count as closing.
        self._continuations = {
            self.param_close: (self.param_open, self.fn_close, self.call_close),
            self.fn_close: (self.call_close, self.call_open),
            self.call_close: (self.call_open,),
        }
        self._follower_length = max(len(m) for ms in self._continuations.values() for m in ms)
        self._state = "text"
        opens = [self.call_open, self.fn_open] + ([self.think_open] if self.think_open else [])
        self._text_markers = MarkerSet(opens)
        self._call_markers = MarkerSet([self.fn_open, self.call_close])
        self._gt = MarkerSet([">"])
        self._key_end = MarkerSet([self.key_end])
        self._param_markers = MarkerSet([self.param_open, self.fn_close, self.call_close])
        # A new parameter tag also ends a value whose closing tag the model left out.
        self._value_ends = MarkerSet(
            [self.param_close, self.fn_close, self.call_close, self.param_open]
        )
        self._padded = False
        self._call: tuple[int, str, str] | None = None
        self._args: dict[str, Any] = {}
        self._raw: list[str] = []
        self._key = ""
        self._kind = "infer"
        self._value: list[str] = []
        self._value_started = False
        self._pending_nl = False
        self._opened_string = False

    # -- steps ---------------------------------------------------------------------------------
    def _step(self) -> bool:
        handler = getattr(self, "_st_" + self._state)
        result: bool = handler()
        return result

    def _st_text(self) -> bool:
        marker = self._text_until(self._text_markers)
        if marker is None:
            return False
        if marker == self.call_open:
            self._raw = [self.call_open]
            self._state = "call"
        elif marker == self.fn_open:
            self._raw = [self.fn_open]
            self._state = "fname"
        else:
            self._enter_reasoning()
        return True

    def _st_call(self) -> bool:
        if len(self._raw) == 1:  # just opened: a tag must follow, else the opener was prose
            match = _WS.match(self._buf, self._pos)
            end = match.end() if match else self._pos
            if end == len(self._buf) and not self._final and end - self._pos <= _MAX_WAIT_WS:
                return False
            if end == len(self._buf) or self._buf[end] != "<":
                self._emit_text(self.call_open + self._buf[self._pos : end])
                self._error(
                    f"{self.call_open!r} is not followed by a function; kept as text",
                    self.call_open,
                )
                self._pos = end
                self._state = "text"
                return True
            self._raw.append(self._buf[self._pos : end])
            self._pos = end
        found = self._call_markers.find(self._buf, self._pos, self._final)
        self._emit_text(_WS_ANY.sub("", self._buf[self._pos : found.text_end]))
        self._pos = found.text_end
        if found.marker is None:
            if self._final:
                self._error("tool call block has no <function=...>", "".join(self._raw))
            return False
        self._pos = found.marker_end
        if found.marker == self.call_close:
            self._error(
                "tool call block has no <function=...>", "".join(self._raw) + self.call_close
            )
            self._state = "text"
        else:
            self._raw.append(self.fn_open)
            self._state = "fname"
        return True

    def _st_fname(self) -> bool:
        got = self._collect_until(self._gt)
        if got is None:
            return False
        text, marker = got
        self._raw.append(text + (marker or ""))
        name = text.strip().strip("\"'")
        if marker is None or not _NAME.fullmatch(name):
            self._error("tool call has no valid function name", "".join(self._raw))
            self._state = "skip" if marker else "text"
            return True
        index, cid = self._start_call(name)
        self._call = (index, cid, name)
        self._args = {}
        self._state = "params"
        return True

    def _st_skip(self) -> bool:
        """After a malformed call: drop text up to the end of the block."""
        got = self._collect_until(MarkerSet([self.call_close]))
        if got is None:
            return False
        self._state = "text"
        return True

    def _st_params(self) -> bool:
        found = self._param_markers.find(self._buf, self._pos, self._final)
        self._raw.append(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None:
            return False
        self._pos = found.marker_end
        self._raw.append(found.marker)
        if found.marker == self.param_open:
            self._state = "pname"
        else:
            self._end_call(None)
            self._state = "after_fn" if found.marker == self.fn_close else "text"
        return True

    def _st_after_fn(self) -> bool:
        """After ``</function>``: the block's closing tag, or another function in the block."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + max(len(self.call_close), len(self.fn_open))]
        if rest.startswith(self.call_close):
            self._pos = end + len(self.call_close)
        elif rest.startswith(self.fn_open):
            self._pos = end + len(self.fn_open)
            self._raw = [self.fn_open]
            self._state = "fname"
            return True
        elif (
            not self._final
            and end - self._pos <= _MAX_WAIT_WS
            and (self.call_close.startswith(rest) or self.fn_open.startswith(rest))
        ):
            return False
        self._state = "text"
        return True

    def _st_pname(self) -> bool:
        got = self._collect_until(self._key_end)
        if got is None:
            return False
        text, marker = got
        self._raw.append(text + (marker or ""))
        self._key = text.strip().strip("\"'")
        if marker is None:  # the output ended inside a parameter name: the call was cut off
            self._state = "ended"
            return False
        assert self._call is not None
        self._kind = _param_type(self._tool(self._call[2]), self._key)
        self._value = []
        self._value_started = False
        self._pending_nl = False
        self._opened_string = False
        self._state = "value" if self.value_open is None else "value_open"
        return True

    def _st_ended(self) -> bool:
        """The output ended mid-call; :meth:`_finish` reports the cut-off call."""
        return False

    def _st_value_open(self) -> bool:
        """Between a key and its value (GLM): spaces, then the value's opening tag."""
        assert self.value_open is not None
        closed = self._skip_tag(self.value_open)
        if closed is None:
            return False
        # without its opening tag the value starts right here; the value state records it in
        # the raw text, so it is not added here (that would repeat it, and differently whole
        # and streamed)
        self._state = "value"
        return True

    def _skip_tag(self, tag: str) -> bool | None:
        # line breaks written as the two characters \n (GLM-4.6) count as layout too
        match = _LAYOUT.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + len(tag)]
        if rest == tag:
            self._raw.append(self._buf[self._pos : end + len(tag)])
            self._pos = end + len(tag)
            return True
        waiting = not self._final and end - self._pos <= _MAX_WAIT_WS
        if waiting and (tag.startswith(rest) or rest == "\\"):
            return None
        return False

    def _st_value(self) -> bool:
        found = self._value_ends.find(self._buf, self._pos, self._final)
        self._value_text(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None:
            return False
        if found.marker == self.param_open:
            return self._next_param_in_value(found.marker, found.marker_end)
        verdict = self._closes(found.marker, found.marker_end)
        if verdict is None:
            return False
        if not verdict:
            self._value_text(found.marker)
            self._pos = found.marker_end
            return True
        self._pos = found.marker_end
        inline = self.keep_inline_newline and not self._padded
        if found.marker == self.param_close and self._pending_nl and inline:
            self._pending_nl = False
            self._append_value("\n")
        self._end_value()
        self._raw.append(found.marker)
        if found.marker == self.param_close:
            self._state = "params"
        else:
            self._end_call(None)
            self._state = "after_fn" if found.marker == self.fn_close else "text"
        return True

    def _next_param_in_value(self, marker: str, end: int) -> bool:
        """A parameter tag inside a value: the value's closing tag is missing when a valid name
        and the end of the tag follow (vLLM and SGLang read it so); otherwise it is value text."""
        tail = self._buf[end : end + 130]
        stop = tail.find(self.key_end)
        if stop < 0 and not self._final and len(tail) < 130:
            return False  # more text decides
        name = tail[:stop].strip().strip("\"'") if stop >= 0 else ""
        if not _NAME.fullmatch(name):
            self._value_text(marker)
            self._pos = end
            return True
        self._pos = end
        self._end_value()
        self._raw.append(marker)
        self._state = "pname"
        return True

    def _closes(self, marker: str, end: int) -> bool | None:
        """Whether ``marker`` ending at ``end`` closes; ``None`` when more text must be seen."""
        match = _WS.match(self._buf, end)
        after = match.end() if match else end
        if after - end > _MAX_WAIT_WS:
            return True
        # only as much as the longest follower: never copy the rest of the output
        rest = self._buf[after : after + self._follower_length]
        if not rest:
            return True if self._final else None
        for follower in self._continuations[marker]:
            if rest.startswith(follower):
                return True
            if follower.startswith(rest) and not self._final:
                return None
        return False

    # -- values and calls ------------------------------------------------------------------------
    def _value_text(self, piece: str) -> None:
        if not piece:
            return
        self._raw.append(piece)
        if not self._value_started:
            self._value_started = True
            self._padded = piece.startswith("\n")
            if self._padded:
                piece = piece[1:]
        if self._pending_nl:
            piece = "\n" + piece
            self._pending_nl = False
        if piece.endswith("\n"):
            piece = piece[:-1]
            self._pending_nl = True
        if piece:
            self._append_value(piece)

    def _append_value(self, piece: str) -> None:
        self._value.append(piece)
        if self._kind == "string":
            assert self._call is not None
            if not self._opened_string:
                self._opened_string = True
                self._emit_arguments(self._call[0], self._key_prefix() + '"')
            self._emit_arguments(self._call[0], json.dumps(piece, ensure_ascii=False)[1:-1])

    def _key_prefix(self) -> str:
        lead = "{" if not self._args else ", "
        return lead + json.dumps(self._key, ensure_ascii=False) + ": "

    def _end_value(self) -> None:
        assert self._call is not None
        text = "".join(self._value)
        if self._kind == "string":
            if not self._opened_string:
                self._emit_arguments(self._call[0], self._key_prefix() + '"')
            self._emit_arguments(self._call[0], '"')
            value: Any = text
        else:
            value = _coerce(text, self._kind)
            self._emit_arguments(
                self._call[0], self._key_prefix() + json.dumps(value, ensure_ascii=False)
            )
        self._args[self._key] = value
        self._value = []

    def _end_call(self, problem: str | None) -> None:
        if self._call is None:
            return
        index, cid, name = self._call
        self._emit_arguments(index, "}" if self._args else "{}")
        self._finish_call(
            index, cid, name, dict(self._args), raw="".join(self._raw), problem=problem
        )
        self._call = None
        self._raw = []

    def _finish(self) -> None:
        if self._call is not None:
            if self._state == "value":
                self._end_value()
            self._end_call("tool call was cut off before </function>")


def _coerce(text: str, kind: str) -> Any:
    stripped = text.strip()
    if not stripped:
        return text
    try:
        return decode_arguments(stripped)
    except LiteralSyntaxError:
        pass
    except (ValueError, RecursionError):  # pragma: no cover - defensive
        return text
    if stripped[0] in "[{" and '\\"' in stripped:
        # JSON written with escaped quotes, as if inside a string (GLM-4.6 does this)
        try:
            return decode_arguments(json.loads('"' + stripped + '"'))
        except (LiteralSyntaxError, ValueError, RecursionError):
            pass
    return text


def qwen3_coder_tools_prompt(tools: Sequence[ToolDefinition]) -> str:
    """The tools section of a Qwen3-Coder system prompt."""
    lines = ["# Tools", "", "You have access to the following functions:", "", "<tools>"]
    for tool in tools:
        lines.append(f"<function>\n<name>{tool.name}</name>")
        if tool.description:
            lines.append(f"<description>{tool.description}</description>")
        lines.append("<parameters>")
        schema = tool.parameters_schema
        for key, prop in (schema.get("properties") or {}).items():
            prop = prop if isinstance(prop, dict) else {}
            lines.append(f"<parameter>\n<name>{key}</name>")
            if "type" in prop:
                lines.append(f"<type>{prop['type']}</type>")
            if prop.get("description"):
                lines.append(f"<description>{prop['description']}</description>")
            lines.append("</parameter>")
        if schema.get("required"):
            lines.append(f"<required>{json.dumps(schema['required'])}</required>")
        lines.append("</parameters>\n</function>")
    lines += [
        "</tools>",
        "",
        "If you choose to call a function ONLY reply in the following format with NO suffix:",
        "",
        "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
        "</parameter>\n</function>\n</tool_call>",
    ]
    return "\n".join(lines)


class Qwen3CoderParser(TextFormatParser):
    """Qwen3-Coder / Qwen3.5 XML-style tool calls with schema-typed parameters."""

    name = "qwen3_coder"
    machine = _Qwen3CoderMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return qwen3_coder_tools_prompt(tools)


class _SeedOssMachine(_Qwen3CoderMachine):
    call_open, call_close = "<seed:tool_call>", "</seed:tool_call>"
    think_open = "<seed:think>"
    think_close = "</seed:think>"
    keep_inline_newline = True


class SeedOssParser(Qwen3CoderParser):
    """Seed-OSS: Qwen3-Coder-style calls inside ``<seed:tool_call>``, ``<seed:think>`` reasoning."""

    name = "seed_oss"
    machine = _SeedOssMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return (
            qwen3_coder_tools_prompt(tools)
            .replace("<tool_call>", self.machine.call_open)
            .replace("</tool_call>", self.machine.call_close)
        )


class _MiniMaxM2Machine(_Qwen3CoderMachine):
    call_open, call_close = "<minimax:tool_call>", "</minimax:tool_call>"
    fn_open, fn_close = "<invoke name=", "</invoke>"
    param_open, param_close = "<parameter name=", "</parameter>"


class MiniMaxM2Parser(Qwen3CoderParser):
    """MiniMax-M2: ``<minimax:tool_call><invoke name="N"><parameter name="k">v</parameter>...``."""

    name = "minimax_m2"
    machine = _MiniMaxM2Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        schemas = "\n".join(
            "<tool>" + json.dumps(t.to_openai_schema()["function"], ensure_ascii=False) + "</tool>"
            for t in tools
        )
        return (
            "# Tools\nYou may call one or more tools to assist with the user query.\n"
            "Here are the tools available in JSONSchema format:\n\n<tools>\n"
            + schemas
            + "\n</tools>\n\n"
            "When making tool calls, use XML format to invoke tools and pass parameters:\n\n"
            '<minimax:tool_call>\n<invoke name="tool-name-1">\n<parameter name="param-key-1">'
            "param-value-1</parameter>\n</invoke>\n</minimax:tool_call>"
        )


class _GlmMachine(_Qwen3CoderMachine):
    """GLM-4.5 / 4.6 / 4.7: the name follows ``<tool_call>`` directly; key/value tag pairs."""

    param_open, param_close = "<arg_key>", "</arg_value>"
    fn_close = CALL_CLOSE
    key_end = "</arg_key>"
    value_open = "<arg_value>"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_end = MarkerSet(["\n", self.param_open, self.call_close])
        opens = [self.call_open] + ([self.think_open] if self.think_open else [])
        self._text_markers = MarkerSet(opens)

    def _st_call(self) -> bool:
        got = self._collect_until(self._name_end)
        if got is None:
            return False
        text, marker = got
        name = text.strip()
        while name.endswith("\\n"):  # a line break written as the two characters \n
            name = name[:-2].rstrip()
        self._raw.append(text + (marker or ""))
        if not _NAME.fullmatch(name):
            # not a call: the tag was literal text
            self._emit_text("".join(self._raw))
            self._error(
                f"{self.call_open!r} is not followed by a function name; kept as text",
                self.call_open,
            )
            self._raw = []
            self._state = "text"
            return True
        index, cid = self._start_call(name)
        self._call = (index, cid, name)
        self._args = {}
        if marker == self.param_open:
            self._state = "pname"
        elif marker == self.call_close:
            self._end_call(None)
            self._state = "text"
        else:
            self._state = "params"
        return True


class GlmParser(Qwen3CoderParser):
    """GLM-4.5 / 4.6 / 4.7: ``<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>``."""

    name = "glm45"
    machine = _GlmMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        schemas = tools_json_lines(tools)
        return (
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            + schemas
            + "\n</tools>\n\nFor each function call, output the function name and arguments within "
            "the following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
            "<arg_value>{arg-value-1}</arg_value>\n...\n</tool_call>"
        )
