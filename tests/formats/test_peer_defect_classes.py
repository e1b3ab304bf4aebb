"""Regression tests, one group per defect class found by running other projects' parser tests
against tooluse's text formats (Harmony headers, calls before reasoning closes, non-finite
numbers, lost or corrupted calls, leaked text, lenient Hermes, special-token matching).

Every text here is written for this file; each case is checked whole and at many splits.
"""

from __future__ import annotations

import json

import pytest
from tests.formats.helpers import TOOLS, assert_stream_equals_parse, run_split

from tooluse.events import ArgumentsDelta, ToolCallFinished
from tooluse.formats import (
    collect_events,
    get_parser,
    parser_for_template,
    reasoning_started_from_prompt,
    reasoning_started_from_template,
)
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType


def calls(result):  # type: ignore[no-untyped-def]
    return [(c.name, c.arguments) for c in result.tool_calls]


# -- Harmony: recipient in the role header; recipients that are roles ---------------------------


@pytest.mark.parametrize(
    "text",
    [
        ' to=functions.search<|channel|>commentary json<|message|>{"query": "rust"}<|call|>',
        ' to=functions.search <|channel|>commentary <|constrain|>json<|message|>{"query": "rust"}',
        '\nto=functions.search<|channel|>analysis<|message|>{"query": "rust"}<|call|>',
    ],
)
def test_harmony_first_header_with_recipient_in_role_part(text: str) -> None:
    result = assert_stream_equals_parse(get_parser("harmony"), text)
    assert calls(result) == [("search", {"query": "rust"})]
    assert result.text.strip() == ""
    assert result.reasoning == ""


@pytest.mark.parametrize(
    ("text", "reasoning", "content"),
    [
        (
            "<|channel|>commentary to=assistant<|channel|>analysis<|message|>Let me see"
            "<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.",
            "Let me see",
            "It is sunny.",
        ),
        (
            "<|channel|>analysis<|message|>Hmm<|end|><|start|>assistant<|channel|>commentary "
            "to=user<|channel|>final<|message|>Done.",
            "Hmm",
            "Done.",
        ),
    ],
)
def test_harmony_role_recipient_is_not_a_call(text: str, reasoning: str, content: str) -> None:
    result = assert_stream_equals_parse(get_parser("harmony"), text)
    assert result.tool_calls == ()
    assert result.reasoning == reasoning
    assert result.text == content


def test_harmony_text_not_starting_with_recipient_is_unchanged() -> None:
    result = assert_stream_equals_parse(
        get_parser("harmony"), "<|channel|>final<|message|>to be or not"
    )
    assert result.text == "to be or not"


# -- calls made before reasoning is closed ------------------------------------------------------

QWEN_CALL = "<tool_call>\n<function=search>\n<parameter=query>\nrust\n</parameter>\n</function>\n</tool_call>"


@pytest.mark.parametrize(
    ("fmt", "text", "reasoning"),
    [
        ("qwen3_coder", QWEN_CALL, ""),
        ("qwen3_coder", "I should search.\n" + QWEN_CALL, "I should search.\n"),
        (
            "hermes",
            'Look it up.\n<tool_call>\n{"name": "search", "arguments": '
            '{"query": "rust"}}\n</tool_call>',
            "Look it up.\n",
        ),
        (
            "glm45",
            "First the search.\n<tool_call>search\n<arg_key>query</arg_key>\n"
            "<arg_value>rust</arg_value>\n</tool_call>",
            "First the search.\n",
        ),
    ],
)
def test_call_ends_reasoning_opened_by_the_prompt(fmt: str, text: str, reasoning: str) -> None:
    result = assert_stream_equals_parse(get_parser(fmt, reasoning_started=True), text)
    assert calls(result) == [("search", {"query": "rust"})]
    assert result.reasoning == reasoning


def test_opener_quoted_mid_line_stays_reasoning() -> None:
    text = "The format is <tool_call>{...}</tool_call> as usual.</think>Answer."
    result = assert_stream_equals_parse(get_parser("hermes", reasoning_started=True), text)
    assert result.tool_calls == ()
    assert result.reasoning == "The format is <tool_call>{...}</tool_call> as usual."
    assert result.text == "Answer."


