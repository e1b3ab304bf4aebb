"""Values that hold a format's own markers, as the peers' parsers read them: a closing marker
inside a JSON string value (Command R7B, Apertus), a plain tag inside a MiniMax-M3 value, and
text ending in ``>`` before a Functionary v3.2 call. Whole and streamed agree, in linear work."""

from __future__ import annotations

import json

import pytest

from tooluse.formats.registry import get_parser
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

from .helpers import SEARCH, WEATHER, assert_stream_equals_parse
from .test_adversarial import WorkCounter, _growth

NOTE = ToolDefinition(
    name="note",
    description="Write a note.",
    parameters=(ToolParameter("text", ToolParameterType.STRING),),
)
TOOLS = (WEATHER, NOTE, SEARCH)


def _calls(fmt: str, text: str) -> tuple[list[tuple[str, dict]], str]:
    result = assert_stream_equals_parse(get_parser(fmt), text, TOOLS)
    assert not result.errors, result.errors
    return [(c.name, c.arguments) for c in result.tool_calls], result.text


def _command(*calls: tuple[str, dict]) -> str:
    actions = [
        {"tool_call_id": str(i), "tool_name": name, "parameters": arguments}
        for i, (name, arguments) in enumerate(calls)
    ]
    return "<|START_ACTION|>" + json.dumps(actions) + "<|END_ACTION|>"


@pytest.mark.parametrize(
    ("fmt", "value"),
    [
        ("command_r7b", "end with <|END_ACTION|> here"),
        ("command_r7b", 'quoted "<|END_ACTION|>" and it\'s fine'),
        ("apertus", "end with <|tools_suffix|> here"),
        ("apertus", "two <|tools_suffix|><|tools_suffix|> \\ \" '"),
    ],
)
def test_closing_marker_inside_a_json_string_value(fmt, value):
    if fmt == "command_r7b":
        text = _command(("note", {"text": value}), ("get_weather", {"city": "Paris"}))
    else:
        text = (
            "<|tools_prefix|>"
            + json.dumps([{"note": {"text": value}}, {"get_weather": {"city": "Paris"}}])
            + "<|tools_suffix|>"
        )
    calls, rest = _calls(fmt, "Let me write it. " + text + " Done.")
    assert calls == [("note", {"text": value}), ("get_weather", {"city": "Paris"})]
    assert rest == "Let me write it.  Done."


def test_command_r_plus_fence_inside_a_json_string_value():
    value = "a fence ``` in the text"
    text = "Action: ```json\n" + json.dumps([{"tool_name": "note", "parameters": {"text": value}}])
    calls, _ = _calls("command_r7b", text + "\n```")
    assert calls == [("note", {"text": value})]


def test_block_whose_quotes_never_close_still_ends_at_its_marker():
    text = '<|START_ACTION|>[{"tool_name": "note", "parameters": {"text": "x}]<|END_ACTION|> after'
    result = assert_stream_equals_parse(get_parser("command_r7b"), text, TOOLS)
    assert result.tool_calls == ()
    assert [e.message.split(":")[0] for e in result.errors] == ["tool call block is not valid JSON"]
    assert result.text == " after"


_NS = "]<]minimax[>["


def _minimax(name: str, body: str) -> str:
    return (
        f'{_NS}<tool_call>\n{_NS}<invoke name="{name}">\n{body}\n{_NS}</invoke>\n{_NS}</tool_call>'
    )


@pytest.mark.parametrize("value", ["x<b>y", "<b>bold</b> and <i>", "a </text> b", "<item>1</item>"])
def test_minimax_m3_plain_tags_in_a_value_are_text(value):
    calls, _ = _calls("minimax_m3", _minimax("note", f"{_NS}<text>{value}{_NS}</text>"))
    assert calls == [("note", {"text": value})]


def test_minimax_m3_namespaced_tags_still_nest():
    body = (
        f"{_NS}<query>rain <b></b>{_NS}</query>\n{_NS}<filters>{_NS}<city>Paris{_NS}</city>"
        f"{_NS}</filters>\n{_NS}<tags>{_NS}<item>a{_NS}</item>{_NS}<item>b{_NS}</item>{_NS}</tags>"
    )
    calls, _ = _calls("minimax_m3", _minimax("search", body))
    assert calls == [
        ("search", {"query": "rain <b></b>", "filters": {"city": "Paris"}, "tags": ["a", "b"]})
    ]


@pytest.mark.parametrize(
    ("before", "text"),
    [("see ->", "see ->"), ("a >", "a >"), ("=>>", "=>>"), ("", "")],
)
def test_functionary_v3_2_call_after_text_ending_in_angle_bracket(before, text):
    calls, rest = _calls("functionary_v3_2", before + '>>>get_weather\n{"city": "Paris"}')
    assert calls == [("get_weather", {"city": "Paris"})]
    assert rest == text


def test_functionary_v3_2_second_call_after_a_run_of_angle_brackets():
    output = '>>>get_weather\n{"city": "Paris"}\n>>>>>>get_weather\n{"city": "Rome"}'
    calls, rest = _calls("functionary_v3_2", output)
    assert calls == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    assert rest.strip() == ">>>"


@pytest.mark.parametrize(
    ("fmt", "unit"),
    [
        ("command_r7b", _command(("note", {"text": "<|END_ACTION|> \" ' }]"}))),
        (
            "apertus",
            '<|tools_prefix|>[{"note": {"text": "<|tools_suffix|> \\" \'"}}]<|tools_suffix|>',
        ),
        ("minimax_m3", _minimax("note", f"{_NS}<text><b>x</b><c>{_NS}</text>")),
        ("functionary_v3_2", '>>>>>>>get_weather\n{"city": "P"}\n'),
    ],
)
def test_markers_inside_values_cost_linear_work(fmt, unit, monkeypatch):
    counter = WorkCounter(monkeypatch)
    assert _growth(counter, fmt, unit, 200, 4, 64) <= 4 * 1.1
