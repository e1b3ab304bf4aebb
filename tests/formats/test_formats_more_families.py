"""Formats added for more model families: real outputs, stream == whole, every truncation.

Each sample is a model output as the family writes it; the comment names where the shape comes
from (a model card, a chat template, or a peer project's parser test). Every sample is parsed
whole and at many splits (the results must agree), and every prefix of it parses without an
exception, streams like it parses, and reports a cut-off call rather than losing it silently.
"""

from __future__ import annotations

import pytest

from tooluse.events import ArgumentsDelta
from tooluse.formats import collect_events, get_parser
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

from .helpers import TOOLS, assert_stream_equals_parse, check_events, chunks, run_split, summary

#: Formats this module covers (the registry-wide checks in test_formats/test_properties use it).
NEW_FORMATS = (
    "deepseek_v32",
    "deepseek_v4",
    "minimax_m1",
    "minimax_m3",
    "command_r7b",
    "xlam",
    "functionary_v3_2",
    "internlm2",
    "step3",
    "granite_20b_fc",
    "gigachat3",
    "ernie45",
    "hunyuan_a13b",
    "longcat",
    "apertus",
    "kimi_k3",
    "minicpm5",
    "json_array",
)

CURRENT_WEATHER = ToolDefinition(
    name="get_current_weather",
    description="Weather of a city.",
    parameters=(
        ToolParameter("city", ToolParameterType.STRING),
        ToolParameter("state", ToolParameterType.STRING, required=False),
        ToolParameter("unit", ToolParameterType.STRING, required=False),
    ),
)
PEER_TOOLS = (*TOOLS, CURRENT_WEATHER)
DALLAS = ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})
ORLANDO = ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"})
PARIS = ("get_weather", {"city": "Paris"})

