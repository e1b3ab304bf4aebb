"""Every built-in format on real-looking outputs: complete text and every split agree."""

from __future__ import annotations

import json

import pytest

from tooluse.events import ArgumentsDelta
from tooluse.formats import available_formats, get_parser

from .helpers import TOOLS, assert_stream_equals_parse, chunks, run_split

W = ("get_weather", {"city": "Paris"})
T = ("today", {})

# (format, model text, expected text, expected reasoning, expected [(name, arguments)], errors)
CASES = [
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Paris"}}', "", "", [W], 0),
    (
        "llama3_json",
        ' {"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "today", "parameters": {}}<|eom_id|>',
        "",
        "",
        [W, T],
        0,
    ),
    (
        "llama3_json",
        'Sure.<|python_tag|>{"name": "today", "parameters": {}}<|eom_id|>',
        "Sure.",
        "",
        [T],
        0,
    ),
    (
        "llama3_json",
        '<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>',
        "",
        "",
        [("brave_search", {"query": "weather in Paris"})],
        1,  # not among TOOLS
    ),
    ("llama3_json", ' {"answer": 42} is the data', ' {"answer": 42} is the data', "", [], 0),
    ("llama3_json", "Hello there", "Hello there", "", [], 0),
    (
        "mistral",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "today", "arguments": {}}]</s>',
        "",
        "",
        [W, T],
        0,
    ),
    (
        "mistral",
        'Text first [TOOL_CALLS] [{"name": "today", "arguments": {}}]',
        "Text first ",
        "",
        [T],
        0,
    ),
    (
        "mistral_v11",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]today[ARGS]{}',
        "",
        "",
        [W, T],
        0,
    ),
    (
        "mistral_v11",
        '[THINK]hmm[/THINK]ok[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris"}</s>',
        "ok",
        "hmm",
        [W],
        0,
    ),
    ("mistral_v11", "[TOOL_CALLS]get weather now[ARGS]{}", "", "", [], 1),
    (
        "deepseek_v3",
        "<think>x</think>Hi<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
        '```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>today\n'
        "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "Hi",
        "x",
        [W, T],
        0,
    ),
    (
        "deepseek_v31",
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>'
        "<｜tool▁call▁begin｜>today<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>done",
        "done",
        "",
        [W, T],
        0,
    ),
    (
        "qwen3_coder",
        "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        "I'll check.\n",
        "",
        [("get_weather", {"city": "Paris", "days": 3})],
        0,
    ),
    (
        "qwen3_coder",
        "<tool_call>\n<function=search>\n<parameter=query>\nline1\n</parameter> inside\nline3\n</parameter>\n"
        '<parameter=filters>\n{"a": [1, 2]}\n</parameter>\n<parameter=tags>\n["x"]\n</parameter>\n</function>\n</tool_call>'
        "<tool_call>\n<function=today>\n</function>\n</tool_call>",
        "",
        "",
        [
            (
                "search",
                {
                    "query": "line1\n</parameter> inside\nline3",
                    "filters": {"a": [1, 2]},
                    "tags": ["x"],
                },
            ),
            T,
        ],
        0,
    ),
    (
        "qwen3_coder",
        "<think>plan</think><tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
        "",
        "plan",
        [("get_weather", {"city": "Par"})],
        1,
    ),
    ("pythonic", '[get_weather(city="Paris"), today()]', "", "", [W, T], 0),
    (
        "pythonic",
        "[search(query='a, b) [c]', filters={'k': None, 'on': True}, tags=[\"x\", 'y'])]",
        "",
        "",
        [
            (
                "search",
                {"query": "a, b) [c]", "filters": {"k": None, "on": True}, "tags": ["x", "y"]},
            )
        ],
        0,
    ),
    ("pythonic", '<|python_start|>[get_weather(city="Paris")]<|python_end|>', "", "", [W], 0),
    ("pythonic", "[1] is a citation, not a call", "[1] is a citation, not a call", "", [], 0),
    ("pythonic", '[get_weather(city="Paris"), tod', "", "", [W], 1),
    (
        "gemma_tool_code",
        'Let me look.\n```tool_code\nprint(get_weather(city="Paris"))\ntoday()\n```\nWait.',
        "Let me look.\n\nWait.",
        "",
        [W, T],
        0,
    ),
    ("gemma_tool_code", "```python\nx=1\n```", "```python\nx=1\n```", "", [], 0),
    (
        "functiongemma",
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>"
        "<start_function_call>call:search{query:<escape>a}<end_function_call>{b<escape>,filters:{n:3,ok:true},tags:[<escape>x<escape>]}<end_function_call>",
        "",
        "",
        [
            W,
            (
                "search",
                {
                    "query": "a}<end_function_call>{b",
                    "filters": {"n": 3, "ok": True},
                    "tags": ["x"],
                },
            ),
        ],
        0,
    ),
    (
        "gemma4",
        '<|channel>thought\nneed weather<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
        "",
        "\nneed weather",
        [W],
        0,
    ),
    (
        "harmony",
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
        "",
        "Need weather.",
        [W],
        0,
    ),
    (
        "harmony",
        "<|channel|>analysis<|message|>Done.<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>",
        "It is sunny.",
        "Done.",
        [],
        0,
    ),
    (
        "harmony",
        "<|start|>assistant to=functions.today<|channel|>commentary json<|message|>{}<|call|>",
        "",
        "",
        [T],
        0,
    ),
]


