"""Formats whose calls are read a block at a time: each block is gathered up to its closing
marker in one pass, then decoded, and its calls are emitted whole.

- Command R7B / Command A (Cohere): ``<|START_ACTION|>[{"tool_call_id", "tool_name",
  "parameters"}]<|END_ACTION|>``, ``<|START_THINKING|>`` reasoning, ``<|START_RESPONSE|>``
  wrappers dropped; Command R+ writes ``Action: ```json [..] ````.
- Apertus: ``<|tools_prefix|>[{"NAME": {..args..}}, ..]<|tools_suffix|>``, ``<|inner_prefix|>``
  reasoning.
- Kimi K3 (XTML): reasoning in a ``<|open|>think<|sep|>`` channel, then a ``<|open|>tools<|sep|>`` channel of ``<|open|>call tool="NAME"<|sep|>`` blocks
  holding ``<|open|>argument key="K" type="string"<|sep|>VALUE<|close|>argument<|sep|>``.
- MiniMax-M3: ``]<]minimax[>[<tool_call>`` with ``<invoke name="NAME">`` and one tag per
  argument (``<city>Paris</city>``), nested tags for objects and ``<item>`` tags for arrays,
  every tag prefixed by the ``]<]minimax[>[`` namespace token; ``<mm:think>`` reasoning.
- MiniCPM5: ``<function name="NAME"><param name="K">VALUE</param></function>``.

A block cut off by the end of output still gives the calls it completed; a call cut off inside
it is returned with what it had and an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse.formats.base import StreamMachine, TextFormatParser, tools_json_lines
from tooluse.formats.lexer import CodeReader, MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, decode_arguments
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ApertusParser",
    "BlockCallMachine",
    "CommandR7bParser",
    "KimiK3Parser",
    "MiniCpm5Parser",
    "MiniMaxM3Parser",
]


class BlockCallMachine(StreamMachine):
    """Reads content up to a block opener, gathers the block up to its closer, decodes it."""

    #: Each opening marker with the markers that may close its block.
    blocks: dict[str, tuple[str, ...]] = {}
    #: Markers removed from content.
    drop_markers: tuple[str, ...] = ()
    #: Blocks hold JSON: a closer counts only outside its string values (one closer per opener).
    json_blocks = False

    def _call_openers(self) -> tuple[str, ...]:
        return tuple(self.blocks)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        texts = [*self.blocks, *self.drop_markers]
        if self.think_open:
            texts.append(self.think_open)
        self._text_markers = MarkerSet(texts)
        self._closers = {opener: MarkerSet(ends) for opener, ends in self.blocks.items()}
        self._readers = (
            {opener: CodeReader(ends[0]) for opener, ends in self.blocks.items()}
            if self.json_blocks
            else {}
        )
        self._opener = ""
        self._state = "text"

    def _step(self) -> bool:
        if self._state == "text":
            marker = self._text_until(self._text_markers)
            if marker is None:
                return False
            if marker in self.blocks:
                self._opener = marker
                self._state = "block"
            elif marker == self.think_open:
                self._enter_reasoning()
            return True
        reader = self._readers.get(self._opener)
        if reader is not None:
            got = self._collect_code(reader)
        else:
            got = self._collect_until(self._closers[self._opener])
        if got is None:
            return False
        body, closer = got
        self._state = "text"
        self._read_block(self._opener, body, closer)
        return True

    def _read_block(self, opener: str, body: str, closer: str | None) -> None:
        """Emit the calls of one block; ``closer`` is ``None`` when the output ended inside it."""
        raise NotImplementedError  # pragma: no cover

    # -- helpers for subclasses ----------------------------------------------------------------
    def _decode_json_block(self, opener: str, body: str, closer: str | None) -> Any:
        """The block's JSON value, or ``None`` after reporting why it could not be read."""
        raw = opener + body + (closer or "")
        text = body.strip()
        if not text:
            self._error("empty tool call block", raw)
            return None
        try:
            return decode_arguments(text)
        except LiteralSyntaxError as exc:
            if closer is None:
                self._error("tool call block was cut off before its JSON closed", raw)
            else:
                self._error(f"tool call block is not valid JSON: {exc}", raw)
            return None

    def _coerce(self, tool_name: str, key: str, text: str) -> Any:
        """A text value typed by the tool's schema (strings stay text; other types decode)."""
        tool = self._tool(tool_name)
        prop = (tool.parameters_schema.get("properties") or {}).get(key) if tool else None
        kind = prop.get("type") if isinstance(prop, dict) else None
        return coerce_text(text, kind)