# (format, output, content, reasoning, [(name, arguments)], number of errors)
CASES = [
    # DeepSeek V3.2 DSML: vLLM vllm/tool_parsers/deepseekv32_tool_parser.py and SGLang's
    # TestDeepSeekV32Detector (string="true" text values, string="false" JSON values).
    (
        "deepseek_v32",
        'Some text <｜DSML｜function_calls> <｜DSML｜invoke name="get_weather"> '
        '<｜DSML｜parameter name="city" string="true">NYC</｜DSML｜parameter> '
        '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter> '
        "</｜DSML｜invoke> </｜DSML｜function_calls>",
        "Some text ",
        "",
        [("get_weather", {"city": "NYC", "days": 3})],
        0,
    ),
    (
        "deepseek_v32",
        "<think>Need two lookups.</think><｜DSML｜function_calls>\n"
        '<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n"
        '<｜DSML｜invoke name="today">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
        "",
        "Need two lookups.",
        [PARIS, ("today", {})],
        0,
    ),
    # SGLang test_function_call_parser.py TestDeepSeekV32Detector: arguments as one JSON object
    # inside the invoke, and an invoke without parameters.
    (
        "deepseek_v32",
        "I'll help.\n\n        <｜DSML｜function_calls>\n"
        '            <｜DSML｜invoke name="get_weather">\n'
        '            {\n                "city": "San Francisco", "days": 10\n            }\n'
        "        </｜DSML｜invoke>\n"
        '<｜DSML｜invoke name="today">\n\n</｜DSML｜invoke>\n        </｜DSML｜function_calls>\n',
        "I'll help.\n\n        \n",
        "",
        [("get_weather", {"city": "San Francisco", "days": 10}), ("today", {})],
        0,
    ),
    # DeepSeek V4: the same invokes in a <｜DSML｜tool_calls> block (DeepSeek V4 encoding; vLLM
    # vllm/tool_parsers/deepseekv4_tool_parser.py).
    (
        "deepseek_v4",
        "I will run the command.\n\n<｜DSML｜tool_calls>\n"
        '<｜DSML｜invoke name="search">\n'
        '<｜DSML｜parameter name="query" string="true">git status</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="filters" string="false">{"timeout": 30000}</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
        "I will run the command.\n\n",
        "",
        [("search", {"query": "git status", "filters": {"timeout": 30000}})],
        0,
    ),
    # MiniMax-M1: MiniMax-AI/MiniMax-M1 docs/function_call_guide.md (JSON lines in <tool_calls>).
    (
        "minimax_m1",
        "<think>The user wants the weather.</think>\n<tool_calls>\n"
        '{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", '
        '"unit": "fahrenheit"}}\n'
        '{"name": "get_current_weather", "arguments": {"city": "Orlando", "state": "FL", '
        '"unit": "fahrenheit"}}\n</tool_calls>',
        "\n",
        "The user wants the weather.",
        [DALLAS, ORLANDO],
        0,
    ),
    # MiniMax-M3: namespaced XML, one tag per argument (the model's chat_template to_xml macro,
    # as described by mlx-lm's minimax_m3 parser and vLLM's minimax_m3 tool parser).
    (
        "minimax_m3",
        "<mm:think>Look it up.</mm:think>"
        'Checking.]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="search">\n'
        "]<]minimax[>[<query>Boston]<]minimax[>[</query>\n"
        "]<]minimax[>[<tags>]<]minimax[>[<item>news]<]minimax[>[</item>"
        "]<]minimax[>[<item>sport]<]minimax[>[</item>]<]minimax[>[</tags>\n"
        ']<]minimax[>[</invoke>\n]<]minimax[>[<invoke name="today">]<]minimax[>[</invoke>\n'
        "]<]minimax[>[</tool_call>",
        "Checking.",
        "Look it up.",
        [("search", {"query": "Boston", "tags": ["news", "sport"]}), ("today", {})],
        0,
    ),
    # Command R7B: llama.cpp tests/test-chat.cpp (COMMAND_R7B thinking + action list).
    (
        "command_r7b",
        "<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_ACTION|>[\n"
        '    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n'
        "]<|END_ACTION|>",
        "",
        "I'm\nthinking",
        [PARIS],
        0,
    ),
    (
        "command_r7b",
        "<|START_RESPONSE|>Hello, world!\nWhat's up?<|END_RESPONSE|>",
        "Hello, world!\nWhat's up?",
        "",
        [],
        0,
    ),
    # xLAM: vLLM tests/tool_parsers/test_xlam_tool_parser.py (bare list, thinking, fence).
    (
        "xlam",
        '[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", '
        '"unit": "fahrenheit"}}, {"name": "get_current_weather", "arguments": {"city": '
        '"Orlando", "state": "FL", "unit": "fahrenheit"}}]',
        "",
        "",
        [DALLAS, ORLANDO],
        0,
    ),
    (
        "xlam",
        "<think>I'll help you with that.</think>"
        '[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", '
        '"unit": "fahrenheit"}}]',
        "",
        "I'll help you with that.",
        [DALLAS],
        0,
    ),
    (
        "xlam",
        "I'll check the weather for you.\n```json\n"
        '[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", '
        '"unit": "fahrenheit"}}]\n```',
        "I'll check the weather for you.\n",
        "",
        [DALLAS],
        0,
    ),
    ("xlam", "This is a test response without any tool calls", None, "", [], 0),
    # Functionary v3.2: llama.cpp tests/test-chat.cpp (functionary-medium-v3.2 template).
    ("functionary_v3_2", 'get_weather\n{"city": "Paris"}', "", "", [PARIS], 0),
    ("functionary_v3_2", "all\nHello, world!\nWhat's up?", "Hello, world!\nWhat's up?", "", [], 0),
    (
        "functionary_v3_2",
        'all\nLet me check.\n>>>get_weather\n{"city": "Paris"}\n>>>today\n{}',
        "Let me check.\n",
        "",
        [PARIS, ("today", {})],
        0,
    ),
    (
        "functionary_v3_2",
        ">>>python\nprint('hi')",
        "",
        "",
        [("python", {"code": "print('hi')"})],
        1,
    ),
    # InternLM2: vLLM vllm/tool_parsers/internlm2_tool_parser.py (plugin action).
    (
        "internlm2",
        "Let me look it up.<|action_start|><|plugin|>\n"
        '{"name": "get_current_weather", "parameters": {"city": "Dallas", "state": "TX", '
        '"unit": "fahrenheit"}}<|action_end|>',
        "Let me look it up.",
        "",
        [DALLAS],
        0,
    ),
    # Step-3: vLLM vllm/tool_parsers/step3_tool_parser.py (steptml invokes in call tokens).
    (
        "step3",
        "Sure.<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris'
        '</steptml:parameter><steptml:parameter name="days">2</steptml:parameter>'
        "</steptml:invoke><｜tool_call_end｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="today"></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>',
        "Sure.",
        "",
        [("get_weather", {"city": "Paris", "days": 2}), ("today", {})],
        0,
    ),
    # Granite-20B-FunctionCalling: vLLM granite_20b_fc_tool_parser.py and its example template.
    (
        "granite_20b_fc",
        '<function_call> {"name": "get_current_weather", "arguments": {"city": "Dallas", '
        '"state": "TX", "unit": "fahrenheit"}}\n<function_call> {"name": '
        '"get_current_weather", "arguments": {"city": "Orlando", "state": "FL", "unit": '
        '"fahrenheit"}}',
        "\n",
        "",
        [DALLAS, ORLANDO],
        0,
    ),
    # GigaChat3: vLLM vllm/tool_parsers/gigachat3_tool_parser.py (both call spellings, </s>).
    (
        "gigachat3",
        "Checking.<|message_sep|>\n\nfunction call<|role_sep|>\n"
        '{"name": "get_weather", "arguments": {"city": "Moscow", "days": 2}}</s>',
        "Checking.",
        "",
        [("get_weather", {"city": "Moscow", "days": 2})],
        0,
    ),
    (
        "gigachat3",
        '<|function_call|>{"name": "today", "arguments": {}}',
        "",
        "",
        [("today", {})],
        0,
    ),
    # SGLang test/registered/function_call test_gigachat3_detector.py: content and EOS, nested.
    (
        "gigachat3",
        "I'll remember that.<|message_sep|>\n\nfunction call<|role_sep|>\n"
        '{"name": "search", "arguments": {"query": "create", "filters": {"short_answers": '
        'true, "hate_emojis": true}}}</s>',
        "I'll remember that.",
        "",
        [("search", {"query": "create", "filters": {"short_answers": True, "hate_emojis": True}})],
        0,
    ),
    ("gigachat3", "How can I help you today?", None, "", [], 0),
    # Ernie 4.5: vLLM tests/tool_parsers/test_ernie45_moe_tool_parser.py.
    (
        "ernie45",
        "<think>Check the weather.</think>\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n',
        "\n\n\n",
        "Check the weather.",
        [PARIS],
        0,
    ),
    # Hunyuan-A13B: vLLM tests/tool_parsers/test_hunyuan_a13b_tool_parser.py.
    (
        "hunyuan_a13b",
        '<think>weather</think>\n<answer>\n<tool_calls>[{"name": "get_weather", '
        '"arguments": {"city": "Paris", "metric": true}}]</tool_calls>\n</answer>',
        "\n\n",
        "weather",
        [("get_weather", {"city": "Paris", "metric": True})],
        0,
    ),
    # LongCat-Flash: vLLM vllm/tool_parsers/longcat_tool_parser.py.
    (
        "longcat",
        'OK.<longcat_tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</longcat_tool_call>",
        "OK.",
        "",
        [PARIS],
        0,
    ),
    # Apertus: vLLM vllm/tool_parsers/apertus_tool_parser.py docstring example.
    (
        "apertus",
        'I will check. <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"today": {}}]'
        "<|tools_suffix|>",
        "I will check. ",
        "",
        [PARIS, ("today", {})],
        0,
    ),
    # Kimi K3 XTML: vLLM vllm/tool_parsers/kimi_k3_tool_parser.py module docstring.
    (
        "kimi_k3",
        "<|open|>think<|sep|>Run it.<|close|>think<|sep|>"
        "<|open|>response<|sep|>Running it.<|close|>response<|sep|><|open|>tools<|sep|>"
        '<|open|>call tool="search" index="1"<|sep|>'
        '<|open|>argument key="query" type="string"<|sep|>print(1)<|close|>argument<|sep|>'
        '<|open|>argument key="filters" type="object"<|sep|>{"a":1}<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
        "Running it.",
        "Run it.",
        [("search", {"query": "print(1)", "filters": {"a": 1}})],
        0,
    ),
    # MiniCPM5: vLLM vllm/tool_parsers/minicpm5xml_tool_parser.py (function/param tags, CDATA).
    (
        "minicpm5",
        '<think>hm</think>Sure. <function name="get_weather"><param name="city">Paris</param>'
        '<param name="days"><![CDATA[3]]></param></function>',
        "Sure. ",
        "hm",
        [("get_weather", {"city": "Paris", "days": 3})],
        0,
    ),
    # SGLang's JSON array for forced tool choice: test_function_call_parser.py TestJsonArrayParser.
    (
        "json_array",
        '[{"name": "get_weather", "parameters": {"city": "Tokyo"}}, '
        '{"name": "search", "parameters": {"query": "x, {y}"}}]',
        "",
        "",
        [("get_weather", {"city": "Tokyo"}), ("search", {"query": "x, {y}"})],
        0,
    ),
    # ... three calls, leading whitespace, a brace inside a string (the same test class).
    (
        "json_array",
        ' \n\n [{"name": "get_weather", "parameters": {"city": "has } inside"}},'
        '{"name": "search", "parameters": {"query": "restaurants"}},'
        '{"name": "get_weather", "parameters": {"city": "Paris"}}]',
        "",
        "",
        [("get_weather", {"city": "has } inside"}), ("search", {"query": "restaurants"}), PARIS],
        0,
    ),
    # ... a call complete, the list cut off after its comma: the call is kept, the cut reported.
    (
        "json_array",
        '[{"name": "get_weather", "parameters": {"city": "Tokyo"}}, ',
        "",
        "",
        [("get_weather", {"city": "Tokyo"})],
        1,
    ),
]