def test_closed_reasoning_quoting_a_call_is_not_read() -> None:
    # reasoning the output opens itself (not the prompt) may quote whole calls
    text = "<think>\nI could write\n" + QWEN_CALL + "\nbut no.\n</think>\nNo call needed."
    result = assert_stream_equals_parse(get_parser("qwen3_coder"), text)
    assert result.tool_calls == ()
    assert "<function=search>" in result.reasoning
    assert result.text.strip() == "No call needed."


@pytest.mark.parametrize("section", [True, False])
def test_kimi_calls_inside_think(section: bool) -> None:
    call = '<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{"query": "rust"}'
    body = call + "<|tool_call_end|>"
    if section:
        body = "<|tool_calls_section_begin|>" + body + "<|tool_calls_section_end|>"
    result = assert_stream_equals_parse(get_parser("kimi_k2"), "<think>Need data" + body)
    assert calls(result) == [("search", {"query": "rust"})]
    assert result.reasoning == "Need data"


QWEN35_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}"
)


def test_reasoning_started_read_from_the_template() -> None:
    assert reasoning_started_from_template(QWEN35_TEMPLATE)
    assert not reasoning_started_from_template(QWEN35_TEMPLATE, enable_thinking=False)
    plain = "{% for m in messages %}{{ m.content }}{% endfor %}<|im_start|>assistant\n"
    assert not reasoning_started_from_template(plain)
    assert reasoning_started_from_prompt("<|im_start|>assistant\n<seed:think>  \n")
    assert not reasoning_started_from_prompt("<|im_start|>assistant\n")


def test_parser_for_template_starts_in_reasoning() -> None:
    parser = parser_for_template(QWEN35_TEMPLATE, "qwen3_coder")
    result = parser.parse("Plan.\n</think>\nDone.")
    assert result.reasoning == "Plan.\n"
    assert result.text.strip() == "Done."
    off = parser_for_template(
        QWEN35_TEMPLATE, "qwen3_coder", template_variables={"enable_thinking": False}
    )
    assert off.parse("Plain answer.").text == "Plain answer."
    with pytest.raises(ValueError, match="no tool-call format"):
        parser_for_template("{{ messages[0].content }}")


# -- argument text is always valid JSON ---------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("pythonic", "[search(query='a', limit=2e400), today()]"),
        ("olmo3", "<function_calls>search(query='a', limit=-1e500)\ntoday()</function_calls>"),
        (
            "hermes",
            '<tool_call>{"name": "search", "arguments": {"limit": 1e999}}</tool_call>'
            '<tool_call>{"name": "today", "arguments": {}}</tool_call>',
        ),
        (
            "hermes",
            '<tool_call>{"name": "search", "arguments": {"limit": NaN}}</tool_call>'
            '<tool_call>{"name": "today", "arguments": {}}</tool_call>',
        ),
    ],
)
def test_non_finite_number_is_an_argument_error(fmt: str, text: str) -> None:
    result = assert_stream_equals_parse(get_parser(fmt), text)
    assert [c.name for c in result.tool_calls] == ["search", "today"]
    bad = result.tool_calls[0]
    assert bad.arguments == {} and bad.raw_arguments
    assert any(e.index == 0 for e in result.errors)
    for call in result.tool_calls[1:]:
        json.loads(call.arguments_json(), parse_constant=_no_constant)


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} in argument JSON")


# -- lost or corrupted calls ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '[{"name": "search", "arguments": {"query": "rust"}}]',
        '{"name": "search", "parameters": {"query": "rust"}}',
    ],
)
def test_lfm2_json_calls_inside_markers(body: str) -> None:
    text = "Sure.<|tool_call_start|>" + body + "<|tool_call_end|>"
    result = assert_stream_equals_parse(get_parser("lfm2"), text)
    assert calls(result) == [("search", {"query": "rust"})]
    assert result.text == "Sure."


def test_qwen3_coder_missing_parameter_close_does_not_swallow_the_next() -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    )
    result = assert_stream_equals_parse(get_parser("qwen3_coder"), text)
    assert calls(result) == [("get_weather", {"city": "Oslo", "days": 3})]


