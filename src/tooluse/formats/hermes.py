"""Hermes / Qwen2.5 / Qwen3 format: ``<tool_call>{"name": .., "arguments": {..}}</tool_call>``.

An opening tag that is not followed by JSON is kept as text (and reported). Also read: a list
of calls inside one block (``<tool_call>[{..}, {..}]</tool_call>``, as SmolLM2
writes), ``parameters`` instead of ``arguments``, arguments as a JSON string or with Python
literals, an unclosed last block (output cut at the stop token), and ``<think>`` reasoning.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tooluse.formats.base import ParsedToolResponse, TextFormatParser, ToolsArg, tools_json_lines
from tooluse.formats.hermes_machine import CLOSE, OPEN, HermesMachine
from tooluse.formats.hermes_whole import read_whole_response
from tooluse.messages import new_call_id
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

    def parse(self, text: str, available_tools: ToolsArg = ()) -> ParsedToolResponse:
        """Read a complete assistant turn: cleanly written calls at C speed
        (:mod:`tooluse.formats.hermes_whole`), everything else through the streaming reader."""
        available_tools = tuple(available_tools or ())  # read twice when the fast path declines
        if not self.lenient and not self.reasoning_started:
            fast = read_whole_response(
                text,
                open_marker=OPEN,
                close_marker=CLOSE,
                reserved=("<think>", "</think>"),
                tools=_tool_names(available_tools),
                new_id=new_call_id,
            )
            if fast is not None:
                return fast
        return super().parse(text, available_tools)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lenient=True)" if self.lenient else super().__repr__()


def _tool_names(available_tools: ToolsArg) -> frozenset[str]:
    names = set()
    for tool in available_tools or ():
        if not isinstance(tool, ToolDefinition):  # a Tool or a documented function
            from tooluse.tools import as_tool

            tool = as_tool(tool)
        names.add(tool.name)
    return frozenset(names)


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