@pytest.mark.parametrize(("fmt", "text", "content", "reasoning", "calls", "errors"), CASES)
def test_real_outputs(fmt, text, content, reasoning, calls, errors):
    result = assert_stream_equals_parse(get_parser(fmt), text, PEER_TOOLS)
    assert result.text == (text if content is None else content)
    assert result.reasoning == reasoning
    assert [(c.name, c.arguments) for c in result.tool_calls] == calls
    assert len(result.errors) == errors, result.errors


def test_every_new_format_has_real_outputs_and_is_registered():
    assert {case[0] for case in CASES} == set(NEW_FORMATS)
    for fmt in NEW_FORMATS:
        assert get_parser(fmt).format_tools(TOOLS)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_every_truncation_parses_and_streams_like_parse(fmt):
    """Cut at every character (what max_tokens produces): no exception, no hang, stream ==
    whole, and a call that had started is returned or reported."""
    parser = get_parser(fmt)
    for _, text, *_ in (case for case in CASES if case[0] == fmt):
        for end in range(len(text) + 1):
            prefix = text[:end]
            whole = parser.parse(prefix, PEER_TOOLS)
            events = run_split(parser, chunks(prefix, 3), PEER_TOOLS)
            check_events(events)
            assert summary(collect_events(events)) == summary(whole), (fmt, prefix)