def test_qwen3_coder_parameter_tag_without_valid_name_is_value_text() -> None:
    text = (
        "<tool_call>\n<function=search>\n<parameter=query>\nuse <parameter=a b> here\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    result = assert_stream_equals_parse(get_parser("qwen3_coder"), text)
    assert calls(result) == [("search", {"query": "use <parameter=a b> here"})]


def test_olmo3_bad_line_keeps_its_siblings() -> None:
    text = "<function_calls>search(query=f'x')\ntoday()</function_calls>"
    result = assert_stream_equals_parse(get_parser("olmo3"), text)
    assert [c.name for c in result.tool_calls] == ["search", "today"]
    assert result.tool_calls[0].raw_arguments == "query=f'x'"
    assert result.tool_calls[1].arguments == {}
    assert [e.index for e in result.errors] == [0]


@pytest.mark.parametrize("sep", ["\n", "\n\n", " ", ";\n"])
def test_llama3_calls_separated_by_line_breaks(sep: str) -> None:
    text = (
        '{"name": "today", "parameters": {}}'
        + sep
        + '{"name": "search", "parameters": {"query": "x"}}'
    )
    result = assert_stream_equals_parse(get_parser("llama3_json"), text)
    assert calls(result) == [("today", {}), ("search", {"query": "x"})]


def test_llama3_call_after_prose() -> None:
    text = 'Checking now: {"name": "search", "parameters": {"query": "x"}} and done.'
    result = assert_stream_equals_parse(get_parser("llama3_json"), text)
    assert calls(result) == [("search", {"query": "x"})]
    assert result.text == "Checking now:  and done."


@pytest.mark.parametrize(
    "text",
    [
        "{ starts a block in C, and } ends it.",
        "{curly} braces {are} fine",
        'Sets look like {"a", "b"} in Python.',
        "A dict: {'k': 1}",
    ],
)
def test_llama3_plain_answer_with_braces_stays_content(text: str) -> None:
    result = assert_stream_equals_parse(get_parser("llama3_json"), text)
    assert result.tool_calls == ()
    assert result.text == text


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ('[TOOL_CALLS]search{"query": "x"}', None),
        ('[TOOL_CALLS]search{"query": "x"}[TOOL_CALLS]today{}', None),
        ('[TOOL_CALLS]search[CALL_ID]a1b2c3d4e[ARGS]{"query": "x"}', ["a1b2c3d4e"]),
    ],
)
@pytest.mark.parametrize("fmt", ["mistral", "mistral_v11"])
def test_mistral_v11_layout_with_or_without_args_marker(
    fmt: str, text: str, ids: list[str] | None
) -> None:
    result = assert_stream_equals_parse(get_parser(fmt), text)
    assert result.tool_calls[0].name == "search"
    assert result.tool_calls[0].arguments == {"query": "x"}
    if ids is not None:
        assert [c.id for c in result.tool_calls] == ids
    assert result.errors == ()


def test_mistral_json_layout_keeps_the_models_ids() -> None:
    text = (
        '[TOOL_CALLS][{"name": "search", "arguments": {"query": "x"}, "id": "Zz9Yy8Xx7"}, '
        '{"name": "today", "arguments": {}, "id": "Aa1Bb2Cc3"}]'
    )
    result = assert_stream_equals_parse(get_parser("mistral"), text)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("Zz9Yy8Xx7", "search", {"query": "x"}),
        ("Aa1Bb2Cc3", "today", {}),
    ]
    # the v11 parser reads only its own layout, so a template's rendered calls tell them apart
    assert get_parser("mistral_v11").parse(text, TOOLS).tool_calls == ()


def test_pythonic_calls_after_prose_and_brackets_that_are_prose() -> None:
    parser = get_parser("pythonic")
    result = assert_stream_equals_parse(parser, "On it: [search(query='x')] then [today()]")
    assert calls(result) == [("search", {"query": "x"}), ("today", {})]
    assert result.text == "On it:  then "
    for prose in ("See [note(1)] below.", "Use [f(x) for x in y] here", "a[i] + b[j(k)"):
        kept = assert_stream_equals_parse(parser, prose)
        assert kept.tool_calls == () and kept.errors == ()
        assert kept.text == prose