def coerce_text(text: str, kind: Any) -> Any:
    """``text`` as the JSON-schema type ``kind`` asks (``None``: decoded when it reads as a
    number, boolean, null, array or object; otherwise kept as text)."""
    if kind == "string":
        return text
    stripped = text.strip()
    if not stripped:
        return text
    try:
        value = decode_arguments(stripped)
    except (LiteralSyntaxError, ValueError, RecursionError):
        return text
    if isinstance(value, float) and value != value:  # NaN text stays text
        return text
    return value


def _json_prompt(tools: Sequence[ToolDefinition], example: str) -> str:
    return (
        "You have access to the following functions:\n"
        + tools_json_lines(tools)
        + "\n\nTo call functions, reply with:\n"
        + example
    )


# -- Command R7B / Command A / Command R+ -----------------------------------------------------------
class _CommandMachine(BlockCallMachine):
    think_open = "<|START_THINKING|>"
    think_close = "<|END_THINKING|>"
    blocks = {
        "<|START_ACTION|>": ("<|END_ACTION|>",),
        "Action: ```json": ("```",),
        "Action:\n```json": ("```",),  # as Command R+'s template writes it
    }
    drop_markers = ("<|START_RESPONSE|>", "<|END_RESPONSE|>")
    json_blocks = True  # "<|END_ACTION|>" inside a string value is text of that value

    def _read_block(self, opener: str, body: str, closer: str | None) -> None:
        value = self._decode_json_block(opener, body, closer)
        if value is None:
            return
        items = value if isinstance(value, list) else [value]
        raw = opener + body + (closer or "")
        for item in items:
            if not isinstance(item, dict):
                self._error("action list holds something that is not a call object", raw)
                continue
            name = item.get("tool_name", item.get("name"))
            if not isinstance(name, str) or not name:
                self._error("action has no 'tool_name'", raw)
                continue
            if name == "directly-answer":  # Command R+'s way of saying "no tool"
                continue
            arguments = item.get("parameters", item.get("arguments", {}))
            self._whole_call(name, arguments, raw=raw)


class CommandR7bParser(TextFormatParser):
    """Cohere Command R7B / Command A: ``<|START_ACTION|>[{"tool_name", "parameters"}]``
    (and Command R+'s ``Action: ```json [...] ````)."""

    name = "command_r7b"
    machine = _CommandMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return _json_prompt(
            tools,
            '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": <function-name>, '
            '"parameters": <args-json-object>}\n]<|END_ACTION|>',
        )


# -- Apertus --------------------------------------------------------------------------------------
class _ApertusMachine(BlockCallMachine):
    think_open = "<|inner_prefix|>"
    think_close = "<|inner_suffix|>"
    blocks = {"<|tools_prefix|>": ("<|tools_suffix|>",)}
    json_blocks = True  # "<|tools_suffix|>" inside a string value is text of that value

    def _read_block(self, opener: str, body: str, closer: str | None) -> None:
        value = self._decode_json_block(opener, body, closer)
        if value is None:
            return
        raw = opener + body + (closer or "")
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict) or len(item) != 1:
                self._error('each call must be an object {"NAME": {arguments}}', raw)
                continue
            ((name, arguments),) = item.items()
            self._whole_call(str(name), arguments, raw=raw)


class ApertusParser(TextFormatParser):
    """Apertus: ``<|tools_prefix|>[{"NAME": {arguments}}, ...]<|tools_suffix|>``."""

    name = "apertus"
    machine = _ApertusMachine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return _json_prompt(
            tools, '<|tools_prefix|>[{"<function-name>": <args-json-object>}]<|tools_suffix|>'
        )


# -- Kimi K3 --------------------------------------------------------------------------------------
_OPEN, _CLOSE, _SEP = "<|open|>", "<|close|>", "<|sep|>"
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def _attrs(text: str) -> dict[str, str]:
    return {k: v.replace("&quot;", '"').replace("&amp;", "&") for k, v in _ATTR.findall(text)}