@pytest.mark.parametrize(
    ("fmt", "cut"),
    [
        (
            "deepseek_v32",
            '<｜DSML｜function_calls><｜DSML｜invoke name="get_weather"><｜DSML｜parameter name="ci',
        ),
        ("minimax_m1", '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Par'),
        ("command_r7b", '<|START_ACTION|>[{"tool_name": "get_weather", "parameters": {"ci'),
        ("xlam", '[{"name": "get_weather", "arguments": {"city": "Pa'),
        ("functionary_v3_2", 'get_weather\n{"city": "Pa'),
        ("internlm2", '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"c'),
        (
            "step3",
            '<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather"><steptml:parameter name="city">Pa',
        ),
        ("granite_20b_fc", '<function_call> {"name": "get_weather", "arguments": {"city'),
        ("gigachat3", '<|function_call|>{"name": "get_weather", "arguments": {"ci'),
        (
            "kimi_k3",
            '<|open|>tools<|sep|><|open|>call tool="get_weather"<|sep|><|open|>argument key="city"',
        ),
        (
            "minimax_m3",
            ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Par',
        ),
        ("minicpm5", '<function name="get_weather"><param name="city">Par'),
        ("apertus", '<|tools_prefix|>[{"get_weather": {"city": "Pa'),
        ("json_array", '[{"name": "get_weather", "parameters": {"city": "To'),
    ],
)
def test_a_cut_off_call_is_reported(fmt, cut):
    result = get_parser(fmt).parse(cut, TOOLS)
    assert result.errors, result
    assert all(call.name == "get_weather" for call in result.tool_calls)