def test_granite_tool_call_prefix() -> None:
    text = '<tool_call> [{"name": "search", "arguments": {"query": "x"}}]'
    result = assert_stream_equals_parse(get_parser("granite"), text)
    assert calls(result) == [("search", {"query": "x"})]


def test_glm_escaped_json_value_and_literal_line_breaks() -> None:
    text = (
        "<tool_call>search\\n<arg_key>tags</arg_key>\\n<arg_value>"
        '[{\\"k\\": \\"v\\"}]</arg_value>\n</tool_call>'
    )
    result = assert_stream_equals_parse(get_parser("glm45"), text)
    assert calls(result) == [("search", {"tags": [{"k": "v"}]})]


def test_glm_string_parameter_keeps_escaped_text() -> None:
    text = '<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>[{\\"a\\"}]</arg_value>\n</tool_call>'
    result = assert_stream_equals_parse(get_parser("glm45"), text)
    assert calls(result) == [("search", {"query": '[{\\"a\\"}]'})]


def test_functiongemma_members_without_commas() -> None:
    text = (
        "<start_function_call>call:search{query:<escape>rust<escape>"
        "filters:{lang:<escape>en<escape>}}<end_function_call>"
    )
    result = assert_stream_equals_parse(get_parser("functiongemma"), text)
    assert calls(result) == [("search", {"query": "rust", "filters": {"lang": "en"}})]


def test_python_set_literal_becomes_a_list() -> None:
    text = "<|tool_call_start|>[search(query='x', tags={'a', 'b'})]<|tool_call_end|>"
    result = assert_stream_equals_parse(get_parser("lfm2"), text)
    assert result.tool_calls[0].arguments["tags"] in (["a", "b"], ["b", "a"])


def test_hermes_two_objects_in_one_block() -> None:
    text = '<tool_call>{"name": "today", "arguments": {}}, {"name": "search", "arguments": {"query": "x"}}</tool_call>'
    result = assert_stream_equals_parse(get_parser("hermes"), text)
    assert calls(result) == [("today", {}), ("search", {"query": "x"})]
    assert result.text == ""


def test_kimi_counter_only_header_names_the_only_tool() -> None:
    text = '<|tool_calls_section_begin|><|tool_call_begin|>3<|tool_call_argument_begin|>{"query": "x"}<|tool_call_end|><|tool_calls_section_end|>'
    search = [t for t in TOOLS if t.name == "search"]
    result = assert_stream_equals_parse(get_parser("kimi_k2"), text, search)
    assert calls(result) == [("search", {"query": "x"})]


# -- text changed or leaked ------------------------------------------------------------------------

DS_B, DS_E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"


@pytest.mark.parametrize("fmt", ["deepseek_v31", "kimi_k2"])
def test_call_section_without_calls_goes_back_verbatim(fmt: str) -> None:
    begin, end = (
        (DS_B, DS_E)
        if fmt == "deepseek_v31"
        else ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
    )
    parser = get_parser(fmt)
    result = assert_stream_equals_parse(parser, "Hi." + begin + " two  words \n" + end + " Bye")
    assert result.text == "Hi." + begin + " two  words \n" + end + " Bye"
    cut = assert_stream_equals_parse(parser, "Hi." + begin + "lookup weather")
    assert cut.text == "Hi." + begin + "lookup weather"


def test_kimi_text_between_calls_is_reported_not_content() -> None:
    text = (
        "Ok. <|tool_calls_section_begin|> some noise <|tool_call_begin|>functions.today:0"
        "<|tool_call_argument_begin|>{}<|tool_call_end|>\n<|tool_calls_section_end|> after"
    )
    result = assert_stream_equals_parse(get_parser("kimi_k2"), text)
    assert calls(result) == [("today", {})]
    assert result.text == "Ok.  after"
    assert [e.raw for e in result.errors] == [" some noise "]


def test_stray_end_markers_leave_content() -> None:
    kimi = assert_stream_equals_parse(get_parser("kimi_k2"), "All done.<|tool_calls_section_end|>")
    assert kimi.text == "All done."
    gemma = assert_stream_equals_parse(
        get_parser("gemma4"), "<|channel><|channel>thought\nhm<channel|>Answer.<channel|>"
    )
    assert gemma.text == "Answer."
    assert gemma.reasoning == "\nhm"


