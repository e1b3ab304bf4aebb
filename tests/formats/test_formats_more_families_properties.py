"""Property tests of the formats in test_formats_more_families: calls written in each format's
syntax are read back exactly under random splits, and garbage made of their markers streams like
it parses."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooluse.formats import collect_events, get_parser

from .helpers import check_events, run_split, summary
from .test_formats_more_families import NEW_FORMATS, PEER_TOOLS

# -- round trips: calls written in each syntax come back exactly, under random splits ----------
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
keys = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
plain = st.text(
    alphabet=st.characters(blacklist_characters="<[{`|\\]}>\r", blacklist_categories=("Cs",)),
    max_size=20,
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=12))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=6,
)
json_calls = st.lists(
    st.tuples(names, st.dictionaries(keys, values, max_size=3)), min_size=1, max_size=3
)
# Text values that no reader takes for a number, boolean or null, and that hold no markup.
words = st.from_regex(r"w[a-z ]{0,10}", fullmatch=True)
text_calls = st.lists(
    st.tuples(names, st.dictionaries(keys, words, max_size=3)), min_size=1, max_size=3
)


def _split(data, text: str) -> list[str]:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=10)))
    pieces, last = [], 0
    for cut in cuts:
        pieces.append(text[last:cut])
        last = cut
    return [*pieces, text[last:]]


def _roundtrip(fmt: str, text: str, data, expected, before: str | None = None) -> None:
    parser = get_parser(fmt)
    whole = parser.parse(text)
    assert [(c.name, c.arguments) for c in whole.tool_calls] == expected, (fmt, whole)
    assert whole.errors == (), (fmt, whole.errors)
    if before is not None:
        assert whole.text.strip() == before.strip(), fmt
    events = run_split(parser, _split(data, text), ())
    check_events(events)
    assert summary(collect_events(events)) == summary(whole), fmt


def _j(value) -> str:
    return json.dumps(value, ensure_ascii=False)


@SETTINGS
@given(before=plain, cs=json_calls, data=st.data())
def test_json_section_formats_roundtrip(before, cs, data):
    obj = [_j({"name": n, "arguments": a}) for n, a in cs]
    texts = {
        "minimax_m1": "<tool_calls>\n" + "\n".join(obj) + "\n</tool_calls>",
        "granite_20b_fc": "".join("<function_call> " + o + "\n" for o in obj),
        "longcat": "".join(f"<longcat_tool_call>\n{o}\n</longcat_tool_call>" for o in obj),
        "ernie45": "".join(f"<tool_call>\n{o}\n</tool_call>\n" for o in obj),
        "hunyuan_a13b": "<tool_calls>[" + ", ".join(obj) + "]</tool_calls>",
        "internlm2": "".join(f"<|action_start|><|plugin|>\n{o}<|action_end|>" for o in obj),
        "gigachat3": "".join(f"<|function_call|>{o}" for o in obj),
        "xlam": "```json\n[" + ", ".join(obj) + "]\n```",
        "command_r7b": "<|START_ACTION|>"
        + _j(
            [
                {"tool_call_id": str(i), "tool_name": n, "parameters": a}
                for i, (n, a) in enumerate(cs)
            ]
        )
        + "<|END_ACTION|>",
        "apertus": "<|tools_prefix|>" + _j([{n: a} for n, a in cs]) + "<|tools_suffix|>",
        "functionary_v3_2": "all\n" + before + "".join(f">>>{n}\n{_j(a)}" for n, a in cs),
    }
    for fmt, body in texts.items():
        text = body if fmt == "functionary_v3_2" else before + body
        _roundtrip(fmt, text, data, cs, before)
    array = _j([{"name": n, "parameters": a} for n, a in cs])
    _roundtrip("json_array", array, data, cs, "")


@SETTINGS
@given(before=plain, cs=json_calls, data=st.data())
def test_dsml_roundtrip(before, cs, data):
    def params(args):
        return "".join(
            f'<｜DSML｜parameter name="{k}" string="true">{v}</｜DSML｜parameter>\n'
            if isinstance(v, str) and "<" not in v and v == v.strip("\n")
            else f'<｜DSML｜parameter name="{k}" string="false">{_j(v)}</｜DSML｜parameter>\n'
            for k, v in args.items()
        )

    for fmt, wrapper in (("deepseek_v32", "function_calls"), ("deepseek_v4", "tool_calls")):
        invokes = "".join(
            f'<｜DSML｜invoke name="{n}">\n{params(a)}</｜DSML｜invoke>\n' for n, a in cs
        )
        text = f"{before}<｜DSML｜{wrapper}>\n{invokes}</｜DSML｜{wrapper}>"
        _roundtrip(fmt, text, data, cs, before)


@SETTINGS
@given(before=plain, cs=text_calls, data=st.data())
def test_xml_tag_formats_roundtrip(before, cs, data):
    ns = "]<]minimax[>["
    texts = {
        "step3": "<｜tool_calls_begin｜>"
        + "".join(
            "<｜tool_call_begin｜>function<｜tool_sep｜>"
            f'<steptml:invoke name="{n}">'
            + "".join(
                f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in a.items()
            )
            + "</steptml:invoke><｜tool_call_end｜>"
            for n, a in cs
        )
        + "<｜tool_calls_end｜>",
        "minimax_m3": f"{ns}<tool_call>\n"
        + "".join(
            f'{ns}<invoke name="{n}">\n'
            + "".join(f"{ns}<{k}>{v}{ns}</{k}>\n" for k, v in a.items())
            + f"{ns}</invoke>\n"
            for n, a in cs
        )
        + f"{ns}</tool_call>",
        "minicpm5": "".join(
            f'<function name="{n}">'
            + "".join(f'<param name="{k}">{v.strip()}</param>' for k, v in a.items())
            + "</function>"
            for n, a in cs
        ),
        "kimi_k3": "<|open|>tools<|sep|>"
        + "".join(
            f'<|open|>call tool="{n}" index="{i}"<|sep|>'
            + "".join(
                f'<|open|>argument key="{k}" type="string"<|sep|>{v}<|close|>argument<|sep|>'
                for k, v in a.items()
            )
            + "<|close|>call<|sep|>"
            for i, (n, a) in enumerate(cs)
        )
        + "<|close|>tools<|sep|>",
    }
    for fmt, body in texts.items():
        expected = cs
        if fmt == "minicpm5":  # MiniCPM5 values are trimmed, as vLLM reads them
            expected = [(n, {k: v.strip() for k, v in a.items()}) for n, a in cs]
        _roundtrip(fmt, before + body, data, expected, before)


#: Formats whose calls the round-trip properties above write and read back under random splits.
NEW_ROUND_TRIPPED = {
    **dict.fromkeys(
        (
            "minimax_m1",
            "granite_20b_fc",
            "longcat",
            "ernie45",
            "hunyuan_a13b",
            "internlm2",
            "gigachat3",
            "xlam",
            "command_r7b",
            "apertus",
            "functionary_v3_2",
            "json_array",
        ),
        test_json_section_formats_roundtrip,
    ),
    **dict.fromkeys(("deepseek_v32", "deepseek_v4"), test_dsml_roundtrip),
    **dict.fromkeys(("step3", "minimax_m3", "minicpm5", "kimi_k3"), test_xml_tag_formats_roundtrip),
}


#: Marker and syntax pieces of the formats above, for garbage built to reach their states.
NEW_FRAGMENTS = [
    "<｜DSML｜function_calls>",
    "</｜DSML｜function_calls>",
    "<｜DSML｜tool_calls>",
    '<｜DSML｜invoke name="get_weather">',
    "</｜DSML｜invoke>",
    '<｜DSML｜parameter name="city" string="true">',
    '<｜DSML｜parameter name="days" string="false">',
    "</｜DSML｜parameter>",
    "<tool_calls>",
    "</tool_calls>",
    "]<]minimax[>[",
    "<tool_call>",
    '<invoke name="today">',
    "</invoke>",
    "<city>",
    "</city>",
    "<item>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "Action: ```json",
    "```json",
    "```",
    ">>>",
    "all\n",
    "get_weather\n",
    "<|action_start|><|plugin|>",
    "<|action_end|>",
    "<｜tool_calls_begin｜>",
    "<｜tool_call_begin｜>function<｜tool_sep｜>",
    '<steptml:invoke name="today">',
    "</steptml:invoke>",
    "<｜tool_call_end｜>",
    "<function_call>",
    "<|function_call|>",
    "function call<|role_sep|>",
    "<|message_sep|>",
    "</s>",
    "<answer>",
    "<longcat_tool_call>",
    "<|tools_prefix|>",
    "<|tools_suffix|>",
    "<|inner_prefix|>",
    "<|open|>tools<|sep|>",
    '<|open|>call tool="today"<|sep|>',
    '<|open|>argument key="city" type="string"<|sep|>',
    "<|close|>argument<|sep|>",
    "<|close|>call<|sep|>",
    "<|open|>think<|sep|>",
    '<function name="today">',
    '<param name="city">',
    "</param>",
    "</function>",
    '{"name": "today", "arguments": {}}',
    '{"tool_name": "today", "parameters": {}}',
    '[{"name": "get_weather", "parameters": {"city": "x"}}',
    '{"today": {}}',
    "<think>",
    "</think>",
    "<mm:think>",
    "</mm:think>",
    "{",
    "}",
    "[",
    "]",
    ",",
    '"',
    "\n",
    " ",
    "x",
]
new_garbage = st.lists(st.sampled_from(NEW_FRAGMENTS) | st.text(max_size=3), max_size=30).map(
    "".join
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=new_garbage, data=st.data(), started=st.booleans())
def test_garbage_in_new_formats_streams_like_parse(text, data, started):
    pieces = _split(data, text)
    for fmt in NEW_FORMATS:
        parser = get_parser(fmt, reasoning_started=started)
        whole = parser.parse(text, PEER_TOOLS)
        events = run_split(parser, pieces, PEER_TOOLS)
        check_events(events)
        assert summary(collect_events(events)) == summary(whole), (fmt, text)
