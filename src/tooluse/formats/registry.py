"""Format registry: parsers by name (``get_parser("hermes")``), with aliases per model family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tooluse.formats import (
    block_calls,
    gemma_calls,
    harmony,
    hermes,
    json_formats,
    json_sections,
    pythonic,
    xml_params,
    xml_tagged,
)
from tooluse.formats.base import TextFormatParser, ToolCallParser

__all__ = ["available_formats", "format_aliases", "get_parser", "register_format"]

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


def format_aliases() -> dict[str, list[str]]:
    """Each registered format name with its aliases (sorted), e.g. ``hermes: [qwen, qwen3...]``."""
    out: dict[str, list[str]] = {name: [] for name in sorted(_FACTORIES)}
    for alias, name in _ALIASES.items():
        if alias != name and name in out:
            out[name].append(alias)
    return {name: sorted(aliases) for name, aliases in out.items()}


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
        (xml_params.MiniMaxM2Parser, ("minimax_m2.5", "minimax_m2_5")),
        (pythonic.Lfm2Parser, ("lfm2.5",)),
        (pythonic.Olmo3Parser, ("olmo",)),
        (hermes.GraniteParser, ("granite3",)),
        (hermes.JambaParser, ()),
        (hermes.Phi4MiniParser, ("phi4", "firefunction")),
        (hermes.NemotronParser, ()),
        (json_formats.FunctionTagParser, ("functionary_v3_1", "llama3_function")),
        (xml_params.GlmParser, ("glm", "glm4.5", "glm4.6", "glm46", "glm4.7", "glm47", "glm5")),
    ]
    builtins += [
        # vLLM's names first; aliases name the model families.
        (xml_tagged.DeepSeekV32Parser, ("deepseekv32", "deepseek_v3.2", "dsml")),
        (xml_tagged.DeepSeekV4Parser, ("deepseekv4", "deepseek_v4_dsml")),
        (json_sections.MiniMaxM1Parser, ("minimax",)),
        (block_calls.MiniMaxM3Parser, ("minimax_m3_vl",)),
        (
            block_calls.CommandR7bParser,
            (
                "cohere",
                "command_r",
                "command_r_plus",
                "command_a",
                "cohere_command3",
                "cohere_command4",
            ),
        ),
        (json_sections.XLamParser, ("xlam_fc",)),
        (json_sections.FunctionaryV32Parser, ("functionary", "functionary_v3.2")),
        (json_sections.InternLM2Parser, ("internlm", "internlm2.5")),
        (xml_tagged.Step3Parser, ("step",)),
        (json_sections.Granite20bFcParser, ("granite_20b", "granite-20b-fc")),
        (json_sections.GigaChat3Parser, ("gigachat",)),
        (json_sections.Ernie45Parser, ("ernie", "ernie4.5", "ernie4_5")),
        (json_sections.HunyuanA13bParser, ("hunyuan",)),
        (json_sections.LongCatParser, ("longcat_flash",)),
        (block_calls.ApertusParser, ("apertus2509",)),
        (block_calls.KimiK3Parser, ("kimi_k3_xtml",)),
        (block_calls.MiniCpm5Parser, ("minicpm5xml", "minicpm5_xml", "minicpm")),
        (json_sections.JsonArrayParser, ("forced_json_array",)),
    ]
    for parser, aliases in builtins:
        register_format(parser.name, parser, aliases=aliases)


_register_builtins()
