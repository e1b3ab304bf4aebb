"""Property tests: for any output and any split into deltas, streaming equals parsing, and
calls written in a format's syntax are read back exactly."""

from __future__ import annotations

import inspect
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooluse.formats import available_formats, collect_events, get_parser

from .helpers import check_events, summary

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
keys = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
# Plain text around calls: no marker characters of any format.
plain = st.text(
    alphabet=st.characters(blacklist_characters="<[{`|\\]}\r", blacklist_categories=("Cs",)),
    max_size=30,
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=20))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
arguments = st.dictionaries(keys, values, max_size=4)
calls = st.lists(st.tuples(names, arguments), min_size=1, max_size=3)


def _split(data, text: str) -> list[str]:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=12)))
    pieces, last = [], 0
    for cut in cuts:
        pieces.append(text[last:cut])
        last = cut
    pieces.append(text[last:])
    return pieces


def _stream(parser, pieces, tools=()):
    stream = parser.stream(tools)
    events = []
    for piece in pieces:
        events += stream.feed(piece)
    events += stream.close()
    return events


def _assert_streams_like_parse(parser, pieces, whole, tools=(), label=None):
    """The events of a split are well formed and add up to the whole parse."""
    events = _stream(parser, pieces, tools)
    check_events(events)
    assert summary(collect_events(events)) == summary(whole), label


def _roundtrip(fmt: str, text: str, data, expected_calls, expected_text=None):
    parser = get_parser(fmt)
    whole = parser.parse(text)
    assert [(c.name, c.arguments) for c in whole.tool_calls] == expected_calls, whole
    assert whole.errors == (), whole.errors
    if expected_text is not None:
        assert whole.text == expected_text
    _assert_streams_like_parse(parser, _split(data, text), whole)


def _j(value) -> str:
    return json.dumps(value, ensure_ascii=False)


@SETTINGS
@given(before=plain, after=plain, cs=calls, data=st.data())
def test_hermes_roundtrip(before, after, cs, data):
    body = "".join(f"<tool_call>\n{_j({'name': n, 'arguments': a})}\n</tool_call>" for n, a in cs)
    _roundtrip("hermes", before + body + after, data, cs, before + after)


@SETTINGS
@given(before=plain, cs=calls, data=st.data())
def test_llama3_roundtrip(before, cs, data):
    body = "; ".join(_j({"name": n, "parameters": a}) for n, a in cs)
    _roundtrip("llama3_json", before + "<|python_tag|>" + body + "<|eom_id|>", data, cs, before)


@SETTINGS
@given(before=plain, cs=calls, data=st.data())
def test_mistral_roundtrip(before, cs, data):
    body = _j([{"name": n, "arguments": a} for n, a in cs])
    _roundtrip("mistral", before + "[TOOL_CALLS]" + body, data, cs, before)


@SETTINGS
@given(before=plain, cs=calls, data=st.data())
def test_mistral_v11_roundtrip(before, cs, data):
    body = "".join(f"[TOOL_CALLS]{n}[ARGS]{_j(a)}" for n, a in cs)
    _roundtrip("mistral_v11", before + body, data, cs, before)


