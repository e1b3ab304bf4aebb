"""Chat-template rendering with tools, as transformers' apply_chat_template does it."""

from __future__ import annotations

import json

import pytest

from tooluse.errors import ChatTemplateError
from tooluse.formats import (
    HermesToolCallParser,
    detect_format,
    message_to_template_dict,
    render_chat_template,
    template_uses_tools,
)
from tooluse.messages import ChatMessage, ToolCall, ToolResult

from .helpers import TODAY, WEATHER

# A ChatML template with a Qwen-style tools section, written for these tests: tools as JSON lines
# in the system turn, assistant calls in <tool_call> blocks, tool results in <tool_response>.
QWEN_STYLE = """
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- set tc = tool_call.function if tool_call.function is defined else tool_call %}
{{- '\\n<tool_call>\\n{"name": "' + tc.name + '", "arguments": ' }}
{%- if tc.arguments is string %}{{- tc.arguments }}{%- else %}{{- tc.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""

# SmolLM2's GGUF template has no tools section (its shape, re-typed for the test).
CHATML_NO_TOOLS = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def test_tools_reach_the_template_as_openai_schemas():
    prompt = render_chat_template(QWEN_STYLE, [ChatMessage.user("Weather?")], tools=[WEATHER])
    line = prompt.split("<tools>\n")[1].split("\n</tools>")[0]
    assert json.loads(line) == WEATHER.to_openai_schema()
    assert prompt.endswith("<|im_start|>assistant\n")


def test_no_generation_prompt():
    prompt = render_chat_template(QWEN_STYLE, [ChatMessage.user("hi")], add_generation_prompt=False)
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n"


def test_full_tool_round_trip_renders_calls_and_results():
    call = ToolCall(name="get_weather", arguments={"city": "Zürich"})
    messages = [
        ChatMessage.system("Be brief."),
        ChatMessage.user("Weather in Zürich?"),
        ChatMessage.assistant("", [call]),
        ChatMessage.tool_result(ToolResult.success(call.id, "get_weather", {"temp": 21})),
    ]
    prompt = render_chat_template(QWEN_STYLE, messages, tools=[WEATHER, TODAY])
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    # tojson keeps non-ASCII text as transformers does
    assert '"arguments": {"city": "Zürich"}' in prompt
    assert '<tool_response>\n{"temp": 21}\n</tool_response>' in prompt
    # what the template wrote for the call parses back to the same call
    assistant_turn = prompt.split("<|im_start|>assistant")[1].split("<|im_end|>")[0]
    parsed = HermesToolCallParser().parse(assistant_turn, [WEATHER])
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        ("get_weather", {"city": "Zürich"})
    ]


def test_message_dicts_pass_through_and_tool_messages_carry_ids():
    call = ToolCall(name="today")
    tool_msg = ChatMessage.tool_result(ToolResult.success(call.id, "today", "2025-12-25"))
    assert message_to_template_dict(tool_msg) == {
        "role": "tool",
        "content": "2025-12-25",
        "tool_call_id": call.id,
        "name": "today",
    }
    assistant = message_to_template_dict(ChatMessage.assistant("x", [call]))
    assert assistant["tool_calls"][0]["function"] == {"name": "today", "arguments": {}}
    assert message_to_template_dict({"role": "user", "content": "hi"}) == {
        "role": "user",
        "content": "hi",
    }


def test_template_without_tools_section_gets_tools_prompt_in_system_turn():
    assert not template_uses_tools(CHATML_NO_TOOLS)
    assert template_uses_tools(QWEN_STYLE)
    tools_prompt = HermesToolCallParser().format_tools([WEATHER])
    prompt = render_chat_template(
        CHATML_NO_TOOLS, [ChatMessage.user("hi")], tools=[WEATHER], tools_prompt=tools_prompt
    )
    assert prompt.startswith("<|im_start|>system\n# Tools")
    assert '"name": "get_weather"' in prompt
    with_system = render_chat_template(
        CHATML_NO_TOOLS,
        [ChatMessage.system("Be nice."), ChatMessage.user("hi")],
        tools_prompt=tools_prompt,
    )
    assert with_system.startswith("<|im_start|>system\nBe nice.\n\n# Tools")


def test_tools_prompt_is_ignored_when_the_template_has_a_tools_section():
    prompt = render_chat_template(
        QWEN_STYLE, [ChatMessage.user("hi")], tools=[WEATHER], tools_prompt="EXTRA"
    )
    assert "EXTRA" not in prompt


def test_raise_exception_and_strftime_now_and_extra_variables():
    template = (
        "{% if messages[0].role != 'user' %}{{ raise_exception('first message must be user') }}"
        "{% endif %}{{ bos_token }}{{ strftime_now('%Y') }}{% generation %}G{% endgeneration %}"
    )
    out = render_chat_template(template, [ChatMessage.user("x")], bos_token="<s>")
    assert out.startswith("<s>20") and out.endswith("G")
    with pytest.raises(ChatTemplateError, match="first message must be user"):
        render_chat_template(template, [ChatMessage.system("x")])


def test_broken_template_is_a_clear_error():
    with pytest.raises(ChatTemplateError, match="does not compile"):
        render_chat_template("{% for x in %}", [])


def test_sandbox_blocks_attribute_escape():
    with pytest.raises(ChatTemplateError):
        render_chat_template(
            "{{ messages.__class__.__mro__ }}{{ ''.__class__.__subclasses__() }}", []
        )


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (QWEN_STYLE, "hermes"),
        (CHATML_NO_TOOLS, None),
        ("{{ '<tool_call>\\n<function=' + name + '>' }}", "qwen3_coder"),
        ("[TOOL_CALLS]{{ name }}[ARGS]{{ args }}", "mistral_v11"),
        ("[AVAILABLE_TOOLS]{{ tools }}[/AVAILABLE_TOOLS][TOOL_CALLS]", "mistral"),
        ("<|start_header_id|>ipython<|end_header_id|> <|python_tag|>", "llama3_json"),
        ("<|python_start|>[f()]<|python_end|>", "pythonic"),
        ("<|start|>assistant<|channel|>commentary to=functions.x <|constrain|>json", "harmony"),
        ("<start_function_declaration>...<start_function_call>", "functiongemma"),
        ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>", "deepseek_v3"),
        ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{{ name }}<｜tool▁sep｜>", "deepseek_v31"),
        ("```tool_code\\n", "gemma_tool_code"),
        ("<|tool_calls_section_begin|>", "kimi_k2"),
        ("<tool_call>{{ name }}<arg_key>{{ k }}</arg_key>", "glm45"),
        ("<function={{ name }}>{{ args }}</function>", "function_tag"),
        ("<minimax:tool_call><invoke name=", "minimax_m2"),
        ("<seed:tool_call><function=", "seed_oss"),
        ("<|tool_call>call:", "gemma4"),
        ("<|tool_call_start|>[", "lfm2"),
        ("<function_calls>", "olmo3"),
        ("<|tool_call|>[", "granite"),
        ("<TOOLCALL>[", "nemotron"),
        ("<tool_calls>[", "jamba"),
        ("functools[", "phi4_mini"),
    ],
)
def test_detect_format(template, expected):
    assert detect_format(template) == expected


def test_documented_functions_are_tools_too():
    def get_weekday(date_str: str) -> str:
        """Get the weekday of a date.

        Args:
            date_str: the date in the format YYYY-MM-DD.
        """
        return date_str

    prompt = render_chat_template(QWEN_STYLE, [ChatMessage.user("x")], tools=[get_weekday])
    schema = json.loads(prompt.split("<tools>\n")[1].split("\n</tools>")[0])
    assert schema["function"]["name"] == "get_weekday"
    assert "date_str" in schema["function"]["parameters"]["properties"]


def test_chat_template_from_tokenizer_config():
    from tooluse.formats import chat_template_from_config

    assert chat_template_from_config({"chat_template": "T"}) == "T"
    config = {
        "chat_template": [
            {"name": "default", "template": "D"},
            {"name": "tool_use", "template": "U"},
        ]
    }
    assert chat_template_from_config(config) == "D"
    assert chat_template_from_config(config, with_tools=True) == "U"
    with pytest.raises(ChatTemplateError, match="rag"):
        chat_template_from_config(config, name="rag")
    with pytest.raises(ChatTemplateError):
        chat_template_from_config({})
