"""XML-parameter formats built on the Qwen3-Coder machine: DeepSeek V3.2 / V4 DSML and Step-3.

- DeepSeek V3.2: ``<｜DSML｜function_calls>`` holding
  ``<｜DSML｜invoke name="NAME"><｜DSML｜parameter name="KEY" string="true">VALUE</｜DSML｜parameter>
  </｜DSML｜invoke>``; V4 spells the wrapper ``<｜DSML｜tool_calls>``. ``string="true"`` means the
  value is the text as written; ``string="false"`` means it is JSON. Reasoning is ``<think>``.
- Step-3: ``<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke
  name="NAME"><steptml:parameter name="KEY">VALUE</steptml:parameter></steptml:invoke>
  <｜tool_call_end｜><｜tool_calls_end｜>``; values are typed by the tool's schema.

Both stream string values as they arrive, like the other XML-parameter formats.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import TextFormatParser, tools_json_lines
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, decode_arguments
from tooluse.formats.xml_params import Qwen3CoderParser, _param_type, _Qwen3CoderMachine
from tooluse.tools.definition import ToolDefinition

__all__ = ["DeepSeekV32Parser", "DeepSeekV4Parser", "Step3Parser"]

_DSML = "｜DSML｜"
# A parameter header after ``name=``: the quoted key, then optional attributes.
_PARAM_HEAD = re.compile(r"""\s*["']?([^"'\s>]*)["']?(.*)""", re.DOTALL)
_STRING_ATTR = re.compile(r"""string\s*=\s*["']?(true|false)""", re.IGNORECASE)


class _TaggedMachine(_Qwen3CoderMachine):
    """Adds markers that are dropped from content (a calls section around the calls)."""

    drop_markers: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opens = [self.call_open, self.fn_open, *self.drop_markers]
        if self.think_open:
            opens.append(self.think_open)
        self._text_markers = MarkerSet(opens)

    def _st_text(self) -> bool:
        marker = self._text_until(self._text_markers)
        if marker is None:
            return False
        if marker in self.drop_markers:
            return True
        if marker == self.call_open:
            self._raw = [self.call_open]
            self._state = "call"
        elif marker == self.fn_open:
            self._raw = [self.fn_open]
            self._state = "fname"
        else:
            self._enter_reasoning()
        return True


class _DsmlMachine(_TaggedMachine):
    call_open, call_close = f"<{_DSML}function_calls>", f"</{_DSML}function_calls>"
    fn_open, fn_close = f"<{_DSML}invoke name=", f"</{_DSML}invoke>"
    param_open, param_close = f"<{_DSML}parameter name=", f"</{_DSML}parameter>"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loose: list[str] = []  # text inside an invoke outside parameters

    def _st_params(self) -> bool:
        found = self._param_markers.find(self._buf, self._pos, self._final)
        if not self._args:
            self._loose.append(self._buf[self._pos : found.text_end])
        return super()._st_params()

    def _end_call(self, problem: str | None) -> None:
        # An invoke may hold its arguments as one JSON object instead of parameters.
        loose, self._loose = "".join(self._loose).strip(), []
        if self._call is not None and not self._args and loose.startswith("{"):
            try:
                value = decode_arguments(loose)
            except LiteralSyntaxError:
                value = None
            if isinstance(value, dict) and value:
                self._emit_arguments(self._call[0], json.dumps(value, ensure_ascii=False)[:-1])
                self._args = value
        super()._end_call(problem)

    def _st_pname(self) -> bool:
        got = self._collect_until(self._key_end)
        if got is None:
            return False
        text, marker = got
        self._raw.append(text + (marker or ""))
        head = _PARAM_HEAD.fullmatch(text)
        self._key = head.group(1) if head else text.strip()
        if marker is None:  # cut off inside the parameter header
            self._state = "ended"
            return False
        assert self._call is not None
        attr = _STRING_ATTR.search(head.group(2)) if head else None
        if attr is None:
            self._kind = _param_type(self._tool(self._call[2]), self._key)
        else:
            self._kind = "string" if attr.group(1).lower() == "true" else "typed"
        self._value = []
        self._value_started = False
        self._pending_nl = False
        self._opened_string = False
        self._state = "value"
        return True


class _DsmlV4Machine(_DsmlMachine):
    call_open, call_close = f"<{_DSML}tool_calls>", f"</{_DSML}tool_calls>"


def _dsml_prompt(tools: Sequence[ToolDefinition], wrapper: str) -> str:
    return (
        "## Tools\n\nYou have access to a set of tools to help answer the user's question. "
        f'You can invoke tools by writing a "<{_DSML}{wrapper}>" block like the following:\n\n'
        f'<{_DSML}{wrapper}>\n<{_DSML}invoke name="$TOOL_NAME">\n'
        f'<{_DSML}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE'
        f"</{_DSML}parameter>\n...\n</{_DSML}invoke>\n</{_DSML}{wrapper}>\n\n"
        'String parameters are written as they are with string="true"; numbers, booleans, '
        'arrays and objects are written as JSON with string="false".\n\n'
        "### Available Tool Schemas\n\n" + tools_json_lines(tools)
    )


class DeepSeekV32Parser(Qwen3CoderParser):
    """DeepSeek V3.2 DSML calls: ``<｜DSML｜function_calls><｜DSML｜invoke name=..>``."""

    name = "deepseek_v32"
    machine = _DsmlMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return _dsml_prompt(tools, "function_calls")


class DeepSeekV4Parser(DeepSeekV32Parser):
    """DeepSeek V4 DSML calls: ``<｜DSML｜tool_calls><｜DSML｜invoke name=..>``."""

    name = "deepseek_v4"
    machine = _DsmlV4Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return _dsml_prompt(tools, "tool_calls")


class _Step3Machine(_TaggedMachine):
    call_open = "<｜tool_call_begin｜>function<｜tool_sep｜>"
    call_close = "<｜tool_call_end｜>"
    fn_open, fn_close = "<steptml:invoke name=", "</steptml:invoke>"
    param_open, param_close = "<steptml:parameter name=", "</steptml:parameter>"
    drop_markers = ("<｜tool_calls_begin｜>", "<｜tool_calls_end｜>")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # After a call ends, the next call or the end of the calls section may follow.
        self._continuations[self.call_close] = (self.call_open, "<｜tool_calls_end｜>")
        self._continuations[self.fn_close] = (self.call_close, self.call_open)
        self._follower_length = max(len(m) for ms in self._continuations.values() for m in ms)


class Step3Parser(TextFormatParser):
    """Step-3: ``<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=..>`` calls."""

    name = "step3"
    machine = _Step3Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        lines = ["# Tools", "", "You may call the following functions:", ""]
        for tool in tools:
            lines.append(json.dumps(tool.to_openai_schema()["function"], ensure_ascii=False))
        lines += [
            "",
            "To call a function, reply with:",
            "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
            '<steptml:invoke name="FUNCTION"><steptml:parameter name="KEY">VALUE'
            "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        ]
        return "\n".join(lines)
