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
from tooluse.formats.block_calls import (
    ApertusParser,
    CommandR7bParser,
    KimiK3Parser,
    MiniCpm5Parser,
    MiniMaxM3Parser,
)
from tooluse.formats.chat_template import (
    chat_template_from_config,
    message_to_template_dict,
    render_chat_template,
    template_uses_tools,
    tool_to_template_dict,
)
from tooluse.formats.gemma_calls import FunctionGemmaParser, Gemma4Parser
from tooluse.formats.harmony import HarmonyParser
from tooluse.formats.hermes import (
    GraniteParser,
    HermesToolCallParser,
    JambaParser,
    NemotronParser,
    Phi4MiniParser,
)
from tooluse.formats.json_formats import (
    DeepSeekV3Parser,
    DeepSeekV31Parser,
    FunctionTagParser,
    KimiK2Parser,
    Llama3JsonParser,
    MistralParser,
    MistralV11Parser,
)
from tooluse.formats.json_sections import (
    Ernie45Parser,
    FunctionaryV32Parser,
    GigaChat3Parser,
    Granite20bFcParser,
    HunyuanA13bParser,
    InternLM2Parser,
    JsonArrayParser,
    LongCatParser,
    MiniMaxM1Parser,
    XLamParser,
)
from tooluse.formats.prompt_reasoning import (
    parser_for_template,
    reasoning_started_from_prompt,
    reasoning_started_from_template,
)
from tooluse.formats.pythonic import GemmaToolCodeParser, Lfm2Parser, Olmo3Parser, PythonicParser
from tooluse.formats.registry import available_formats, get_parser, register_format
from tooluse.formats.template_detect import detect_format
from tooluse.formats.xml_params import (
    GlmParser,
    MiniMaxM2Parser,
    Qwen3CoderParser,
    SeedOssParser,
)
from tooluse.formats.xml_tagged import DeepSeekV4Parser, DeepSeekV32Parser, Step3Parser

__all__ = [
    "ApertusParser",
    "CommandR7bParser",
    "KimiK3Parser",
    "MiniCpm5Parser",
    "MiniMaxM3Parser",
    "Ernie45Parser",
    "FunctionaryV32Parser",
    "GigaChat3Parser",
    "Granite20bFcParser",
    "HunyuanA13bParser",
    "InternLM2Parser",
    "JsonArrayParser",
    "LongCatParser",
    "MiniMaxM1Parser",
    "XLamParser",
    "DeepSeekV4Parser",
    "DeepSeekV32Parser",
    "Step3Parser",
    "DeepSeekV31Parser",
    "DeepSeekV3Parser",
    "FunctionGemmaParser",
    "FunctionTagParser",
    "Gemma4Parser",
    "GemmaToolCodeParser",
    "GlmParser",
    "GraniteParser",
    "HarmonyParser",
    "HermesToolCallParser",
    "JambaParser",
    "KimiK2Parser",
    "Lfm2Parser",
    "Llama3JsonParser",
    "MiniMaxM2Parser",
    "MistralParser",
    "MistralV11Parser",
    "NemotronParser",
    "Olmo3Parser",
    "ParsedToolResponse",
    "Phi4MiniParser",
    "PythonicParser",
    "Qwen3CoderParser",
    "SeedOssParser",
    "StreamMachine",
    "TextFormatParser",
    "ToolCallParser",
    "ToolCallStream",
    "available_formats",
    "chat_template_from_config",
    "collect_events",
    "detect_format",
    "get_parser",
    "parser_for_template",
    "reasoning_started_from_prompt",
    "reasoning_started_from_template",
    "message_to_template_dict",
    "register_format",
    "render_chat_template",
    "template_uses_tools",
    "tool_to_template_dict",
]