CASES += [
    (
        "kimi_k2",
        "Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Paris"}<|tool_call_end|><|tool_call_begin|>functions.today:1<|tool_call_argument_begin|>{}'
        "<|tool_call_end|><|tool_calls_section_end|>",
        "Sure.",
        "",
        [W, T],
        0,
    ),
    (
        "seed_oss",
        "<seed:think>hm</seed:think><seed:tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
        "</parameter>\n</function>\n</seed:tool_call>",
        "",
        "hm",
        [W],
        0,
    ),
    (
        "minimax_m2",
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        '<parameter name="days">2</parameter>\n</invoke>\n<invoke name="today">\n</invoke>\n</minimax:tool_call>',
        "",
        "",
        [("get_weather", {"city": "Paris", "days": 2}), T],
        0,
    ),
    (
        "lfm2",
        'Ok <|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|> done',
        "Ok  done",
        "",
        [W],
        0,
    ),
    (
        "lfm2",
        '[get_weather(city="Paris")] is not wrapped',
        '[get_weather(city="Paris")] is not wrapped',
        "",
        [],
        0,
    ),
    (
        "olmo3",
        '<function_calls>\nget_weather(city="Paris")\ntoday()\n</function_calls>',
        "",
        "",
        [W, T],
        0,
    ),
    (
        "granite",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "",
        "",
        [W],
        0,
    ),
    (
        "jamba",
        'x<tool_calls>[{"name": "today", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>y',
        "xy",
        "",
        [T, W],
        0,
    ),
    (
        "phi4_mini",
        'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "",
        "",
        [W],
        0,
    ),
    ("phi4_mini", "import functools in Python", "import functools in Python", "", [], 0),
    ("nemotron", '<TOOLCALL>[{"name": "today", "arguments": {}}]</TOOLCALL>', "", "", [T], 0),
    (
        "glm45",
        "<think>go</think>Checking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call><tool_call>today</tool_call>",
        "Checking.\n",
        "go",
        [("get_weather", {"city": "Paris", "days": 3}), T],
        0,
    ),
    (
        "glm45",
        "<tool_call>search<arg_key>query</arg_key><arg_value>a </arg_value> b</arg_value>"
        '<arg_key>filters</arg_key><arg_value>{"x": 1}</arg_value></tool_call>',
        "",
        "",
        [("search", {"query": "a </arg_value> b", "filters": {"x": 1}})],
        0,
    ),
    ("glm45", "a <tool_call> tag in prose", "a <tool_call> tag in prose", "", [], 1),
    (
        "function_tag",
        'Sure. <function=get_weather>{"city": "Paris"}</function><function=today>{}</function>',
        "Sure. ",
        "",
        [W, T],
        0,
    ),
    ("function_tag", "<function=bad name> is prose", "<function=bad name> is prose", "", [], 0),
    ("function_tag", "<function=today>oops</function>", "", "", [("today", {})], 1),
]


