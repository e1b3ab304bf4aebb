"""Format detection from what a chat template renders for a tool call, and reasoning passed to
templates as ``thinking``.

The templates here were written for these tests. Each renders an assistant tool call with the
same call syntax as the real template of the family it names (the shapes were read from the
models' published chat templates and the peer projects' example templates), together with the
marker text that misled detection by markers alone.
"""

from __future__ import annotations

import pytest

from tooluse.formats import detect_format, message_to_template_dict, render_chat_template
from tooluse.formats.template_detect import rendered_call_text
from tooluse.messages import ChatMessage, ToolCall

# Header and message loop shared by the Llama-style templates below.
_LLAMA_LOOP = """
{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls %}
{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n[' }}
{%- for tool_call in message.tool_calls %}
{%- set tc = tool_call.function %}
{{- tc.name + '(' }}
{%- for param in tc.arguments %}{{- param + '=' + VALUE }}{% if not loop.last %}, {% endif %}{%- endfor %}
{{- ')' }}{% if not loop.last %}, {% endif %}
{%- endfor %}
{{- ']<|eot_id|>' }}
{%- else %}
{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + message.content + '<|eot_id|>' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}
"""

# Llama 3.2 pythonic: the system text names <|python_tag|>, ipython and <|eom_id|> (which made
# marker detection say llama3_json); calls are written as a Python list with values unquoted.
LLAMA32_PYTHONIC = (
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\nEnvironment: ipython. Built-in tools "
    "use <|python_tag|> and end with <|eom_id|>. Call functions as [func(param=value)].<|eot_id|>' }}"
    + _LLAMA_LOOP.replace("VALUE", '("%s" | format(tc.arguments[param]))')
)

# Llama 4 pythonic: no special marker at all; values quoted.
LLAMA4_PYTHONIC = (
    "{{- '<|header_start|>system<|header_end|>\\n\\nYou may call functions: ' + (tools | tojson) "
    "+ '<|eot|>' }}"
    + _LLAMA_LOOP.replace("<|start_header_id|>", "<|header_start|>")
    .replace("<|end_header_id|>", "<|header_end|>")
    .replace("<|eot_id|>", "<|eot|>")
    .replace("VALUE", "'\"' + (\"%s\" | format(tc.arguments[param])) + '\"'")
)