def test_lfm2_repeated_body_after_end_marker_is_dropped() -> None:
    body = "[search(query='x')]"
    text = "<|tool_call_start|>" + body + "<|tool_call_end|>" + body + "<|tool_call_end|>Done."
    result = assert_stream_equals_parse(get_parser("lfm2"), text)
    assert calls(result) == [("search", {"query": "x"})]
    assert result.text == "Done."
    other = assert_stream_equals_parse(
        get_parser("lfm2"), "<|tool_call_start|>" + body + "<|tool_call_end|>[today()] is next"
    )
    assert other.text == "[today()] is next"


EDIT = ToolDefinition(
    name="edit",
    parameters=(
        ToolParameter("old", ToolParameterType.STRING),
        ToolParameter("new", ToolParameterType.STRING),
    ),
)


def test_seed_oss_keeps_trailing_newline_of_inline_value() -> None:
    text = (
        "<seed:tool_call>\n<function=edit>\n<parameter=old>x = 1\n</parameter>\n"
        "<parameter=new>\nx = 2\n</parameter>\n</function>\n</seed:tool_call>"
    )
    result = assert_stream_equals_parse(get_parser("seed_oss"), text, [EDIT])
    assert calls(result) == [("edit", {"old": "x = 1\n", "new": "x = 2"})]
    padded = text.replace("<seed:tool_call>", "<tool_call>").replace(
        "</seed:tool_call>", "</tool_call>"
    )
    qwen = assert_stream_equals_parse(get_parser("qwen3_coder"), padded, [EDIT])
    assert calls(qwen) == [("edit", {"old": "x = 1", "new": "x = 2"})]


# -- lenient Hermes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '<tool>{"name": "search", "arguments": {"query": "x"}}</tool>',
        '<tools>[{"name": "search", "arguments": {"query": "x"}}]</tools>',
        '<function_call>{"name": "search", "arguments": {"query": "x"}}</function_call>',
        '<function=search>{"query": "x"}</function>',
        'Here:\n```json\n{"name": "search", "arguments": {"query": "x"}}\n```',
    ],
)
def test_lenient_hermes_reads_other_wrappers(text: str) -> None:
    lenient = assert_stream_equals_parse(get_parser("hermes", lenient=True), text)
    assert calls(lenient) == [("search", {"query": "x"})]
    strict = get_parser("hermes").parse(text, TOOLS)
    assert strict.tool_calls == ()  # off by default


@pytest.mark.parametrize(
    "text",
    ['Example:\n```json\n{"a": [1, 2]}\n```\nok', "<function=no good>x</function>"],
)
def test_lenient_hermes_leaves_other_text_alone(text: str) -> None:
    result = assert_stream_equals_parse(get_parser("hermes", lenient=True), text)
    assert result.tool_calls == () and result.errors == ()
    assert result.text == text


# -- markers matched by special-token identity ----------------------------------------------------

SPECIAL = ["<tool_call>", "</tool_call>", "<think>", "</think>"]


def test_marker_typed_in_ordinary_tokens_is_text() -> None:
    tokens = [
        (1, "Type <tool", False),
        (2, "_call> to call.", False),
        (10, "<tool_call>", True),
        (3, '{"name": "search", "arguments": {"query": "a </tool_call> b"}}', False),
        (11, "</tool_call>", True),
    ]
    result = get_parser("hermes").parse_tokens(tokens, TOOLS, special_tokens=SPECIAL)
    assert result.text == "Type <tool_call> to call."
    assert calls(result) == [("search", {"query": "a </tool_call> b"})]


def test_token_stream_events_hold_no_break_characters() -> None:
    machine = get_parser("hermes").stream(TOOLS).special_tokens(SPECIAL)
    events = machine.feed_tokens([(1, "<think>", False), (2, "x", False)])
    events += machine.feed_tokens([(10, "<tool_call>", True), (3, '{"name": "search", ', False)])
    events += machine.feed_tokens([(4, '"arguments": {"query": "<think>"}}', False)])
    events += machine.close()
    result = collect_events(events)
    assert result.text == "<think>x" and result.reasoning == ""
    assert calls(result) == [("search", {"query": "<think>"})]
    deltas = "".join(e.text for e in events if isinstance(e, ArgumentsDelta))
    assert json.loads(deltas) == {"query": "<think>"}
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert "\ue000" not in repr(finished)