@pytest.mark.parametrize(("fmt", "text", "content", "reasoning", "calls", "errors"), CASES)
def test_format_output(fmt, text, content, reasoning, calls, errors):
    parser = get_parser(fmt)
    result = assert_stream_equals_parse(parser, text)
    assert result.text == content
    assert result.reasoning == reasoning
    assert [(c.name, c.arguments) for c in result.tool_calls] == calls
    assert len(result.errors) == errors, result.errors


def test_every_registered_format_has_cases():
    # formats added later have their cases there
    from .test_formats_more_families import NEW_FORMATS

    assert {case[0] for case in CASES} | {"hermes"} | set(NEW_FORMATS) == set(available_formats())


@pytest.mark.parametrize("fmt", sorted(set(available_formats())))
def test_format_tools_names_every_tool(fmt):
    prompt = get_parser(fmt).format_tools(TOOLS)
    for tool in TOOLS:
        assert tool.name in prompt


def test_qwen3_coder_string_values_stream_before_the_parameter_closes():
    parser = get_parser("qwen3_coder")
    head = "<tool_call>\n<function=search>\n<parameter=query>\n" + "word " * 20
    stream = parser.stream(TOOLS)
    events = []
    for piece in chunks(head, 5):
        events += stream.feed(piece)
    streamed = "".join(e.text for e in events if isinstance(e, ArgumentsDelta))
    assert streamed.startswith('{"query": "word word')
    events += stream.feed(
        "\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>"
    )
    events += stream.close()
    args = "".join(e.text for e in events if isinstance(e, ArgumentsDelta))
    assert json.loads(args) == {"query": ("word " * 20).rstrip("\n"), "days": 2}


def test_qwen3_coder_types_follow_the_schema():
    parser = get_parser("qwen3_coder")
    text = (
        "<tool_call><function=get_weather><parameter=city>\n123\n</parameter>"
        "<parameter=days>\n4\n</parameter><parameter=metric>\nfalse\n</parameter></function></tool_call>"
    )
    call = parser.parse(text, TOOLS).tool_calls[0]
    assert call.arguments == {"city": "123", "days": 4, "metric": False}


def test_harmony_arguments_stream_as_raw_json():
    text = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 2}<|call|>'
    events = run_split(get_parser("harmony"), chunks(text, 3))
    deltas = [e.text for e in events if isinstance(e, ArgumentsDelta)]
    assert len(deltas) > 3
    assert json.loads("".join(deltas)) == {"city": "Paris", "days": 2}


def test_pythonic_calls_are_emitted_as_each_closes():
    parser = get_parser("pythonic")
    stream = parser.stream(TOOLS)
    events = stream.feed('[get_weather(city="Paris"), to')
    assert [e.call.name for e in events if hasattr(e, "call")] == ["get_weather"]
    events = stream.feed("day()]") + stream.close()
    assert [e.call.name for e in events if hasattr(e, "call")] == ["today"]


def test_qwen3_coder_literal_tag_in_prose_stays_text():
    text = "Use a <tool_call> block for calls, and <tool_call>\n<function=today>\n</function>\n</tool_call>"
    result = assert_stream_equals_parse(get_parser("qwen3_coder"), text)
    assert result.text == "Use a <tool_call> block for calls, and "
    assert [c.name for c in result.tool_calls] == ["today"]
    assert len(result.errors) == 1


def test_kimi_k2_call_id_is_the_header():
    result = get_parser("kimi_k2").parse(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.today:0<|tool_call_argument_begin|>{}"
        "<|tool_call_end|><|tool_calls_section_end|>",
        TOOLS,
    )
    assert result.tool_calls[0].id == "functions.today:0"
    assert result.tool_calls[0].name == "today"


def test_mistral_v11_keeps_the_call_id():
    result = get_parser("mistral_v11").parse("[TOOL_CALLS]today[CALL_ID]a1b2c3d4e[ARGS]{}", TOOLS)
    assert result.tool_calls[0].id == "a1b2c3d4e"


@pytest.mark.parametrize("fmt", sorted(set(available_formats())))
def test_prefilled_reasoning_in_every_format_with_reasoning(fmt):
    parser = get_parser(fmt, reasoning_started=True)
    close = parser.machine.think_close
    result = assert_stream_equals_parse(parser, "plan it" + (close or "") + "answer")
    if close is None:
        assert result.text == "plan itanswer" and result.reasoning == ""
    else:
        assert (result.reasoning, result.text) == ("plan it", "answer")