class _KimiK3Machine(BlockCallMachine):
    think_open = f"{_OPEN}think{_SEP}"
    think_close = f"{_CLOSE}think{_SEP}"
    blocks = {f"{_OPEN}tools{_SEP}": (f"{_CLOSE}tools{_SEP}",)}
    drop_markers = (
        f"{_OPEN}response{_SEP}",
        f"{_CLOSE}response{_SEP}",
        f"{_CLOSE}message{_SEP}",
    )

    def _read_block(self, opener: str, body: str, closer: str | None) -> None:
        call_open, call_close = f"{_OPEN}call", f"{_CLOSE}call{_SEP}"
        pos = 0
        while True:
            start = body.find(call_open, pos)
            if start < 0:
                return
            head_end = body.find(_SEP, start)
            end = body.find(call_close, head_end) if head_end >= 0 else -1
            raw = body[start : end + len(call_close)] if end >= 0 else body[start:]
            if head_end < 0:
                self._error("tool call was cut off before its name", raw)
                return
            name = _attrs(body[start + len(call_open) : head_end]).get("tool", "")
            inner = body[head_end + len(_SEP) : end if end >= 0 else len(body)]
            arguments, complete = self._arguments(name, inner)
            if not name:
                self._error("tool call has no tool name", raw)
            else:
                problem = None if end >= 0 and complete else "tool call was cut off"
                self._whole_call(name, arguments, raw=raw, problem=problem)
            if end < 0:
                return
            pos = end + len(call_close)

    def _arguments(self, name: str, inner: str) -> tuple[dict[str, Any], bool]:
        arg_open, arg_close = f"{_OPEN}argument", f"{_CLOSE}argument{_SEP}"
        arguments: dict[str, Any] = {}
        pos = 0
        while True:
            start = inner.find(arg_open, pos)
            if start < 0:
                return arguments, True
            head_end = inner.find(_SEP, start)
            if head_end < 0:
                return arguments, False
            end = inner.find(arg_close, head_end)
            if end < 0:
                return arguments, False
            attrs = _attrs(inner[start + len(arg_open) : head_end])
            value = inner[head_end + len(_SEP) : end]
            kind = attrs.get("type", "string")
            arguments[attrs.get("key", "")] = (
                coerce_text(value, kind) if kind != "string" else value
            )
            pos = end + len(arg_close)


class KimiK3Parser(TextFormatParser):
    """Kimi K3 XTML: ``<|open|>call tool="NAME"<|sep|>`` blocks in a ``tools`` channel."""

    name = "kimi_k3"
    machine = _KimiK3Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return _json_prompt(
            tools,
            f'{_OPEN}tools{_SEP}{_OPEN}call tool="NAME" index="1"{_SEP}'
            f'{_OPEN}argument key="KEY" type="string"{_SEP}VALUE{_CLOSE}argument{_SEP}'
            f"{_CLOSE}call{_SEP}{_CLOSE}tools{_SEP}",
        )


# -- MiniMax-M3 -----------------------------------------------------------------------------------
_NS = "]<]minimax[>["
_TAG = re.compile(r"<(/?)([A-Za-z_][\w.\-:]*)([^<>]*)>")
#: MiniMax-M3's structure tags all carry the namespace token; a plain ``<b>`` is value text.
_NS_TAG = re.compile(re.escape(_NS) + _TAG.pattern)
_NAME_ATTR = re.compile(r"""name\s*=\s*["']([^"']*)["']""")
#: Tag nesting read as structure (bounds the work an unmatched closing tag costs).
_MAX_DEPTH = 32


class _Element:
    __slots__ = ("attrs", "children", "closed", "tag", "text")

    def __init__(self, tag: str, attrs: str) -> None:
        self.tag, self.attrs = tag, attrs
        self.children: list[_Element] = []
        self.text: list[str] = []
        self.closed = False


def _element_tree(body: str, tags: re.Pattern[str] = _TAG) -> _Element:
    """A forgiving tree of the ``tags`` in ``body`` (an unmatched closing tag is ignored)."""
    root = _Element("", "")
    stack = [root]
    pos = 0
    for match in tags.finditer(body):
        stack[-1].text.append(body[pos : match.start()])
        pos = match.end()
        closing, tag, attrs = match.group(1), match.group(2), match.group(3)
        if not closing and len(stack) > _MAX_DEPTH:  # deeper nesting is kept as text
            stack[-1].text.append(match.group(0))
            continue
        if not closing:
            element = _Element(tag, attrs)
            stack[-1].children.append(element)
            stack.append(element)
            continue
        for depth in range(len(stack) - 1, 0, -1):
            if stack[depth].tag == tag:
                for element in stack[depth:]:
                    element.closed = element is stack[depth] or element.closed
                del stack[depth:]
                break
    stack[-1].text.append(body[pos:])
    return root