def test_special_token_seen_once_guards_later_text() -> None:
    machine = get_parser("hermes").stream(TOOLS)  # nothing declared up front
    events = machine.feed_tokens(
        [
            (10, "<tool_call>", True),
            (3, '{"name": "today", "arguments": {}}', False),
            (11, "</tool_call>", True),
            (4, "Now <tool_call>{} is just text", False),
        ]
    )
    result = collect_events(events + machine.close())
    assert calls(result) == [("today", {})]
    assert result.text == "Now <tool_call>{} is just text"


def test_formats_with_ordinary_text_markers_still_parse_from_tokens() -> None:
    # Qwen3-Coder's <function=...>/<parameter=...> are ordinary text in its tokenizer
    text = "\n<function=search>\n<parameter=query>\nx\n</parameter>\n</function>\n"
    tokens = [(10, "<tool_call>", True), (1, text, False), (11, "</tool_call>", True)]
    result = get_parser("qwen3_coder").parse_tokens(tokens, TOOLS, special_tokens=SPECIAL)
    assert calls(result) == [("search", {"query": "x"})]
    assert run_split(get_parser("qwen3_coder"), [text]) is not None


def test_unescaped_inner_quotes_are_repaired_only_when_needed() -> None:
    parser = get_parser("lfm2")
    text = "<|tool_call_start|>[search(query='grep -n 'a,b' f.txt', tags=['x'])]<|tool_call_end|>"
    result = assert_stream_equals_parse(parser, text)
    assert calls(result) == [("search", {"query": "grep -n 'a,b' f.txt", "tags": ["x"]})]
    valid = "<|tool_call_start|>[search(query='it\\'s', tags=[])]<|tool_call_end|>"
    assert calls(parser.parse(valid)) == [("search", {"query": "it's", "tags": []})]


def test_parse_command_reads_reasoning_from_the_template_and_lenient_mode(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from tooluse.cli.app import app

    runner = CliRunner()
    template = tmp_path / "qwen35.jinja"
    template.write_text(QWEN35_TEMPLATE, encoding="utf-8")
    text = "Need the date.\n<tool_call>\n<function=today>\n</function>\n</tool_call>"
    args = ["parse", "-f", "qwen3_coder", "--template", str(template)]
    out = json.loads(runner.invoke(app, args, input=text).output)
    assert out["reasoning"] == "Need the date.\n"
    assert [c["name"] for c in out["tool_calls"]] == ["today"]
    lenient = runner.invoke(
        app, ["parse", "-f", "hermes", "--lenient"], input='<tool>{"name": "today"}</tool>'
    )
    assert [c["name"] for c in json.loads(lenient.output)["tool_calls"]] == ["today"]
    refused = runner.invoke(app, ["parse", "-f", "pythonic", "--lenient"], input="x")
    assert refused.exit_code == 2
    assert "no lenient mode" in refused.output


def test_kimi_close_of_reasoning_after_its_calls_is_not_content() -> None:
    text = (
        "<think>plan<|tool_calls_section_begin|><|tool_call_begin|>functions.today:0"
        "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|></think>Done."
    )
    result = assert_stream_equals_parse(get_parser("kimi_k2"), text)
    assert calls(result) == [("today", {})]
    assert (result.reasoning, result.text) == ("plan", "Done.")
    # without reasoning cut short by a call, the marker is kept as written
    assert get_parser("kimi_k2").parse("a</think>b").text == "a</think>b"


@pytest.mark.parametrize(("escape", "value"), [("\\x", "\\x"), ("\\u12", "\\u12"), ("\\x41", "A")])
def test_python_escape_without_its_digits_is_kept_not_a_crash(escape: str, value: str) -> None:
    result = assert_stream_equals_parse(get_parser("pythonic"), f"[search(query='{escape}')]")
    assert calls(result) == [("search", {"query": value})]