@SETTINGS
@given(before=plain, after=plain, cs=calls, fenced=st.booleans(), data=st.data())
def test_deepseek_roundtrip(before, after, cs, fenced, data):
    if fenced:
        inner = "".join(
            f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{_j(a)}\n```<｜tool▁call▁end｜>"
            for n, a in cs
        )
    else:
        inner = "".join(
            f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_j(a)}<｜tool▁call▁end｜>" for n, a in cs
        )
    text = before + "<｜tool▁calls▁begin｜>" + inner + "<｜tool▁calls▁end｜>" + after
    _roundtrip("deepseek_v3" if fenced else "deepseek_v31", text, data, cs, before + after)


@SETTINGS
@given(before=plain, after=plain, cs=calls, data=st.data())
def test_pythonic_and_tool_code_roundtrip(before, after, cs, data):
    def call(n, a):
        return f"{n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")"

    listed = "[" + ", ".join(call(n, a) for n, a in cs) + "]"
    _roundtrip("pythonic", listed + after, data, cs, after)
    fenced = before + "```tool_code\n" + "\n".join(call(n, a) for n, a in cs) + "\n```" + after
    _roundtrip("gemma_tool_code", fenced, data, cs, before + after)


def _gemma_value(value, quote: str) -> str:
    if isinstance(value, str):
        return quote + value + quote
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v, quote) for v in value) + "]"
    return _j(value)


@SETTINGS
@given(before=plain, after=plain, cs=calls, data=st.data())
def test_functiongemma_and_gemma4_roundtrip(before, after, cs, data):
    for fmt, (open_, close, quote) in {
        "functiongemma": ("<start_function_call>", "<end_function_call>", "<escape>"),
        "gemma4": ("<|tool_call>", "<tool_call|>", '<|"|>'),
    }.items():
        body = "".join(f"{open_}call:{n}{_gemma_value(a, quote)}{close}" for n, a in cs)
        _roundtrip(fmt, before + body + after, data, cs, before + after)


xml_text = st.text(
    alphabet=st.characters(blacklist_characters="<\r", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=30,
).filter(lambda s: not s.startswith("\n") and not s.endswith("\n"))


@SETTINGS
@given(before=plain, query=xml_text, days=st.integers(0, 99), data=st.data())
def test_qwen3_coder_roundtrip(before, query, days, data):
    from .helpers import SEARCH, WEATHER

    text = (
        before
        + f"<tool_call>\n<function=search>\n<parameter=query>\n{query}\n</parameter>\n</function>\n</tool_call>"
        + f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{query}\n</parameter>\n"
        + f"<parameter=days>\n{days}\n</parameter>\n</function>\n</tool_call>"
    )
    parser = get_parser("qwen3_coder")
    whole = parser.parse(text, (SEARCH, WEATHER))
    assert [(c.name, c.arguments) for c in whole.tool_calls] == [
        ("search", {"query": query}),
        ("get_weather", {"city": query, "days": days}),
    ]
    assert whole.text == before
    _assert_streams_like_parse(parser, _split(data, text), whole, (SEARCH, WEATHER))


@SETTINGS
@given(reasoning=plain, final=plain, cs=calls, data=st.data())
def test_harmony_roundtrip(reasoning, final, cs, data):
    text = f"<|channel|>analysis<|message|>{reasoning}<|end|>"
    for n, a in cs:
        text += f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{_j(a)}<|call|>"
    text += f"<|start|>assistant<|channel|>final<|message|>{final}<|return|>"
    _roundtrip("harmony", text, data, cs, final)


# Garbage built from pieces of every format's markers, quotes, braces and plain text.
FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<function=",
    "<parameter=",
    "</parameter>",
    "</function>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|python_tag|>",
    "<|python_start|>",
    "<|python_end|>",
    "<|eom_id|>",
    "```tool_code",
    "```",
    "<start_function_call>",
    "<end_function_call>",
    "<escape>",
    "<|tool_call>",
    "<tool_call|>",
    '<|"|>',
    "<|channel|>",
    "<|message|>",
    "<|start|>",
    "<|end|>",
    "<|call|>",
    "to=functions.f",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    '{"name": "f", "arguments": {',
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
    ";",
    "=",
    "f(",
    "call:f{",
    "\n",
    " ",
    "x",
    "é",
    "<",
    "<|",
    "\x00",
    "True",
    "null",
]
garbage = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=40).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=garbage, data=st.data())
def test_garbage_never_crashes_and_streams_like_parse(text, data):
    pieces = _split(data, text)
    for fmt in available_formats():
        parser = get_parser(fmt)
        whole = parser.parse(text)
        _assert_streams_like_parse(parser, pieces, whole, label=fmt)


JSON_LISTS = {
    "granite": ("<|tool_call|>", ""),
    "jamba": ("<tool_calls>", "</tool_calls>"),
    "phi4_mini": ("functools", ""),
    "nemotron": ("<TOOLCALL>", "</TOOLCALL>"),
}


@SETTINGS
@given(before=plain, cs=calls, data=st.data())
def test_json_list_formats_roundtrip(before, cs, data):
    body = _j([{"name": n, "arguments": a} for n, a in cs])
    for fmt, (open_, close) in JSON_LISTS.items():
        _roundtrip(fmt, before + open_ + body + close, data, cs, before)


@SETTINGS
@given(before=plain, after=plain, cs=calls, data=st.data())
def test_kimi_k2_roundtrip(before, after, cs, data):
    inner = "".join(
        f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{_j(a)}<|tool_call_end|>"
        for i, (n, a) in enumerate(cs)
    )
    text = before + "<|tool_calls_section_begin|>" + inner + "<|tool_calls_section_end|>" + after
    _roundtrip("kimi_k2", text, data, cs, before + after)


@SETTINGS
@given(after=plain, cs=calls, data=st.data())
def test_lfm2_and_olmo3_roundtrip(after, cs, data):
    def call(n, a):
        return f"{n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")"

    listed = "[" + ", ".join(call(n, a) for n, a in cs) + "]"
    _roundtrip(
        "lfm2", "<|tool_call_start|>" + listed + "<|tool_call_end|>" + after, data, cs, after
    )
    lines = "\n".join(call(n, a) for n, a in cs)
    _roundtrip(
        "olmo3", "<function_calls>\n" + lines + "\n</function_calls>" + after, data, cs, after
    )


