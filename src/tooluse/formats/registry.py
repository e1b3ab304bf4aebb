"""Format registry: parsers by name (``get_parser("hermes")``), with aliases per model family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tooluse.formats import gemma_calls, harmony, hermes, json_formats, pythonic, xml_params
from tooluse.formats.base import TextFormatParser, ToolCallParser

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
        (hermes.HermesToolCallParser, ("qwen", "qwen2.5", "qwen2_5", "qwen3", "qwq", "smollm2")),
        (json_formats.Llama3JsonParser, ("llama3", "llama3.1", "llama3.2", "llama3.3", "llama3_1")),
        (json_formats.MistralParser, ("mistral_v3", "mistral_nemo")),
        (json_formats.MistralV11Parser, ("mistral_small", "devstral", "magistral")),
        (json_formats.DeepSeekV3Parser, ("deepseek", "deepseek_r1")),
        (json_formats.DeepSeekV31Parser, ("deepseek_v3.1",)),
        (xml_params.Qwen3CoderParser, ("qwen3_xml", "qwen3.5", "qwen3_5")),
        (pythonic.PythonicParser, ("llama4", "llama4_pythonic", "llama3.2_pythonic", "toolace")),
        (pythonic.GemmaToolCodeParser, ("gemma3", "gemma", "tool_code")),
        (gemma_calls.FunctionGemmaParser, ("function_gemma",)),
        (gemma_calls.Gemma4Parser, ()),
        (harmony.HarmonyParser, ("gpt_oss", "gpt-oss", "openai_harmony")),
        (json_formats.KimiK2Parser, ("kimi", "kimi_k2.5")),
        (xml_params.SeedOssParser, ("seed",)),
        (xml_params.MiniMaxM2Parser, ("minimax",)),
        (pythonic.Lfm2Parser, ("lfm2.5",)),
        (pythonic.Olmo3Parser, ("olmo",)),
        (hermes.GraniteParser, ("granite3",)),
        (hermes.JambaParser, ("hunyuan",)),
        (hermes.Phi4MiniParser, ("phi4", "firefunction")),
        (hermes.NemotronParser, ()),
        (json_formats.FunctionTagParser, ("functionary_v3_1", "llama3_function")),
        (xml_params.GlmParser, ("glm", "glm4.5", "glm4.6", "glm46", "glm4.7", "glm47", "glm5")),
    ]
    for parser, aliases in builtins:
        register_format(parser.name, parser, aliases=aliases)


_register_builtins()
