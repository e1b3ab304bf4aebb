"""Reliability regressions: closing markers inside string values, a call's raw text whole and
streamed, linear readers of long strings, and `tooluse parse` printing any text."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import pytest

from tooluse.events import ParseError
from tooluse.formats import collect_events, get_parser
from tooluse.formats.lexer import CodeReader, MarkerSet
from tooluse.formats.literals import parse_loose_value, parse_python_calls

from .helpers import TOOLS, assert_stream_equals_parse, chunks, run_split

TOOLUSE = [sys.executable, "-c", "from tooluse.cli.app import main; main()"]


@pytest.mark.parametrize(
    ("fmt", "text", "value"),
    [
        (
            "gemma_tool_code",
            'Sure.\n```tool_code\nnote(text="a ``` b", n=1)\n```\nDone.',
            "a ``` b",
        ),
        ("gemma_tool_code", "```tool_code\nnote(text='```', n=1)\n```\nDone.", "```"),
        (
            "olmo3",
            '<function_calls>\nnote(text="</function_calls>", n=1)\n</function_calls>\nDone.',
            "</function_calls>",
        ),
        (
            "olmo3",
            "<function_calls>\nnote(text='it\\'s </function_calls>', n=1)\n</function_calls>\nDone.",
            "it's </function_calls>",
        ),
    ],
)
def test_a_closing_marker_inside_a_string_value_does_not_cut_the_call(fmt, text, value):
    result = assert_stream_equals_parse(get_parser(fmt), text, ())
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("note", {"text": value, "n": 1})]
    assert result.text.strip() in ("Done.", "Sure.\n\nDone.")
    assert result.errors == ()


@pytest.mark.parametrize(
    ("fmt", "opener", "closer"),
    [
        ("gemma_tool_code", "```tool_code\n", "\n```"),
        ("olmo3", "<function_calls>\n", "\n</function_calls>"),
    ],
)
def test_a_stray_quote_ends_the_block_at_its_first_marker_and_keeps_later_calls(
    fmt, opener, closer
):
    # the apostrophe never closes: at the end of output the block ends at its first marker
    text = f"{opener}note(text=it's){closer} then {opener}today(){closer} end"
    result = assert_stream_equals_parse(get_parser(fmt), text, ())
    assert [c.name for c in result.tool_calls] == ["today"]
    assert len(result.errors) == 1 and "it's" in result.errors[0].raw
    assert result.text.split() == ["then", "end"]


def test_code_reader_skips_markers_in_strings_and_holds_back_a_split_marker():
    reader = CodeReader("```")
    assert reader.collect('f(a="x``` \\" y")\n``', 0, False) == (17, False)  # "``" held
    text = "``` after"
    assert reader.collect(text, 0, False) == (3, True)
    assert reader.take() == 'f(a="x``` \\" y")\n'


def test_glm_raw_text_of_a_call_is_the_same_whole_and_streamed():
    # no <arg_value> tag: the value follows the key directly
    text = "<tool_call>get_weather\n<arg_key>city</arg_key>Paris</arg_value>\n</tool_call>"
    parser = get_parser("glm45")
    tools = [t for t in TOOLS if t.name == "search"]  # get_weather unknown: an error with raw
    whole = parser.parse(text, tools)
    raws = [e.raw for e in whole.errors]
    assert raws == [text]  # the call's own text, once (it used to repeat what followed the key)
    assert whole.tool_calls[0].arguments == {"city": "Paris"}
    for size in (1, 2, 5):
        streamed = collect_events(run_split(parser, chunks(text, size), tools))
        assert [e.raw for e in streamed.errors] == raws


def test_marker_search_never_copies_the_rest_of_the_text():
    # a short marker that could still grow into a longer one is checked on a bounded slice
    markers = MarkerSet(["<", "<tool_call>"])
    text = "<" + "x" * 1_000_000
    tracemalloc.start()
    for _ in range(100):
        markers.find(text, 0, False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100_000


@pytest.mark.parametrize(
    "read",
    [
        lambda s: parse_loose_value("'" + s.replace("'", "\\'") + "'"),
        lambda s: parse_python_calls("f(a='" + s.replace("'", "\\'") + "')")[0][1]["a"],
        lambda s: parse_loose_value('{"a": "' + s + '", }')["a"],  # JSON with a trailing comma
    ],
)
def test_the_tolerant_reader_reads_long_strings_in_memory_linear_in_their_size(read):
    value = "text with \\n escapes, 'quotes' and ünï " * 25_000  # 1 MB of source
    tracemalloc.start()
    decoded = read(value)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert decoded.startswith("text with \n escapes, 'quotes'")
    assert peak < 12 * len(value) * 2  # a handful of copies (2 bytes per character here)


def test_python_escapes_decode_as_python_does():
    source = r"'\x41\u00e9\U0001F600\101\N{BULLET}\t\\\'\q' "
    assert parse_loose_value(source) == "Aé😀A•\t\\'\\q"


def test_parse_prints_lone_surrogates_as_json_escapes_in_a_real_process():
    text = '<tool_call>{"name": "f", "arguments": {"a": "\\ud800 ok \\u00e9"}}</tool_call>'
    proc = subprocess.run(
        [*TOOLUSE, "parse", "--format", "hermes"],
        input=text.encode(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert out["tool_calls"][0]["arguments"] == {"a": "\ud800 ok é"}
    assert "\\ud800" in proc.stdout.decode() and "é" in proc.stdout.decode()


def test_parse_stream_survives_lone_surrogates_and_bytes_that_are_not_utf8():
    text = b'\xff<tool_call>{"name": "f", "arguments": {"a": "\\udfff"}}</tool_call>'
    proc = subprocess.run(
        [*TOOLUSE, "parse", "--format", "hermes", "--stream", "--chunk-size", "3"],
        input=text,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0] == {"event": "TextDelta", "text": "\ufffd"}
    assert events[-1]["call"]["arguments"] == {"a": "\udfff"}
    assert not any(e["event"] == ParseError.__name__ for e in events)