# LFM2-8B-A1B / LFM2.5: tools listed between <|tool_list_start|> tokens (or after a plain
# "List of tools: [" in some GGUF copies); assistant calls come back through the content only.
LFM2_TEMPLATE = """
{%- if tools %}{{- '<|im_start|>system\\nList of tools: <|tool_list_start|>' + (tools | tojson) + '<|tool_list_end|><|im_end|>\\n' }}{%- endif %}
{%- for message in messages %}
{%- if message.role == 'tool' %}{{- '<|im_start|>tool\\n<|tool_response_start|>' + message.content + '<|tool_response_end|><|im_end|>\\n' }}
{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""
LFM2_PLAIN_LIST = """
{%- if tools %}{{- '<|im_start|>system\\nList of tools: [' }}{%- for t in tools %}{{- t | tojson }}{%- endfor %}{{- ']<|im_end|>\\n' }}{%- endif %}
{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""

_CHATML_CALLS = """
{%- if tools %}{{- '<|im_start|>system\\nTOOLS_TEXT' + (tools | tojson) + '<|im_end|>\\n' }}{%- endif %}
{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls %}
{{- '<|im_start|>assistant\\n' }}CALLS{{- '<|im_end|>\\n' }}
{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""


def _chatml(tools_text: str, calls: str) -> str:
    return _CHATML_CALLS.replace("TOOLS_TEXT", tools_text).replace("CALLS", calls)


# MiniMax-M1: one JSON object per line inside <tool_calls> (marker detection said jamba).
MINIMAX_M1 = _chatml(
    "You are MiniMax. Call tools inside <tool_calls></tool_calls>: ",
    "{{- '<tool_calls>\\n' }}{%- for tc in message.tool_calls %}"
    "{{- {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}{{- '\\n' }}"
    "{%- endfor %}{{- '</tool_calls>' }}",
)
# Jamba: the same tags around one JSON list; must stay jamba.
JAMBA = _chatml(
    "Tools: ",
    "{{- '<tool_calls>' }}{%- set ns = namespace(items=[]) %}"
    "{{- message.tool_calls | map(attribute='function') | list | tojson }}{{- '</tool_calls>' }}",
)
# MiniMax-M3: every tag behind the ]<]minimax[>[ namespace token (marker detection said hermes,
# since the template holds "<tool_call>").
MINIMAX_M3 = _chatml(
    "Call tools with <tool_call> blocks: ",
    "{%- set ns_tok = ']<]minimax[>[' %}{{- ns_tok + '<tool_call>\\n' }}"
    "{%- for tc in message.tool_calls %}{{- ns_tok + '<invoke name=\"' + tc.function.name + '\">\\n' }}"
    "{%- for k, v in tc.function.arguments.items() %}{{- ns_tok + '<' + k + '>' + (v | string) + ns_tok + '</' + k + '>\\n' }}{%- endfor %}"
    "{{- ns_tok + '</invoke>\\n' }}{%- endfor %}{{- ns_tok + '</tool_call>' }}",
)
# Phi-4-mini: the model writes functools[...], while the template renders history calls as
# bare JSON objects; the marker in the template wins over a bare reading.
PHI4_MINI = _chatml(
    "Call functions as functools[{...}]: ",
    "{%- for tc in message.tool_calls %}{{- {'name': tc.function.name, 'arguments': "
    "tc.function.arguments} | tojson }}{% if not loop.last %},{% endif %}{%- endfor %}",
)
# DeepSeek V3.2 DSML and Command R7B, rendered the way their templates write calls.
DSML_V32 = _chatml(
    "## Tools\\n",
    "{{- '<｜DSML｜function_calls>\\n' }}{%- for tc in message.tool_calls %}"
    "{{- '<｜DSML｜invoke name=\"' + tc.function.name + '\">\\n' }}"
    "{%- for k, v in tc.function.arguments.items() %}"
    "{%- if v is string %}{{- '<｜DSML｜parameter name=\"' + k + '\" string=\"true\">' + v + '</｜DSML｜parameter>\\n' }}"
    "{%- else %}{{- '<｜DSML｜parameter name=\"' + k + '\" string=\"false\">' + (v | tojson) + '</｜DSML｜parameter>\\n' }}{%- endif %}"
    "{%- endfor %}{{- '</｜DSML｜invoke>\\n' }}{%- endfor %}{{- '</｜DSML｜function_calls>' }}",
)
COMMAND_R7B = _chatml(
    "Use <|START_ACTION|> blocks: ",
    "{{- '<|START_ACTION|>[\\n' }}{%- for tc in message.tool_calls %}"
    "{{- '    ' + ({'tool_call_id': loop.index0 | string, 'tool_name': tc.function.name, "
    "'parameters': tc.function.arguments} | tojson) }}{% if not loop.last %},{% endif %}{{- '\\n' }}"
    "{%- endfor %}{{- ']<|END_ACTION|>' }}",
)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (LLAMA32_PYTHONIC, "pythonic"),
        (LLAMA4_PYTHONIC, "pythonic"),
        (LFM2_TEMPLATE, "lfm2"),
        (LFM2_PLAIN_LIST, "lfm2"),
        (MINIMAX_M1, "minimax_m1"),
        (JAMBA, "jamba"),
        (MINIMAX_M3, "minimax_m3"),
        (PHI4_MINI, "phi4_mini"),
        (DSML_V32, "deepseek_v32"),
        (COMMAND_R7B, "command_r7b"),
    ],
)
def test_detection_reads_what_the_template_renders(template, expected):
    assert detect_format(template) == expected


def test_the_rendered_call_is_the_text_after_the_generation_prompt():
    text = rendered_call_text(MINIMAX_M1, (("get_weather", {"city": "Paris"}),))
    assert (
        text
        == '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_calls><|im_end|>\n'
    )


def test_llama32_values_written_unquoted_are_read_with_the_integer_probe():
    # the string probe renders city=Paris, which is not Python; the integer probe is
    text = rendered_call_text(LLAMA32_PYTHONIC, (("get_weather", {"days": 3}),))
    assert text == "[get_weather(days=3)]<|eot_id|>"


# -- reasoning as ``thinking`` (transformers 5 passes both names) ------------------------------
# A gpt-oss-style snippet: earlier analysis is replayed from ``message.thinking``.
GPT_OSS_STYLE = """
{%- for message in messages %}
{%- if message.role == 'assistant' %}
{%- if message.thinking %}{{- '<|start|>assistant<|channel|>analysis<|message|>' + message.thinking + '<|end|>' }}{%- endif %}
{%- for tc in message.tool_calls %}{{- '<|start|>assistant to=functions.' + tc.function.name + '<|channel|>commentary json<|message|>' + (tc.function.arguments | tojson) + '<|call|>' }}{%- endfor %}
{%- else %}{{- '<|start|>' + message.role + '<|message|>' + message.content + '<|end|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}
"""


def test_reasoning_reaches_templates_as_thinking():
    turn = ChatMessage(
        role="assistant",
        reasoning="Need the weather first.",
        tool_calls=(ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),),
    )
    as_dict = message_to_template_dict(turn)
    assert as_dict["thinking"] == as_dict["reasoning_content"] == "Need the weather first."
    prompt = render_chat_template(
        GPT_OSS_STYLE, [ChatMessage(role="user", content="Weather?"), turn]
    )
    assert "<|channel|>analysis<|message|>Need the weather first.<|end|>" in prompt
    assert '<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>' in prompt


def test_a_turn_without_reasoning_passes_no_thinking():
    as_dict = message_to_template_dict(ChatMessage(role="assistant", content="Hi"))
    assert "thinking" not in as_dict and "reasoning_content" not in as_dict
