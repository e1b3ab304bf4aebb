"""Valid model outputs in every built-in format, written from a list of calls.

:func:`render` writes calls the way each model family writes them (the same syntax the
round-trip properties use); the truncation and mutation tests cut and damage these texts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from .helpers import SEARCH, TODAY, WEATHER

Call = tuple[str, dict[str, Any]]
GEMMA4_QUOTE = '<|"|>'

#: Calls with the shapes that matter to readers: scalars of each type, nested values, quotes,
#: braces, brackets, escapes, non-ASCII text, line breaks, and a call without arguments.
CALLS: tuple[Call, ...] = (
    ("get_weather", {"city": "Paris", "days": 3, "metric": True}),
    (
        "search",
        {
            "query": 'say "hi" {x} [y], (z) ünï\\ done\nnext line',
            "filters": {"year": [2024, 2.5, None], "ok": False},
            "tags": ["a", "b c"],
        },
    ),
    ("today", {}),
)
TOOLS = (WEATHER, SEARCH, TODAY)


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _py_call(name: str, args: dict[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def _gemma_value(value: Any, quote: str) -> str:
    if isinstance(value, str):
        return quote + value + quote
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v, quote) for v in value) + "]"
    return _j(value)


def _xml_value(value: Any) -> str:
    return value if isinstance(value, str) else _j(value)


def _qwen3(calls: Sequence[Call], open_: str = "<tool_call>", close: str = "</tool_call>") -> str:
    out = ""
    for name, args in calls:
        params = "".join(
            f"<parameter={k}>\n{_xml_value(v)}\n</parameter>\n" for k, v in args.items()
        )
        out += f"{open_}\n<function={name}>\n{params}</function>\n{close}"
    return out


def _minimax(calls: Sequence[Call]) -> str:
    out = "<minimax:tool_call>\n"
    for name, args in calls:
        params = "".join(
            f'<parameter name="{k}">{_xml_value(v)}</parameter>\n' for k, v in args.items()
        )
        out += f'<invoke name="{name}">\n{params}</invoke>\n'
    return out + "</minimax:tool_call>"


def _glm(calls: Sequence[Call]) -> str:
    out = ""
    for name, args in calls:
        params = "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{_xml_value(v)}</arg_value>\n"
            for k, v in args.items()
        )
        out += f"<tool_call>{name}\n{params}</tool_call>"
    return out


def _deepseek(calls: Sequence[Call], fenced: bool) -> str:
    if fenced:
        inner = "".join(
            f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{_j(a)}\n```<｜tool▁call▁end｜>"
            for n, a in calls
        )
    else:
        inner = "".join(
            f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_j(a)}<｜tool▁call▁end｜>" for n, a in calls
        )
    return "<｜tool▁calls▁begin｜>" + inner + "<｜tool▁calls▁end｜>"


def _harmony(calls: Sequence[Call]) -> str:
    text = "<|channel|>analysis<|message|>Need the weather.<|end|>"
    for n, a in calls:
        text += (
            f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json"
            f"<|message|>{_j(a)}<|call|>"
        )
    return text


def _json_list(open_: str, close: str) -> Callable[[Sequence[Call]], str]:
    return lambda calls: open_ + _j([{"name": n, "arguments": a} for n, a in calls]) + close


#: format -> (writer of the calls, whether text may follow the calls, reasoning markers)
WRITERS: dict[str, tuple[Callable[[Sequence[Call]], str], bool, tuple[str, str] | None]] = {
    "hermes": (
        lambda cs: "".join(
            f"<tool_call>\n{_j({'name': n, 'arguments': a})}\n</tool_call>" for n, a in cs
        ),
        True,
        ("<think>", "</think>"),
    ),
    "llama3_json": (
        lambda cs: (
            "<|python_tag|>"
            + "; ".join(_j({"name": n, "parameters": a}) for n, a in cs)
            + "<|eom_id|>"
        ),
        False,
        None,
    ),
    "mistral": (_json_list("[TOOL_CALLS]", ""), False, ("[THINK]", "[/THINK]")),
    "mistral_v11": (
        lambda cs: "".join(f"[TOOL_CALLS]{n}[ARGS]{_j(a)}" for n, a in cs),
        False,
        ("[THINK]", "[/THINK]"),
    ),
    "deepseek_v3": (lambda cs: _deepseek(cs, True), True, ("<think>", "</think>")),
    "deepseek_v31": (lambda cs: _deepseek(cs, False), True, ("<think>", "</think>")),
    "kimi_k2": (
        lambda cs: (
            "<|tool_calls_section_begin|>"
            + "".join(
                f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{_j(a)}"
                "<|tool_call_end|>"
                for i, (n, a) in enumerate(cs)
            )
            + "<|tool_calls_section_end|>"
        ),
        True,
        ("<think>", "</think>"),
    ),
    "pythonic": (
        lambda cs: "[" + ", ".join(_py_call(n, a) for n, a in cs) + "]",
        True,
        None,  # the list must open the turn
    ),
    "gemma_tool_code": (
        lambda cs: "```tool_code\n" + "\n".join(_py_call(n, a) for n, a in cs) + "\n```",
        True,
        None,
    ),
    "lfm2": (
        lambda cs: (
            "<|tool_call_start|>[" + ", ".join(_py_call(n, a) for n, a in cs) + "]<|tool_call_end|>"
        ),
        True,
        ("<think>", "</think>"),
    ),
    "olmo3": (
        lambda cs: (
            "<function_calls>\n" + "\n".join(_py_call(n, a) for n, a in cs) + "\n</function_calls>"
        ),
        True,
        ("<think>", "</think>"),
    ),
    "functiongemma": (
        lambda cs: "".join(
            f"<start_function_call>call:{n}{_gemma_value(a, '<escape>')}<end_function_call>"
            for n, a in cs
        ),
        True,
        None,
    ),
    "gemma4": (
        lambda cs: "".join(
            f"<|tool_call>call:{n}{_gemma_value(a, GEMMA4_QUOTE)}<tool_call|>" for n, a in cs
        ),
        True,
        ("<|channel>thought", "<channel|>"),
    ),
    "qwen3_coder": (_qwen3, True, ("<think>", "</think>")),
    "seed_oss": (
        lambda cs: _qwen3(cs, "<seed:tool_call>", "</seed:tool_call>"),
        True,
        ("<seed:think>", "</seed:think>"),
    ),
    "minimax_m2": (_minimax, True, ("<think>", "</think>")),
    "glm45": (_glm, True, ("<think>", "</think>")),
    "harmony": (_harmony, False, None),
    "granite": (_json_list("<|tool_call|>", ""), False, ("<think>", "</think>")),
    "jamba": (_json_list("<tool_calls>", "</tool_calls>"), False, ("<think>", "</think>")),
    "phi4_mini": (_json_list("functools", ""), False, ("<think>", "</think>")),
    "nemotron": (_json_list("<TOOLCALL>", "</TOOLCALL>"), False, ("<think>", "</think>")),
    "function_tag": (
        lambda cs: "".join(f"<function={n}>{_j(a)}</function>" for n, a in cs),
        True,
        None,
    ),
}


def render(
    fmt: str,
    calls: Sequence[Call] = CALLS,
    *,
    before: str = "",
    after: str = "",
    reasoning: str = "",
) -> str:
    """A model output in ``fmt`` making ``calls``, with optional reasoning, text before and
    text after (each only where the format has a place for it)."""
    write, trailing, think = WRITERS[fmt]
    head = ""
    if reasoning and think is not None:
        head = think[0] + reasoning + think[1]
    if fmt in ("pythonic", "harmony"):
        before = ""  # a pythonic list must open the turn; harmony text lives in messages
    return head + before + write(calls) + (after if trailing else "")


def samples(fmt: str) -> list[str]:
    """A few valid outputs of ``fmt``: plain calls, calls with reasoning and text around them,
    and one call alone."""
    return [
        render(fmt),
        render(fmt, before="Let me check. ", after="\nDone.", reasoning="The user wants data."),
        render(fmt, CALLS[:1]),
    ]


#: Markers and syntax pieces of every format, for damaging valid outputs.
FRAGMENTS: tuple[str, ...] = (
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    '<parameter name="',
    '<invoke name="',
    "</invoke>",
    "<minimax:tool_call>",
    "<seed:tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[THINK]",
    "<|python_tag|>",
    "<|eom_id|>",
    "<|python_start|>",
    "<|python_end|>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<function_calls>",
    "</function_calls>",
    "```tool_code",
    "```",
    "<start_function_call>",
    "<end_function_call>",
    "<escape>",
    "<|tool_call>",
    "<tool_call|>",
    GEMMA4_QUOTE,
    "<|channel>thought",
    "<channel|>",
    "<|channel|>",
    "<|message|>",
    "<|start|>",
    "<|end|>",
    "<|call|>",
    " to=functions.f",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    '{"name": "f", "arguments": {',
    "call:f{",
    "f(",
    '"',
    "'",
    "\\",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "=",
    "\n",
    " ",
    "<",
    "\x00",
    "\ud800",
    "é",
)
