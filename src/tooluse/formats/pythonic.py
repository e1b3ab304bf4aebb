"""Python-call formats: pythonic lists (Llama 3.2 / 4, BFCL prompting) and Gemma ``tool_code``.

- Pythonic: ``[get_weather(city="Paris"), today()]`` as the whole start of the turn, or inside
  Llama 4's ``<|python_start|>..<|python_end|>``. Each call is emitted as soon as its closing
  parenthesis arrives; values may be Python or JSON literals.
- Gemma 3 ``tool_code``: a fenced block ```` ```tool_code\\nget_weather(city="Paris")\\n``` ````
  holding one or more calls (``print(...)`` around a call is accepted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import StreamMachine, TextFormatParser
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, parse_python_calls
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "GemmaToolCodeParser",
    "Lfm2Parser",
    "Olmo3Parser",
    "PythonicParser",
    "pythonic_tools_prompt",
]

PY_START, PY_END = "<|python_start|>", "<|python_end|>"
_LIST_START = re.compile(r"\[\s*[A-Za-z_][A-Za-z0-9_.]*\s*\(")
_LIST_PREFIX_CHARS = re.compile(r"\[\s*[A-Za-z0-9_.]*\s*")
_WS = re.compile(r"[ \t\r\n]*")
_STOP = re.compile(r"""["'\\]""")
_MAX_LOOKAHEAD = 256


class _ListScanner:
    """Walks a Python list of calls: depth, quotes and escapes; collects each element's text."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""
        self.escape = False
        self.done = False
        self.element: list[str] = []
        self.el_start = 0
        self.finished: list[str] = []  # completed elements, taken by the machine

    def scan(self, text: str, i: int) -> int:
        n = len(text)
        self.el_start = i
        while i < n:
            if self.quote:
                if self.escape:
                    self.escape = False
                    i += 1
                    continue
                match = _STOP.search(text, i)
                if match is None:
                    i = n
                    break
                j = match.start()
                if text[j] == "\\":
                    if j + 1 < n:
                        i = j + 2
                        continue
                    self.escape = True
                    i = n
                    break
                i = j + 1
                if text[j] == self.quote:
                    self.quote = ""
                continue
            c = text[i]
            if c in "\"'":
                self.quote = c
            elif c in "([{":
                self.depth += 1
                if self.depth == 1:
                    self.el_start = i + 1
            elif c in ")]}":
                self.depth -= 1
                if self.depth == 0:  # the list closed
                    self._end_element(text, i)
                    self.done = True
                    return i + 1
            elif c == "," and self.depth == 1:
                self._end_element(text, i)
                self.el_start = i + 1
            i += 1
        if self.depth >= 1:
            self.element.append(text[self.el_start : i])
        return i

    def _end_element(self, text: str, i: int) -> None:
        self.element.append(text[self.el_start : i])
        piece = "".join(self.element).strip()
        if piece:
            self.finished.append(piece)
        self.element = []


class _PythonicMachine(StreamMachine):
    block_open, block_close = PY_START, PY_END
    #: Whether a bare list at the start of the turn is read as calls.
    bare_list = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "start"
        opens = [self.block_open] + ([self.think_open] if self.think_open else [])
        self._text_markers = MarkerSet(opens)
        self._py_end = MarkerSet([self.block_close])
        self._scanner: _ListScanner | None = None
        self._block_prefix = ""

    def _step(self) -> bool:
        state = self._state
        if state == "start":
            verdict = self._list_ahead() if self.bare_list else False
            if verdict is None:
                return False
            if verdict:
                self._open_list("")
            else:
                self._state = "text"
            return True
        if state == "text":
            found = self._text_markers.find(self._buf, self._pos, self._final)
            self._emit_text(self._buf[self._pos : found.text_end])
            self._pos = found.text_end
            if found.marker is None:
                return False
            self._pos = found.marker_end
            if found.marker == self.block_open:
                self._state = "block"
            else:
                self._enter_reasoning()
            return True
        if state == "block":  # after <|python_start|>: a list, or bare calls up to <|python_end|>
            match = _WS.match(self._buf, self._pos)
            end = match.end() if match else self._pos
            if end == len(self._buf) and not self._final:
                self._pos = end
                return False
            self._pos = end
            if self._buf.startswith("[", end):
                self._open_list(self.block_open)
            else:
                self._state = "bare"
            return True
        if state == "bare":
            got = self._collect_until(self._py_end)
            if got is None:
                return False
            self._emit_calls(got[0], self.block_open + got[0] + (got[1] or ""))
            self._state = "text"
            return True
        if state == "list":
            return self._list_step()
        # "after" a list: drop <|python_end|> when it follows
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + len(self.block_close)]
        if rest == self.block_close:
            self._pos = end + len(self.block_close)
        elif not self._final and self.block_close.startswith(rest) and end - self._pos <= 64:
            return False
        self._state = "text"
        return True

    def _list_ahead(self) -> bool | None:
        """At the start of the turn: does a list of calls begin here? ``None``: undecided."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        if end - self._pos > _MAX_LOOKAHEAD:
            return False
        if end == len(self._buf):
            return None if not self._final else False
        if self._buf[end] != "[":
            return False
        if _LIST_START.match(self._buf, end):
            self._pos = end
            return True
        prefix = _LIST_PREFIX_CHARS.match(self._buf, end)
        still_possible = prefix is not None and prefix.end() == len(self._buf)
        if still_possible and not self._final and len(self._buf) - end <= _MAX_LOOKAHEAD:
            return None
        return False

    def _open_list(self, prefix: str) -> None:
        self._scanner = _ListScanner()
        self._block_prefix = prefix
        self._list_raw: list[str] = []
        self._state = "list"

    def _list_step(self) -> bool:
        scanner = self._scanner
        assert scanner is not None
        start = self._pos
        if self._final and start >= len(self._buf):
            self._cut_list()
            return False
        self._pos = scanner.scan(self._buf, self._pos)
        self._list_raw.append(self._buf[start : self._pos])
        for element in scanner.finished:
            self._emit_calls(element, element)
        scanner.finished = []
        if scanner.done:
            self._scanner = None
            self._state = "after"
            return True
        if self._final:
            self._cut_list()
            return False
        return self._pos != start

    def _cut_list(self) -> None:
        scanner = self._scanner
        if scanner is None:
            return
        self._scanner = None
        rest = "".join(scanner.element).strip()
        raw = self._block_prefix + "".join(self._list_raw)
        self._error("list of tool calls was cut off before ']'", raw)
        self._state = "text"
        if rest:
            try:  # a last call complete up to its ')' is still usable
                calls = parse_python_calls(rest)
            except LiteralSyntaxError:
                return
            for name, arguments in calls:
                self._whole_call(name, arguments, raw=rest)

    def _emit_calls(self, code: str, raw: str) -> None:
        try:
            calls = parse_python_calls(code.strip())
        except LiteralSyntaxError as exc:
            self._error(f"not a Python function call: {exc}", raw)
            return
        if not calls:
            self._error("empty tool call block", raw)
        for name, arguments in calls:
            self._whole_call(name, arguments, raw=raw)

    def _finish(self) -> None:
        if self._scanner is not None:
            self._cut_list()


