"""The whole-text fast path of the Hermes parser reads exactly what the streaming reader reads.

The responses are generated near the fast path's edges (duplicate keys, escapes in names,
markers inside strings, stray closers, reasoning, unknown tools, cut-off blocks, whitespace
JSON does not allow), so a difference between the two readers shows up as a failing example.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tooluse.formats import HermesToolCallParser, collect_events
from tooluse.formats.hermes_whole import read_whole_response
from tooluse.messages import new_call_id

from .helpers import TOOLS, run_split, summary

P = HermesToolCallParser()
NAMES = ("get_weather", "today", "search", "unknown_tool", 'we"ird', "es\\cape", "")

_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.sampled_from('ab "\\\n<>/{}[],:é\u2028'), max_size=12),
    st.sampled_from(["</tool_call>", "<tool_call>", "<think>", "x/{a,b"]),
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abn"), inner, max_size=3)
    ),
    max_leaves=8,
)
_EDGE_LITERALS = (
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e400",
    '"\\ud800"',
    "1" + "0" * 40,
    "-0",
    "1E+2",
    "0.1e-400",
    "true",
    '"\\u0000"',
    "01",
    "+1",
    "'a'",
    "True",
)
_space = st.sampled_from(["", " ", "\n", "\t", "\r\n", "\u00a0", "\x0b"])


@st.composite
def _call_text(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(NAMES))
    arguments = draw(st.dictionaries(st.sampled_from(["city", "name", "q"]), _json_values))
    body = '{"name": ' + json.dumps(name) + ', "arguments": ' + json.dumps(arguments) + "}"
    shape = draw(st.integers(0, 9))
    if shape == 1:  # a duplicate key after the arguments
        body = body[:-1] + ', "name": "today"}'
    elif shape == 2:
        body = body[:-1] + ', "arguments": {}}'
    elif shape == 3:  # a list of calls, or parameters, or string arguments
        body = "[" + body + "]"
    elif shape == 4:
        body = body.replace('"arguments"', '"parameters"', 1)
    elif shape == 5:
        body = (
            '{"name": '
            + json.dumps(name)
            + ', "arguments": '
            + json.dumps(json.dumps(arguments))
            + "}"
        )
    elif shape == 6:  # cut off
        body = body[: draw(st.integers(0, len(body)))]
    elif shape == 8:  # literals at JSON's edges
        literal = draw(st.sampled_from(_EDGE_LITERALS))
        body = '{"name": ' + json.dumps(name) + ', "arguments": {"city": ' + literal + "}}"
    elif shape == 7:  # trailing junk inside the block
        body += draw(st.sampled_from([",", " x", "}", ', {"name": "today", "arguments": {}}']))
    close = draw(st.sampled_from(["</tool_call>", "</tool_call>", "", "</tool_call >"]))
    return "<tool_call>" + draw(_space) + body + draw(_space) + close


_prose = st.text(alphabet=st.sampled_from("ab \n<>/tl_c"), max_size=10) | st.sampled_from(
    ["", "\n", "<think>r</think>", "</tool_call>", "<tool", "I'll call it.\n"]
)


@st.composite
def _response(draw: st.DrawFn) -> str:
    parts = [draw(_prose)]
    for _ in range(draw(st.integers(0, 3))):
        parts += [draw(_call_text()), draw(_prose)]
    return "".join(parts)


def _machine(text: str, tools) -> tuple:
    return summary(collect_events(run_split(P, [text], tools)))


@settings(max_examples=600, deadline=None)
@given(_response(), st.booleans())
def test_the_fast_path_reads_what_the_streaming_reader_reads(text, with_tools):
    tools = TOOLS if with_tools else ()
    assert summary(P.parse(text, tools)) == _machine(text, tools)


@settings(max_examples=200, deadline=None)
@given(_response())
def test_every_split_of_a_clean_response_matches_the_fast_parse(text):
    parsed = P.parse(text, TOOLS)
    middle = len(text) // 2
    assert summary(collect_events(run_split(P, [text[:middle], text[middle:]]))) == summary(parsed)


def test_clean_responses_take_the_fast_path_and_others_do_not():
    def fast(text: str):
        return read_whole_response(
            text,
            open_marker="<tool_call>",
            close_marker="</tool_call>",
            reserved=("<think>", "</think>"),
            tools=frozenset({"today", "search"}),
            new_id=new_call_id,
        )

    clean = 'Sure.\n<tool_call>\n{"name": "today", "arguments": {}}\n</tool_call>\nok'
    result = fast(clean)
    assert result is not None
    assert (result.text, [c.name for c in result.tool_calls]) == ("Sure.\n\nok", ["today"])
    for declined in (
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',  # not offered
        '<tool_call>{"name": "today", "arguments": {}}',  # not closed
        '<tool_call>[{"name": "today", "arguments": {}}]</tool_call>',  # a list
        '<think>x</think><tool_call>{"name": "today", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "today", "arguments": {"q": "</tool_call>"}}</tool_call>',
        '<tool_call>{"name": "today", "arguments": {}, "name": "search"}</tool_call>',
    ):
        assert fast(declined) is None, declined


def test_a_generator_of_tools_is_read_once_even_when_the_fast_path_declines():
    text = '<tool_call>{"name": "today", "arguments": {}, "x": 1}</tool_call>'
    result = P.parse(text, (t for t in TOOLS))
    assert [c.name for c in result.tool_calls] == ["today"]
    assert not any("unknown tool" in e.message for e in result.errors)
