"""Python-call formats: pythonic lists (Llama 3.2 / 4, BFCL prompting) and Gemma ``tool_code``.

- Pythonic: ``[get_weather(city="Paris"), today()]`` as the whole start of the turn, or inside
  Llama 4's ``<|python_start|>..<|python_end|>``. A call starts as soon as ``name(`` arrives,
  its keyword arguments stream one by one (as JSON) and it finishes at its closing parenthesis;
  values may be Python or JSON literals.
- Gemma 3 ``tool_code``: a fenced block ```` ```tool_code\\nget_weather(city="Paris")\\n``` ````
  holding one or more calls (``print(...)`` around a call is accepted).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import ArgumentsWriter, StreamMachine, TextFormatParser, tools_json_lines
from tooluse.formats.json_calls import call_from_object
from tooluse.formats.lexer import CodeReader, MarkerSet
from tooluse.formats.literals import (
    LiteralSyntaxError,
    decode_arguments,
    parse_member,
    parse_python_calls,
)
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
_MAX_ECHO = 2048
# A line that starts like a call, for reading the calls of a block one line at a time.
_LINE_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\((.*?)\)?\s*", re.DOTALL)


_CALL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


class _ListScanner:
    """Walks a Python list of calls: depth, quotes and escapes; collects each element's text.

    Besides whole elements it reports the pieces that let a call stream: ``("open", name)`` when
    ``name(`` opens an element, ``("member", text)`` for each keyword argument of that call, and
    ``("element", text)`` when the element ends. The machine takes ``events`` after each scan.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""
        self.escape = False
        self.done = False
        self.element: list[str] = []
        self.el_start = 0
        self.in_call = False  # depth 2 was opened by the '(' of a streamable call
        self.member: list[str] = []
        self.mem_start = 0
        self.events: list[tuple[str, str]] = []  # taken by the machine

    def scan(self, text: str, i: int) -> int:  # noqa: C901, PLR0912, PLR0915 -- per-character loop, inline for speed
        n = len(text)
        self.el_start = self.mem_start = i
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
                elif self.depth == 2 and c == "(":
                    self._open_call(text, i)
            elif c in ")]}":
                self.depth -= 1
                if self.depth == 1 and self.in_call:
                    self._end_member(text, i)
                    self.in_call = False
                elif self.depth == 0:  # the list closed
                    self._end_element(text, i)
                    self.done = True
                    return i + 1
            elif c == "," and self.depth == 1:
                self._end_element(text, i)
                self.el_start = i + 1
            elif c == "," and self.depth == 2 and self.in_call:
                self._end_member(text, i)
            i += 1
        if self.depth >= 1:
            self.element.append(text[self.el_start : i])
        if self.in_call:
            self.member.append(text[self.mem_start : i])
        return i

    def _open_call(self, text: str, i: int) -> None:
        name = ("".join(self.element) + text[self.el_start : i]).strip()
        # print(...) wraps the real call (Gemma style), so its name is not the call's name
        if _CALL_NAME.fullmatch(name) and name != "print":
            self.events.append(("open", name))
            self.in_call = True
            self.member = []
            self.mem_start = i + 1

    def _end_member(self, text: str, i: int) -> None:
        self.member.append(text[self.mem_start : i])
        piece = "".join(self.member).strip()
        if piece:
            self.events.append(("member", piece))
        self.member = []
        self.mem_start = i + 1

    def _end_element(self, text: str, i: int) -> None:
        self.element.append(text[self.el_start : i])
        piece = "".join(self.element).strip()
        if piece:
            self.events.append(("element", piece))
        self.element = []


class _PythonicMachine(StreamMachine):
    block_open, block_close = PY_START, PY_END
    #: Whether a bare list at the start of the turn is read as calls.
    bare_list = True
    #: Whether a list of calls after prose is read too (only when every element is a call;
    #: anything else stays text, so prose with brackets is never reported as a broken call).
    prose_lists = True
    #: Whether a copy of the block's body right after its end marker is dropped (LFM2 echoes).
    drop_echo = False

    def _call_openers(self) -> tuple[str, ...]:
        return (self.block_open,)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = "start"
        opens = [self.block_open] + ([self.think_open] if self.think_open else [])
        if self.prose_lists:
            opens.append("[")
        self._text_markers = MarkerSet(opens)
        self._py_end = MarkerSet([self.block_close])
        self._code_end = CodeReader(self.block_close)  # bare calls: quotes respected
        self._scanner: _ListScanner | None = None
        self._block_prefix = ""
        self._prose = False  # the open list follows prose: read whole, or kept as text
        self._echo = ""  # the last block's body, dropped when the model repeats it
        # the call of the current list element, started as soon as its name was read
        self._pending: tuple[tuple[int, str, ArgumentsWriter], str] | None = None

    def _step(self) -> bool:
        state = self._state
        if state == "list":
            return self._list_step()
        if state == "text":
            return self._text_step()
        if state == "start":
            verdict = self._list_ahead() if self.bare_list else False
            if verdict is None:
                return False
            if verdict:
                self._open_list("")
            else:
                self._state = "text"
            return True
        if state == "maybe_list":
            return self._maybe_list_step()
        if state == "echo":
            return self._echo_step()
        if state == "block":
            return self._block_step()
        if state == "bare":
            return self._bare_step()
        return self._after_step()

    def _text_step(self) -> bool:
        marker = self._text_until(self._text_markers)
        if marker is None:
            return False
        if marker == self.block_open:
            self._state = "block"
        elif marker == "[":
            self._pos -= 1
            self._state = "maybe_list"
        else:
            self._enter_reasoning()
        return True

    def _maybe_list_step(self) -> bool:
        """A "[" in prose: a call list, or text."""
        verdict = self._list_ahead()
        if verdict is None:
            return False
        if verdict:
            self._open_list("", prose=True)
        else:
            self._emit_text("[")
            self._pos += 1
            self._state = "text"
        return True

    def _block_step(self) -> bool:
        """After <|python_start|>: a list, or bare calls up to <|python_end|>."""
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

    def _bare_step(self) -> bool:
        got = self._collect_code(self._code_end)
        if got is None:
            return False
        self._emit_calls(got[0], self.block_open + got[0] + (got[1] or ""))
        self._state = "text"
        if got[1] is not None and self.drop_echo:
            self._echo, self._state = got[0].strip(), "echo"
        return True

    def _after_step(self) -> bool:
        """After a list: drop <|python_end|> when it follows."""
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + len(self.block_close)]
        self._state = "text"
        if rest == self.block_close:
            self._pos = end + len(self.block_close)
            if self.drop_echo and self._block_prefix:
                self._echo, self._state = "".join(self._list_raw).strip(), "echo"
        elif not self._final and self.block_close.startswith(rest) and end - self._pos <= 64:
            self._state = "after"
            return False
        return True

    def _echo_step(self) -> bool:
        """Right after a block: a verbatim copy of its body plus a stray end marker is dropped.
        Only short bodies are compared, so waiting on a copy stays cheap."""
        if len(self._echo) > _MAX_ECHO:
            self._echo = ""
        target = self._echo + self.block_close
        match = _WS.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + len(target)]
        if self._echo and rest == target:
            self._pos = end + len(target)
            return True
        waiting = not self._final and end - self._pos <= 64 and len(rest) < len(target)
        if self._echo and waiting and target.startswith(rest):
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

    def _open_list(self, prefix: str, *, prose: bool = False) -> None:
        self._scanner = _ListScanner()
        self._block_prefix = prefix
        self._list_raw: list[str] = []
        self._prose = prose
        self._prose_elements: list[str] = []
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
        if self._prose:
            return self._prose_list_step(scanner, start)
        for kind, piece in scanner.events:
            if kind == "open":
                self._pending = (self._begin_streamed_call(piece), piece)
            elif kind == "member":
                self._stream_member(piece)
            else:
                self._emit_calls(piece, piece)
        scanner.events = []
        if scanner.done:
            self._scanner = None
            self._state = "after"
            return True
        if self._final:
            self._cut_list()
            return False
        return self._pos != start

    def _prose_list_step(self, scanner: _ListScanner, start: int) -> bool:
        """A list after prose: calls only when every element reads as one, else plain text."""
        self._prose_elements.extend(piece for kind, piece in scanner.events if kind == "element")
        scanner.events = []
        if not scanner.done:
            if self._final:
                self._cut_list()
                return False
            return self._pos != start
        self._scanner = None
        self._state = "after"
        calls: list[tuple[str, dict[str, Any]]] = []
        try:
            for element in self._prose_elements:
                calls.extend(parse_python_calls(element))
        except LiteralSyntaxError:
            calls = []
        if not calls:
            self._emit_text("".join(self._list_raw))
            self._state = "text"
            return True
        raw = "".join(self._list_raw)
        for name, arguments in calls:
            self._whole_call(name, arguments, raw=raw)
        return True

    def _cut_list(self) -> None:
        scanner = self._scanner
        if scanner is None:
            return
        self._scanner = None
        if self._prose:  # a list after prose that never closed was prose
            self._emit_text("".join(self._list_raw))
            self._state = "text"
            return
        rest = "".join(scanner.element).strip()
        raw = self._block_prefix + "".join(self._list_raw)
        self._error("list of tool calls was cut off before ']'", raw)
        self._state = "text"
        if not rest:
            return
        try:  # a last call complete up to its ')' is still usable
            calls = parse_python_calls(rest)
        except LiteralSyntaxError as exc:
            self._fail_pending(rest, f"tool call was cut off: {exc}")
            return
        self._finish_calls(calls, rest)

    def _stream_member(self, text: str) -> None:
        if self._pending is None:
            return
        try:
            key, value = parse_member(text, "=")
        except LiteralSyntaxError:
            return  # the final arguments fill it in when the call closes
        self._pending[0][2].member(key, value)

    def _emit_calls(self, code: str, raw: str) -> None:
        stripped = code.strip()
        json_like = stripped.startswith("{") or (
            stripped.startswith("[") and stripped[1:].lstrip().startswith("{")
        )
        if json_like and self._pending is None and self._emit_json_calls(stripped, raw):
            return
        try:
            calls = parse_python_calls(stripped)
        except LiteralSyntaxError as exc:
            repaired = _repair_quotes(stripped)
            found: list[tuple[str, dict[str, Any]]] | None
            try:
                found = parse_python_calls(repaired) if repaired != stripped else None
            except LiteralSyntaxError:
                found = None
            if found is None:
                if self._fail_pending(code, f"not a Python function call: {exc}", raw):
                    return
                if not self._emit_lines(stripped, raw):
                    self._error(f"not a Python function call: {exc}", raw)
                return
            calls = found
        if not calls:
            self._error("empty tool call block", raw)
        self._finish_calls(calls, raw)

    def _emit_json_calls(self, text: str, raw: str) -> bool:
        """Calls written as JSON objects (``{"name", "arguments"}``, alone or in a list), as
        LFM2 sometimes writes them inside its markers. ``False`` when the text is not that."""
        try:
            value = decode_arguments(text)
        except LiteralSyntaxError:
            return False
        objects = value if isinstance(value, list) else [value]
        found = [call_from_object(obj) for obj in objects]
        if not found or any(name is None for name, _, _ in found):
            return False
        for name, arguments, _ in found:
            assert name is not None
            self._whole_call(name, arguments, raw=raw)
        return True

    def _emit_lines(self, code: str, raw: str) -> bool:
        """Calls one per line (Olmo 3) when the block as a whole does not read: each line is
        read alone, so one bad call does not lose its siblings. ``False`` when some line does
        not even start like a call."""
        lines = [line.strip() for line in code.splitlines() if line.strip()]
        if len(lines) < 2 or not all(_LINE_CALL.fullmatch(line) for line in lines):
            return False
        for line in lines:
            try:
                calls = parse_python_calls(line)
            except LiteralSyntaxError as exc:
                match = _LINE_CALL.fullmatch(line)
                assert match is not None
                self._whole_call(
                    match.group(1),
                    None,
                    raw_arguments=match.group(2),
                    raw=raw,
                    problem=f"not a Python function call: {exc}",
                )
                continue
            for name, arguments in calls:
                self._whole_call(name, arguments, raw=raw)
        return True

    def _finish_calls(self, calls: list[tuple[str, dict[str, Any]]], raw: str) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            started, name = pending
            if calls and calls[0][0] == name:
                self._end_streamed_call(started, name, calls[0][1], raw=raw)
                calls = calls[1:]
            else:
                self._end_streamed_call(
                    started, name, None, raw_arguments=raw, raw=raw, problem="not a tool call"
                )
        for name, arguments in calls:
            self._whole_call(name, arguments, raw=raw)

    def _fail_pending(self, code: str, problem: str, raw: str = "") -> bool:
        """Finish the started call of an element that cannot be read, keeping its text."""
        pending, self._pending = self._pending, None
        if pending is None:
            return False
        started, name = pending
        code = code.strip()
        args = code[code.find("(") + 1 :] if "(" in code else code
        args = args[:-1] if args.endswith(")") else args
        self._end_streamed_call(
            started, name, None, raw_arguments=args, raw=raw or code, problem=problem
        )
        return True

    def _finish(self) -> None:
        if self._scanner is not None:
            self._cut_list()


