"""The marker lexer and the tolerant literal reader."""

from __future__ import annotations

import pytest

from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import (
    LiteralSyntaxError,
    decode_arguments,
    parse_loose_value,
    parse_python_calls,
)


def test_marker_found_and_text_before_released():
    markers = MarkerSet(["<tool_call>", "<think>"])
    found = markers.find("abc<think>rest", 0, final=False)
    assert (found.text_end, found.marker, found.marker_end) == (3, "<think>", 10)


def test_partial_marker_at_the_end_is_held_back_and_only_that():
    markers = MarkerSet(["<tool_call>"])
    assert markers.find("hello <tool_ca", 0, final=False).text_end == len("hello ")
    assert markers.find("hello <x", 0, final=False).text_end == len("hello <x")
    assert markers.find("a <", 0, final=False).text_end == 2
    assert markers.find("hello <tool_ca", 0, final=True).text_end == len("hello <tool_ca")


def test_shorter_marker_waits_while_a_longer_one_may_still_match():
    markers = MarkerSet(["```", "```tool_code"])
    assert markers.find("x```tool", 0, final=False).marker is None
    assert markers.find("x```tool_code", 0, final=False).marker == "```tool_code"
    assert markers.find("x```py", 0, final=False).marker == "```"


def test_marker_inside_another_is_refused_but_a_suffix_is_fine():
    with pytest.raises(ValueError, match="inside"):
        MarkerSet(["ab", "xaby"])
    markers = MarkerSet([">", "</function>"])
    assert markers.find("ab</function>", 0, final=False).marker == "</function>"
    assert markers.find("ab>", 0, final=False).marker == ">"


def test_marker_sets_are_shared():
    assert MarkerSet(["<a>", "<b>"]) is MarkerSet(["<b>", "<a>"])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1, "b": [true, null]}', {"a": 1, "b": [True, None]}),
        ("{'a': 'x', 'b': (1, 2), 'c': False,}", {"a": "x", "b": [1, 2], "c": False}),
        ("{a: 1, b: 'two'}", {"a": 1, "b": "two"}),
        ("{'s': 'it\\'s', 'u': '\\u00e9'}", {"s": "it's", "u": "é"}),
        ("[1.5, -2, 3e2]", [1.5, -2, 300.0]),
    ],
)
def test_loose_values(text, value):
    assert parse_loose_value(text) == value


def test_decode_arguments_prefers_json_and_reports_garbage():
    assert decode_arguments('{"a": "b"}') == {"a": "b"}
    with pytest.raises(LiteralSyntaxError):
        decode_arguments("{not: valid: at all}")
    with pytest.raises(LiteralSyntaxError, match="nesting"):
        decode_arguments("[" * 5000 + "]" * 5000)


def test_python_calls():
    assert parse_python_calls('[f(a=1), g(b="x", c=None)]') == [
        ("f", {"a": 1}),
        ("g", {"b": "x", "c": None}),
    ]
    assert parse_python_calls("print(f(x=[1, {'k': True}]))") == [("f", {"x": [1, {"k": True}]})]
    assert parse_python_calls("brave_search.call(query='q')") == [
        ("brave_search.call", {"query": "q"})
    ]
    assert parse_python_calls("f()\ng(a=2)") == [("f", {}), ("g", {"a": 2})]
    with pytest.raises(LiteralSyntaxError, match="positional"):
        parse_python_calls("f(1)")
