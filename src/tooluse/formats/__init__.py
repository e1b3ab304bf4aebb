"""Text tool-call formats of open-weight models: prompt formatting, streaming parsers and chat
templates.

``get_parser(name)`` gives a :class:`ToolCallParser`: ``format_tools(tools)`` writes the prompt
section, ``parse(text, tools)`` reads a whole response into a :class:`ParsedToolResponse`, and
``stream(tools)`` reads it delta by delta (``feed``/``close`` return :mod:`tooluse.events`), with
the same result for any split of the text. ``render_chat_template`` renders a model's Jinja2 chat
template with tools as transformers does, and ``detect_format`` names the format it uses.
"""

from __future__ import annotations

from tooluse.formats.base import (
    ParsedToolResponse,
    StreamMachine,
    TextFormatParser,
    ToolCallParser,
    ToolCallStream,
    collect_events,
)
from tooluse.formats.chat_template import (
    detect_format,
    message_to_template_dict,
    render_chat_template,
    template_uses_tools,
    tool_to_template_dict,
)
from tooluse.formats.hermes import HermesToolCallParser
from tooluse.formats.registry import available_formats, get_parser, register_format

__all__ = [
    "HermesToolCallParser",
    "ParsedToolResponse",
    "StreamMachine",
    "TextFormatParser",
    "ToolCallParser",
    "ToolCallStream",
    "available_formats",
    "collect_events",
    "detect_format",
    "get_parser",
    "message_to_template_dict",
    "register_format",
    "render_chat_template",
    "template_uses_tools",
    "tool_to_template_dict",
]
