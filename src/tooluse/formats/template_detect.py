"""Which tool-call format a chat template uses, read from what it renders for a tool call.

A probe conversation (a user question, then an assistant turn calling probe tools) is rendered
through the template; the text the assistant turn adds after the generation prompt is what the
model is trained to write. Each format's parser then reads that text, most specific format
first, and the first one that gets the probe calls back exactly names the format. Two calls are
tried first (that tells a list per block from one object per line), then one call for templates
that refuse parallel calls. Templates that do not render tool calls at all fall back to marker
text found in the template.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from tooluse.errors import ChatTemplateError
from tooluse.formats.chat_template import _compile, render_chat_template

__all__ = [
    "BARE_FORMATS",
    "CANDIDATE_ORDER",
    "detect_by_rendering",
    "detect_format",
    "rendered_call_text",
]

#: Formats tried on a rendered call, most specific first (a format whose syntax another format
#: would also read comes before that format).
CANDIDATE_ORDER: tuple[str, ...] = (
    "harmony",
    "kimi_k2",
    "kimi_k3",
    "deepseek_v32",
    "deepseek_v4",
    "deepseek_v3",
    "deepseek_v31",
    "step3",
    "minimax_m3",
    "minimax_m2",
    "seed_oss",
    "glm45",
    "qwen3_coder",
    "minicpm5",
    "gemma4",
    "functiongemma",
    "lfm2",
    "olmo3",
    "command_r7b",
    "apertus",
    "longcat",
    "internlm2",
    "gigachat3",
    "granite_20b_fc",
    "hermes",  # before granite, which also reads Granite 3.1's <tool_call> opener
    "granite",
    "nemotron",
    "jamba",
    "minimax_m1",
    "phi4_mini",
    "mistral_v11",
    "mistral",
    "function_tag",
    "pythonic",
    "gemma_tool_code",
    "llama3_json",
    "xlam",
    "functionary_v3_2",
)

#: Formats without an opening marker: a template may render its history in one of these shapes
#: while the model writes a marked format (Phi-4-mini's template renders bare JSON objects, the
#: model writes ``functools[...]``), so a marker found in the template wins over them.
BARE_FORMATS = frozenset({"llama3_json", "pythonic", "xlam", "functionary_v3_2"})

_PROBE_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "days": {"type": "integer", "description": "Days ahead."},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current time in a time zone.",
            "parameters": {
                "type": "object",
                "properties": {
                    "zone": {"type": "string", "description": "The time zone."},
                    "offset": {"type": "integer", "description": "Hours to add."},
                },
            },
        },
    },
)
_IDS = ("a1b2c3d4e", "f5g6h7i8j")  # nine characters: Mistral templates insist
#: Probe calls: text values first; integer values for templates that write values unquoted.
_PROBES: tuple[tuple[tuple[str, dict[str, Any]], ...], ...] = (
    (("get_weather", {"city": "Paris"}), ("get_time", {"zone": "Europe/Paris"})),
    (("get_weather", {"days": 3}), ("get_time", {"offset": 2})),
)
_QUESTION = {"role": "user", "content": "What is the weather and the time in Paris?"}
#: The longest marker a shared prefix may end inside.
_MAX_MARKER = 40


def rendered_call_text(
    template: str, calls: Sequence[tuple[str, dict[str, Any]]], **extra: Any
) -> str | None:
    """What an assistant turn making ``calls`` adds to the prompt (the text after the
    generation prompt), or ``None`` when the template refuses the probe.

    The arguments go in as a mapping (what transformers passes); a template that joins them to
    text (Functionary's) is given them as JSON text, as the OpenAI API sends them.
    """
    for as_text in (False, True):
        tool_calls = [
            {
                "id": cid,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": json.dumps(args, ensure_ascii=False) if as_text else args,
                },
            }
            for cid, (name, args) in zip(_IDS, calls, strict=False)
        ]
        turn = {"role": "assistant", "content": "", "tool_calls": tool_calls}
        try:
            prompt = render_chat_template(template, [_QUESTION], tools=_PROBE_TOOLS, **extra)
            full = render_chat_template(
                template,
                [_QUESTION, turn],
                tools=_PROBE_TOOLS,
                add_generation_prompt=False,
                **extra,
            )
        except ChatTemplateError:
            continue
        return full[_turn_start(prompt, full) :]
    return None


def _turn_start(prompt: str, full: str) -> int:
    """Where the assistant turn begins in ``full``: after the text it shares with ``prompt``,
    moved back to the start of a marker the shared text ends inside (the generation prompt's
    ``<|START_RESPONSE|>`` and a call's ``<|START_ACTION|>`` share ``<|START_``)."""
    common = 0
    for a, b in zip(prompt, full, strict=False):
        if a != b:
            break
        common += 1
    if common == len(prompt):
        return common  # the generation prompt is all there: the turn goes on from it
    for opener, closer in (("<", ">"), ("[", "]")):
        start = full.rfind(opener, max(0, common - _MAX_MARKER), common)
        if start >= 0 and closer not in full[start:common]:
            return start
    return common


def _leftover(
    fmt: str, text: str, calls: Sequence[tuple[str, dict[str, Any]]], strict: bool
) -> int | None:
    """How much of ``text`` the format leaves unexplained (content and reasoning it did not
    take as calls) when it reads the probe calls back; ``None`` when it does not."""
    from tooluse.formats.registry import get_parser
    from tooluse.tools import as_tool

    tools = [as_tool(t) for t in _PROBE_TOOLS]
    try:
        result = get_parser(fmt).parse(text, tools)
    except Exception:  # noqa: BLE001 - a parser that fails on a foreign syntax does not match
        return None
    got = [(c.name, c.arguments) for c in result.tool_calls]
    if got != list(calls) or (strict and result.errors):
        return None
    return len(result.text.strip()) + len(result.reasoning.strip())


def detect_by_rendering(
    template: str, candidates: Sequence[str] = CANDIDATE_ORDER, **extra: Any
) -> str | None:
    """The format among ``candidates`` whose parser reads the probe calls back from what the
    template renders and leaves the least of that text unexplained (lenient parsers read
    other formats' calls too, but leave their markers behind); ``None`` when none does."""
    for probe in _PROBES:
        for calls in (probe, probe[:1]):
            text = rendered_call_text(template, calls, **extra)
            if not text or not text.strip():
                continue
            for strict in (True, False):
                best: tuple[int, int, str] | None = None
                for rank, fmt in enumerate(candidates):
                    left = _leftover(fmt, text, calls, strict)
                    if left is not None and (best is None or (left, rank) < best[:2]):
                        best = (left, rank, fmt)
                if best is not None:
                    return best[2]
    return None


# Marker text that identifies a format inside a template, most specific first.
_DETECTION: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("harmony", ("<|channel|>", "<|constrain|>")),
    ("deepseek_v32", ("｜DSML｜", "function_calls")),
    ("deepseek_v4", ("｜DSML｜", "tool_calls")),
    ("minimax_m3", ("]<]minimax[>[",)),
    ("minimax_m1", ("<tool_calls>", "</tool_calls>", "MiniMax")),
    ("command_r7b", ("<|START_ACTION|>",)),
    ("apertus", ("<|tools_prefix|>",)),
    ("kimi_k3", ("<|open|>", "<|sep|>")),
    ("step3", ("steptml:",)),
    ("internlm2", ("<|action_start|>", "<|plugin|>")),
    ("gigachat3", ("<|function_call|>",)),
    ("gigachat3", ("function call<|role_sep|>",)),
    ("longcat", ("<longcat_tool_call>",)),
    ("lfm2", ("<|tool_list_start|>",)),
    ("lfm2", ("<|tool_response_start|>",)),
    ("lfm2", ("List of tools: [",)),
    ("harmony", ("<|channel|>", "<|call|>")),
    ("kimi_k2", ("<|tool_calls_section_begin|>",)),
    ("glm45", ("<tool_call>", "<arg_key>")),
    ("minimax_m2", ("<minimax:tool_call>",)),
    ("seed_oss", ("<seed:tool_call>",)),
    ("gemma4", ("<|tool_call>",)),
    ("lfm2", ("<|tool_call_start|>",)),
    ("olmo3", ("<function_calls>",)),
    ("granite", ("<|tool_call|>",)),
    ("nemotron", ("<TOOLCALL>",)),
    ("jamba", ("<tool_calls>",)),
    ("phi4_mini", ("functools[",)),
    ("qwen3_coder", ("<tool_call>", "<function=")),
    ("function_tag", ("<function=", "</function>")),
    ("hermes", ("<tool_call>",)),
    ("mistral_v11", ("[TOOL_CALLS]", "[ARGS]")),
    ("mistral", ("[TOOL_CALLS]",)),
    ("deepseek_v3", ("<｜tool▁calls▁begin｜>", "function<｜tool▁sep｜>")),
    ("deepseek_v3", ("<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>",)),
    ("deepseek_v31", ("<｜tool▁calls▁begin｜>",)),
    ("functiongemma", ("<start_function_call>",)),
    ("pythonic", ("<|python_start|>",)),
    ("llama3_json", ("<|python_tag|>",)),
    ("llama3_json", ("<|start_header_id|>ipython",)),
    ("llama3_json", ("ipython", "<|eom_id|>")),
    ("gemma_tool_code", ("tool_code",)),
)


@lru_cache(maxsize=32)
def detect_format(template: str) -> str | None:
    """The registry name of the tool-call format a chat template uses, or ``None``.

    Detection renders a probe conversation with an assistant tool call through the template
    and asks each format's parser to read the call back from what the template wrote (see
    :func:`detect_by_rendering`). A template that does not render tool calls is recognised
    by marker text. ``None`` says that no format of tooluse's fits: the template has no tool
    section (SmolLM2, Gemma 2), or it renders calls in a syntax no parser reads back (then a
    marker it mentions elsewhere is no evidence, and a guess from it would name a format the
    model does not write).
    """
    marked = _detect_by_markers(template)
    try:
        _compile(template)
    except ChatTemplateError:
        return marked
    found = detect_by_rendering(template, bos_token="", eos_token="")
    if found is None:
        return None if _renders_probe_calls(template) else marked
    if found in BARE_FORMATS and marked not in BARE_FORMATS | {None}:
        return marked
    return found


def _renders_probe_calls(template: str) -> bool:
    """Whether the template writes the probe calls into the assistant turn."""
    for probe in _PROBES:
        for calls in (probe, probe[:1]):
            text = rendered_call_text(template, calls, bos_token="", eos_token="")
            if text and calls[0][0] in text:
                return True
    return False


def _detect_by_markers(template: str) -> str | None:
    for name, needles in _DETECTION:
        if all(needle in template for needle in needles):
            return name
    return None