# After a string's closing quote: a separator, the end of a container, or the end of the call.
_STRING_END_CONTEXT = re.compile(r"\s*(?:[,\]}:]|\)\s*(?:[\],;]|\Z))")


def _repair_quotes(code: str) -> str:
    """``code`` with quotes escaped that cannot close their string: models write
    ``command='sed -n '1,5p' f'``, which is not Python. Inside a string, a quote of the same kind
    counts as closing only when a separator, a closing bracket or the end of the call follows."""
    out: list[str] = []
    quote = ""
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if not quote:
            if c in "\"'":
                quote = c
            out.append(c)
        elif c == "\\":
            out.append(code[i : i + 2])
            i += 1
        elif c == quote:
            if _STRING_END_CONTEXT.match(code, i + 1):
                quote = ""
                out.append(c)
            else:
                out.append("\\" + c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def pythonic_tools_prompt(tools: Sequence[ToolDefinition]) -> str:
    """A prompt section asking for calls as a Python list (Llama 3.2 / 4 and BFCL style)."""
    schemas = tools_json_lines(tools)
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
    prose_lists = False
    drop_echo = True


class Lfm2Parser(PythonicParser):
    """LFM2: a pythonic list between ``<|tool_call_start|>`` and ``<|tool_call_end|>``."""

    name = "lfm2"
    machine = _Lfm2Machine


class _Olmo3Machine(_PythonicMachine):
    block_open, block_close = "<function_calls>", "</function_calls>"
    bare_list = False
    prose_lists = False


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
        self._close = CodeReader(FENCE_CLOSE)  # a fence inside a string value is code

    def _step(self) -> bool:
        if not self._in_block:
            marker = self._text_until(self._open)
            if marker is None:
                return False
            self._in_block = True
            return True
        got = self._collect_code(self._close)
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
        schemas = tools_json_lines(tools)
        return (
            "You have access to functions. If you decide to invoke any of the function(s), write "
            "the call as Python in a block that starts with ```tool_code and ends with ```, for "
            'example:\n```tool_code\nget_weather(city="Paris")\n```\n'
            "The result comes back in a ```tool_output block. Available functions:\n" + schemas
        )
