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

from collections.abc import Sequence
from typing import Any

from tooluse.errors import ChatTemplateError

__all__ = ["BARE_FORMATS", "CANDIDATE_ORDER", "detect_by_rendering", "rendered_call_text"]

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


def rendered_call_text(
    template: str, calls: Sequence[tuple[str, dict[str, Any]]], **extra: Any
) -> str | None:
    """What an assistant turn making ``calls`` adds to the prompt (the text after the
    generation prompt), or ``None`` when the template refuses the probe."""
    from tooluse.formats.chat_template import render_chat_template

    tool_calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
        for cid, (name, args) in zip(_IDS, calls, strict=False)
    ]
    turn = {"role": "assistant", "content": "", "tool_calls": tool_calls}
    try:
        prompt = render_chat_template(template, [_QUESTION], tools=_PROBE_TOOLS, **extra)
        full = render_chat_template(
            template, [_QUESTION, turn], tools=_PROBE_TOOLS, add_generation_prompt=False, **extra
        )
    except ChatTemplateError:
        return None
    common = 0
    for a, b in zip(prompt, full, strict=False):
        if a != b:
            break
        common += 1
    return full[common:]


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