def test_unknown_tools_are_flagged_in_new_formats():
    outputs = {
        "deepseek_v32": '<｜DSML｜function_calls><｜DSML｜invoke name="nope"></｜DSML｜invoke>'
        "</｜DSML｜function_calls>",
        "minimax_m1": '<tool_calls>\n{"name": "nope", "arguments": {}}\n</tool_calls>',
        "command_r7b": '<|START_ACTION|>[{"tool_name": "nope", "parameters": {}}]<|END_ACTION|>',
        "kimi_k3": '<|open|>tools<|sep|><|open|>call tool="nope"<|sep|><|close|>call<|sep|>'
        "<|close|>tools<|sep|>",
        "minimax_m3": ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="nope">'
        "]<]minimax[>[</invoke>]<]minimax[>[</tool_call>",
        "functionary_v3_2": ">>>nope\n{}",
    }
    for fmt, text in outputs.items():
        result = get_parser(fmt).parse(text, TOOLS)
        assert [c.name for c in result.tool_calls] == ["nope"], fmt
        assert any("unknown tool 'nope'" in e.message for e in result.errors), fmt


def test_minimax_alias_means_m1_like_vllm():
    assert get_parser("minimax").name == "minimax_m1"
    assert get_parser("minimax_m2").name == "minimax_m2"


def test_dsml_string_values_stream_before_the_parameter_closes():
    stream = get_parser("deepseek_v32").stream(TOOLS)
    head = (
        '<｜DSML｜function_calls><｜DSML｜invoke name="search">'
        '<｜DSML｜parameter name="query" string="true">' + "word " * 10
    )
    events = []
    for piece in chunks(head, 4):
        events += stream.feed(piece)
    sent = "".join(e.text for e in events if isinstance(e, ArgumentsDelta))
    assert sent.startswith('{"query": "word word')


def test_dsml_string_attribute_wins_over_the_schema():
    text = (
        '<｜DSML｜function_calls><｜DSML｜invoke name="get_weather">'
        '<｜DSML｜parameter name="city" string="false">123</｜DSML｜parameter>'
        '<｜DSML｜parameter name="days" string="true">4</｜DSML｜parameter>'
        "</｜DSML｜invoke></｜DSML｜function_calls>"
    )
    call = get_parser("deepseek_v32").parse(text, TOOLS).tool_calls[0]
    assert call.arguments == {"city": 123, "days": "4"}
