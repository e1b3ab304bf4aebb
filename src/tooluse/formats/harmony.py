"""gpt-oss Harmony format, read from text.

A turn is a run of messages ``<|start|>assistant<|channel|>CHANNEL<|message|>BODY<|end|>``
(the first header usually starts at ``<|channel|>`` because the prompt ends with
``<|start|>assistant``). The ``analysis`` channel is reasoning, ``final`` is content, and a header
with a recipient ``to=functions.NAME`` (in the role part or after the channel) makes the body
the JSON arguments of a call ending with ``<|call|>``. Built-in recipients (``browser.search``,
``python``) are reported under their own names, except that a message to ``python`` is a call of
the program tool when code mode offers one (its body is the program).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import TextFormatParser
from tooluse.formats.json_calls import JsonCallMachine
from tooluse.formats.lexer import MarkerSet
from tooluse.tools.definition import ToolDefinition

__all__ = ["HarmonyParser", "harmony_tools_prompt"]

START, END, MESSAGE, CHANNEL = "<|start|>", "<|end|>", "<|message|>", "<|channel|>"
RETURN, CALL = "<|return|>", "<|call|>"

_CHANNEL_RE = re.compile(r"<\|channel\|>\s*([A-Za-z_]+)")
_RECIPIENT_RE = re.compile(r"\bto=([^\s<]+)")
_WS = re.compile(r"[ \t\r\n]*")
_ENDS = (CALL, END, RETURN, START)
_LEAD_RECIPIENT = "to="
# Recipients that address a role, not a tool: ``commentary to=assistant`` is no call.
_ROLE_RECIPIENTS = frozenset({"assistant", "user", "system", "developer", "all"})


class _HarmonyMachine(JsonCallMachine):
    think_open: str | None = None
    think_close: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "start"
        self._outside = MarkerSet([START, CHANNEL, MESSAGE])
        self._header_end = MarkerSet([MESSAGE, START, END, CALL, RETURN])
        self._body_end = MarkerSet([END, RETURN, CALL, START])
        self._header_prefix = ""
        self._channel = ""

    def _step(self) -> bool:
        state = self._state
        if state == "content":
            return self._message_step(reasoning=False)
        if state == "body":
            progress = self._scan_body()
            if progress is not None:
                return progress
            self._state = "raw" if self._end_body() == "invalid" else "after"
            return True
        if state == "reasoning":
            return self._message_step(reasoning=True)
        if state == "outside":
            return self._outside_step()
        if state == "header":
            return self._header_step()
        if state == "start":
            return self._start_step()
        if state == "code":
            code = self._collect_raw(self._body_end)
            if code is None:
                return False
            program = self._program_tool()
            assert program is not None
            self._whole_call(program, {"code": code.strip()}, raw=code)
            self._state = "after"
            return True
        if state == "raw":
            raw = self._collect_raw(self._body_end)
            if raw is None:
                return False
            self._end_invalid(raw)
            self._state = "after"
            return True
        return self._after_step()

    def _start_step(self) -> bool:
        # The prompt ends with "<|start|>assistant", so the first header may begin with the
        # role part's recipient: " to=functions.NAME<|channel|>commentary json<|message|>".
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + len(_LEAD_RECIPIENT)]
        if rest == _LEAD_RECIPIENT:
            self._header_prefix = ""
            self._state = "header"
            return True
        if not self._final and _LEAD_RECIPIENT.startswith(rest) and end - self._pos <= 64:
            return False
        self._state = "outside"
        return True

    def _outside_step(self) -> bool:
        marker = self._text_until(self._outside)
        if marker is None:
            return False
        if marker == MESSAGE:
            self._channel = "final"
            self._state = "content"
        else:
            self._header_prefix = marker
            self._state = "header"
        return True

    def _header_step(self) -> bool:
        got = self._collect_until(self._header_end)
        if got is None:
            return False
        text, marker = got
        header = self._header_prefix + text
        if marker != MESSAGE:
            self._error("Harmony header without <|message|>", header + (marker or ""))
            self._header_prefix = START
            self._state = "header" if marker == START else "outside"
            return True
        self._open_message(header)
        return True

    def _message_step(self, *, reasoning: bool) -> bool:
        """Content or reasoning text up to the message's end marker."""
        found = self._body_end.find(self._buf, self._pos, self._final)
        piece = self._buf[self._pos : found.text_end]
        if reasoning:
            self._emit_reasoning(piece)
        else:
            self._emit_text(piece)
        self._pos = found.text_end
        if found.marker is None:
            return False
        self._end_message(found.marker, found.marker_end)
        return True

    def _after_step(self) -> bool:
        """After a call's arguments: the message's end marker, if it follows."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + 12]
        for marker in (CALL, END, RETURN, START):
            if rest.startswith(marker):
                self._end_message(marker, end + len(marker))
                return True
        if not self._final and end - self._pos <= 64 and any(m.startswith(rest) for m in _ENDS):
            return False
        self._state = "outside"
        return True

    def _end_message(self, marker: str, marker_end: int) -> None:
        if marker == START:
            self._pos = marker_end
            self._header_prefix = START
            self._state = "header"
        else:
            self._pos = marker_end
            self._state = "outside"

    def _open_message(self, header: str) -> None:
        channels = _CHANNEL_RE.findall(header)
        self._channel = channels[-1] if channels else ""  # a repeated channel: the last counts
        targets = [t for t in _RECIPIENT_RE.findall(header) if t not in _ROLE_RECIPIENTS]
        if targets and targets[0] == "python" and self._program_tool() is not None:
            self._state = "code"  # code mode: what the model sends to python is the program
        elif targets:
            name = targets[0].removeprefix("functions.")
            self._open_arguments(header + MESSAGE, name, self._body_end)
            self._state = "body"
        elif self._channel == "analysis":
            self._state = "reasoning"
        else:
            self._state = "content"


def _ts_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_ts_type({**schema, "type": k}) for k in kind)
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        return f"{_ts_type(schema.get('items'))}[]"
    if kind == "object" or "properties" in schema:
        fields = _ts_fields(schema)
        return "{ " + " ".join(fields) + " }" if fields else "object"
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return " | ".join(_ts_type(o) for o in options)
    return "any"


def _ts_fields(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", ()))
    out = []
    for key, prop in (schema.get("properties") or {}).items():
        mark = "" if key in required else "?"
        out.append(f"{key}{mark}: {_ts_type(prop)},")
    return out


def harmony_tools_prompt(tools: Sequence[ToolDefinition]) -> str:
    """The ``# Tools`` section of a Harmony developer message (TypeScript-like declarations)."""
    lines = ["# Tools", "", "## functions", "", "namespace functions {", ""]
    for tool in tools:
        if tool.description:
            lines.append(f"// {tool.description}")
        schema = tool.parameters_schema
        if schema.get("properties"):
            lines.append(f"type {tool.name} = (_: {{")
            for key, prop in schema["properties"].items():
                if isinstance(prop, dict) and prop.get("description"):
                    lines.append(f"// {prop['description']}")
                mark = "" if key in set(schema.get("required", ())) else "?"
                lines.append(f"{key}{mark}: {_ts_type(prop)},")
            lines.append("}) => any;")
        else:
            lines.append(f"type {tool.name} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


class HarmonyParser(TextFormatParser):
    """gpt-oss Harmony messages read from text (channels, ``to=functions.NAME`` calls)."""

    name = "harmony"
    machine = _HarmonyMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return harmony_tools_prompt(tools)
