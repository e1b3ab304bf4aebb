"""Format registry: parsers by name (``get_parser("hermes")``), with aliases per model family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tooluse.formats.base import TextFormatParser, ToolCallParser
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
from tooluse.formats.pythonic import GemmaToolCodeParser, Lfm2Parser, Olmo3Parser, PythonicParser
from tooluse.formats.xml_params import (
    GlmParser,
    MiniMaxM2Parser,
    Qwen3CoderParser,
    SeedOssParser,
)

__all__ = ["available_formats", "get_parser", "register_format"]

_FACTORIES: dict[str, Callable[..., ToolCallParser]] = {}
_ALIASES: dict[str, str] = {}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def register_format(
    name: str, factory: Callable[..., ToolCallParser], *, aliases: tuple[str, ...] = ()
) -> None:
    """Make a parser available under ``name`` (and ``aliases``); a later call replaces it."""
    key = _key(name)
    _FACTORIES[key] = factory
    for alias in aliases:
        _ALIASES[_key(alias)] = key


def get_parser(name: str, **options: Any) -> ToolCallParser:
    """A parser for the named format; ``options`` go to its constructor
    (e.g. ``reasoning_started=True`` when the prompt already opened ``<think>``)."""
    key = _key(name)
    key = _ALIASES.get(key, key)
    factory = _FACTORIES.get(key)
    if factory is None:
        known = ", ".join(available_formats())
        raise KeyError(f"unknown tool-call format {name!r}; known formats: {known}")
    return factory(**options)


def available_formats() -> list[str]:
    """Registered format names (aliases not included), sorted."""
    return sorted(_FACTORIES)


def _register_builtins() -> None:
    builtins: list[tuple[type[TextFormatParser], tuple[str, ...]]] = [
        (HermesToolCallParser, ("qwen", "qwen2.5", "qwen2_5", "qwen3", "qwq", "smollm2")),
        (Llama3JsonParser, ("llama3", "llama3.1", "llama3.2", "llama3.3", "llama3_1")),
        (MistralParser, ("mistral_v3", "mistral_nemo")),
        (MistralV11Parser, ("mistral_small", "devstral", "magistral")),
        (DeepSeekV3Parser, ("deepseek", "deepseek_r1")),
        (DeepSeekV31Parser, ("deepseek_v3.1",)),
        (Qwen3CoderParser, ("qwen3_xml", "qwen3.5", "qwen3_5")),
        (PythonicParser, ("llama4", "llama4_pythonic", "llama3.2_pythonic", "toolace")),
        (GemmaToolCodeParser, ("gemma3", "gemma", "tool_code")),
        (FunctionGemmaParser, ("function_gemma",)),
        (Gemma4Parser, ()),
        (HarmonyParser, ("gpt_oss", "gpt-oss", "openai_harmony")),
        (KimiK2Parser, ("kimi", "kimi_k2.5")),
        (SeedOssParser, ("seed",)),
        (MiniMaxM2Parser, ("minimax",)),
        (Lfm2Parser, ("lfm2.5",)),
        (Olmo3Parser, ("olmo",)),
        (GraniteParser, ("granite3",)),
        (JambaParser, ("hunyuan",)),
        (Phi4MiniParser, ("phi4", "firefunction")),
        (NemotronParser, ()),
        (FunctionTagParser, ("functionary_v3_1", "llama3_function")),
        (GlmParser, ("glm", "glm4.5", "glm4.6", "glm46", "glm4.7", "glm47", "glm5")),
    ]
    for parser, aliases in builtins:
        register_format(parser.name, parser, aliases=aliases)


_register_builtins()