@SETTINGS
@given(before=plain, query=xml_text, data=st.data())
def test_seed_oss_and_minimax_roundtrip(before, query, data):
    from .helpers import SEARCH

    texts = {
        "seed_oss": f"<seed:tool_call>\n<function=search>\n<parameter=query>\n{query}\n</parameter>\n"
        "</function>\n</seed:tool_call>",
        "minimax_m2": f'<minimax:tool_call>\n<invoke name="search">\n<parameter name="query">{query}'
        "</parameter>\n</invoke>\n</minimax:tool_call>",
    }
    for fmt, body in texts.items():
        parser = get_parser(fmt)
        text = before + body
        whole = parser.parse(text, (SEARCH,))
        assert [(c.name, c.arguments) for c in whole.tool_calls] == [("search", {"query": query})]
        assert whole.text == before
        _assert_streams_like_parse(parser, _split(data, text), whole, (SEARCH,))


@SETTINGS
@given(
    before=plain, query=xml_text, days=st.integers(0, 99), newlines=st.booleans(), data=st.data()
)
def test_glm_roundtrip(before, query, days, newlines, data):
    from .helpers import SEARCH, WEATHER

    nl = "\n" if newlines else ""
    text = (
        before
        + f"<tool_call>search{nl or chr(10)}<arg_key>query</arg_key>{nl}<arg_value>{query}</arg_value>{nl}</tool_call>"
        + f"<tool_call>get_weather{nl}<arg_key>city</arg_key>{nl}<arg_value>{query}</arg_value>{nl}"
        + f"<arg_key>days</arg_key>{nl}<arg_value>{days}</arg_value>{nl}</tool_call>"
    )
    parser = get_parser("glm45")
    whole = parser.parse(text, (SEARCH, WEATHER))
    assert [(c.name, c.arguments) for c in whole.tool_calls] == [
        ("search", {"query": query}),
        ("get_weather", {"city": query, "days": days}),
    ]
    assert whole.text == before
    _assert_streams_like_parse(parser, _split(data, text), whole, (SEARCH, WEATHER))


@SETTINGS
@given(before=plain, after=plain, cs=calls, data=st.data())
def test_function_tag_roundtrip(before, after, cs, data):
    body = "".join(f"<function={n}>{_j(a)}</function>" for n, a in cs)
    _roundtrip("function_tag", before + body + after, data, cs, before + after)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=garbage, data=st.data())
def test_garbage_with_tools_and_open_reasoning_streams_like_parse(text, data):
    from .helpers import TOOLS

    pieces = _split(data, text)
    for fmt in available_formats():
        parser = get_parser(fmt, reasoning_started=True)
        whole = parser.parse(text, TOOLS)
        _assert_streams_like_parse(parser, pieces, whole, TOOLS, label=fmt)


# Formats whose calls the round-trip properties above write and read back under random splits.
ROUND_TRIPPED = {
    "hermes": test_hermes_roundtrip,
    "llama3_json": test_llama3_roundtrip,
    "mistral": test_mistral_roundtrip,
    "mistral_v11": test_mistral_v11_roundtrip,
    "deepseek_v3": test_deepseek_roundtrip,
    "deepseek_v31": test_deepseek_roundtrip,
    "pythonic": test_pythonic_and_tool_code_roundtrip,
    "gemma_tool_code": test_pythonic_and_tool_code_roundtrip,
    "functiongemma": test_functiongemma_and_gemma4_roundtrip,
    "gemma4": test_functiongemma_and_gemma4_roundtrip,
    "qwen3_coder": test_qwen3_coder_roundtrip,
    "harmony": test_harmony_roundtrip,
    "granite": test_json_list_formats_roundtrip,
    "jamba": test_json_list_formats_roundtrip,
    "phi4_mini": test_json_list_formats_roundtrip,
    "nemotron": test_json_list_formats_roundtrip,
    "kimi_k2": test_kimi_k2_roundtrip,
    "lfm2": test_lfm2_and_olmo3_roundtrip,
    "olmo3": test_lfm2_and_olmo3_roundtrip,
    "seed_oss": test_seed_oss_and_minimax_roundtrip,
    "minimax_m2": test_seed_oss_and_minimax_roundtrip,
    "glm45": test_glm_roundtrip,
    "function_tag": test_function_tag_roundtrip,
}


def test_every_format_has_a_random_split_round_trip_property():
    """Random garbage covers every format (above); this checks each registered format also has a
    property that writes real calls in its syntax and reads them back under random splits."""
    # later formats are written there
    from .test_formats_more_families_properties import NEW_ROUND_TRIPPED

    assert set(ROUND_TRIPPED) | set(NEW_ROUND_TRIPPED) == set(available_formats())
    for fmt, test in {**ROUND_TRIPPED, **NEW_ROUND_TRIPPED}.items():
        source = inspect.getsource(test)
        named = f'"{fmt}"' in source or (fmt in JSON_LISTS and "JSON_LISTS" in source)
        assert named, fmt