def pythonic_tools_prompt(tools: Sequence[ToolDefinition]) -> str:
    """A prompt section asking for calls as a Python list (Llama 3.2 / 4 and BFCL style)."""
    schemas = "\n".join(json.dumps(t.to_openai_schema(), ensure_ascii=False) for t in tools)
    return (
        "You are an expert in composing functions. You are given a question and a set of "
        "possible functions. Based on the question, you will need to make one or more function "
        "calls to achieve the purpose.\n\n"
        "If you decide to invoke any of the function(s), you MUST put it in the format of "
        "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n"
        "You SHOULD NOT include any other text in the response if you call a function.\n\n"
        "Here is a list of functions in JSON format that you can invoke.\n\n" + schemas
    )


class PythonicParser(TextFormatParser):
    """Pythonic call lists: ``[f(a=1), g(b='x')]`` (Llama 3.2 / 4, ToolACE, BFCL prompting)."""

    name = "pythonic"
    machine = _PythonicMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return pythonic_tools_prompt(tools)


class _Lfm2Machine(_PythonicMachine):
    block_open, block_close = "<|tool_call_start|>", "<|tool_call_end|>"
    bare_list = False


class Lfm2Parser(PythonicParser):
    """LFM2: a pythonic list between ``<|tool_call_start|>`` and ``<|tool_call_end|>``."""

    name = "lfm2"
    machine = _Lfm2Machine


class _Olmo3Machine(_PythonicMachine):
    block_open, block_close = "<function_calls>", "</function_calls>"
    bare_list = False


class Olmo3Parser(PythonicParser):
    """Olmo 3: Python calls, one per line, inside ``<function_calls>...</function_calls>``."""

    name = "olmo3"
    machine = _Olmo3Machine


FENCE_OPEN, FENCE_CLOSE = "```tool_code", "```"


class _ToolCodeMachine(StreamMachine):
    think_open: str | None = None
    think_close: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_block = False
        self._open = MarkerSet([FENCE_OPEN])
        self._close = MarkerSet([FENCE_CLOSE])

    def _step(self) -> bool:
        if not self._in_block:
            found = self._open.find(self._buf, self._pos, self._final)
            self._emit_text(self._buf[self._pos : found.text_end])
            self._pos = found.text_end
            if found.marker is None:
                return False
            self._pos = found.marker_end
            self._in_block = True
            return True
        got = self._collect_until(self._close)
        if got is None:
            return False
        code, marker = got
        self._in_block = False
        raw = FENCE_OPEN + code + (marker or "")
        if marker is None:
            self._error("tool_code block was cut off before its closing fence", raw)
        try:
            calls = parse_python_calls(code.strip())
        except LiteralSyntaxError as exc:
            self._error(f"tool_code block is not a Python function call: {exc}", raw)
            return True
        if not calls:
            self._error("empty tool_code block", raw)
        for name, arguments in calls:
            self._whole_call(name, arguments, raw=raw)
        return True


class GemmaToolCodeParser(TextFormatParser):
    """Gemma 3 prompted tool use: calls in a ```` ```tool_code ```` block."""

    name = "gemma_tool_code"
    machine = _ToolCodeMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        schemas = "\n".join(json.dumps(t.to_openai_schema(), ensure_ascii=False) for t in tools)
        return (
            "You have access to functions. If you decide to invoke any of the function(s), write "
            "the call as Python in a block that starts with ```tool_code and ends with ```, for "
            'example:\n```tool_code\nget_weather(city="Paris")\n```\n'
            "The result comes back in a ```tool_output block. Available functions:\n" + schemas
        )