def _element_value(element: _Element, schema: Any) -> Any:
    schema = schema if isinstance(schema, dict) else {}
    if not element.children:
        return coerce_text("".join(element.text).strip("\n"), schema.get("type"))
    if all(child.tag == "item" for child in element.children):
        items = schema.get("items")
        return [_element_value(child, items) for child in element.children]
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for child in element.children:
        value = _element_value(child, props.get(child.tag))
        if child.tag in out:  # a repeated tag is a list
            previous = out[child.tag]
            out[child.tag] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            out[child.tag] = value
    return out


class _MiniMaxM3Machine(BlockCallMachine):
    think_open = "<mm:think>"
    think_close = "</mm:think>"
    blocks = {f"{_NS}<tool_call>": (f"{_NS}</tool_call>",)}

    def _read_block(self, opener: str, body: str, closer: str | None) -> None:
        raw = opener + body + (closer or "")
        tree = _element_tree(body, _NS_TAG)
        invokes = [child for child in tree.children if child.tag == "invoke"]
        if not invokes:
            self._error("tool call block has no <invoke>", raw)
        for invoke in invokes:
            found = _NAME_ATTR.search(invoke.attrs)
            if found is None:
                self._error("<invoke> has no name", raw)
                continue
            name = found.group(1)
            tool = self._tool(name)
            schema = tool.parameters_schema if tool else {}
            value = _element_value(invoke, schema) if invoke.children else {}
            problem = None if invoke.closed else "tool call was cut off before </invoke>"
            self._whole_call(name, value, raw=raw, problem=problem)


class MiniMaxM3Parser(TextFormatParser):
    """MiniMax-M3: namespaced ``<tool_call><invoke name=..><KEY>VALUE</KEY></invoke>`` calls."""

    name = "minimax_m3"
    machine = _MiniMaxM3Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return _json_prompt(
            tools,
            f'{_NS}<tool_call>\n{_NS}<invoke name="NAME">\n{_NS}<KEY>VALUE{_NS}</KEY>\n'
            f"{_NS}</invoke>\n{_NS}</tool_call>",
        )


# -- MiniCPM5 -------------------------------------------------------------------------------------
_CDATA = re.compile(r"\s*<!\[CDATA\[(.*)\]\]>\s*", re.DOTALL)


class _MiniCpm5Machine(BlockCallMachine):
    blocks = {"<function name=": ("</function>",), "<functionname=": ("</function>",)}

    def _read_block(self, opener: str, body: str, closer: str | None) -> None:
        raw = opener + body + (closer or "")
        head_end = body.find(">")
        if head_end < 0:
            self._error("tool call was cut off before its name", raw)
            return
        name = body[:head_end].strip().strip("\"'").strip()
        if not name:
            self._error("tool call has no name", raw)
            return
        arguments: dict[str, Any] = {}
        complete = closer is not None
        cursor = head_end + 1  # the end of the last parameter read
        for match in _TAG.finditer(body, head_end + 1):
            if match.start() < cursor or match.group(1) or match.group(2) != "param":
                continue
            key_match = _NAME_ATTR.search(match.group(3))
            end = body.find("</param>", match.end())
            if end < 0:
                complete = False
                break
            cursor = end + len("</param>")
            if key_match is None:
                continue
            text = body[match.end() : end]
            cdata = _CDATA.fullmatch(text)
            text = cdata.group(1) if cdata else text.strip()
            arguments[key_match.group(1)] = self._coerce(name, key_match.group(1), text)
        problem = None if complete else "tool call was cut off before </function>"
        self._whole_call(name, arguments, raw=raw, problem=problem)


class MiniCpm5Parser(TextFormatParser):
    """MiniCPM5: ``<function name="NAME"><param name="KEY">VALUE</param></function>``."""

    name = "minicpm5"
    machine = _MiniCpm5Machine

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        schemas = json.dumps([t.to_openai_schema() for t in tools], ensure_ascii=False)
        return (
            "# Tools\n\n" + schemas + "\n\nTo call a function, reply with:\n"
            '<function name="NAME">\n<param name="KEY">VALUE</param>\n</function>'
        )
