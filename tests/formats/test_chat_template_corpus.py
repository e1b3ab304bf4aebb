"""Format detection over real models' chat templates: each template of a family tooluse
supports is named by that family's format, and each template of another family (or without a
tool section) gives ``None``.

The real templates are other projects' files, so they are not in this repository. The table
below names the format for the 74 templates measured (the 70 of llama.cpp's
``models/templates`` as shipped in the llama-cpp-python 0.3.36 sdist, and vLLM's four in
``shared/conformance/formats/templates_vllm``). The test reads every ``*.jinja`` it finds in
``../shared/conformance/formats/templates_*`` and in the folder named by
``TOOLUSE_TEMPLATE_CORPUS``; a template not in the table is an error (add its row). To run it
on the whole corpus::

    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp/sdist
    mkdir /tmp/templates && tar xzf /tmp/sdist/llama_cpp_python-0.3.36.tar.gz -C /tmp/templates \\
        --strip-components=4 --wildcards '*/models/templates/*.jinja'
    TOOLUSE_TEMPLATE_CORPUS=/tmp/templates/templates pytest tests/formats/test_chat_template_corpus.py

The small templates written for the tests below reproduce, in a few lines each, the shapes of
real templates that detection once got wrong.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tooluse.formats import detect_format
from tooluse.formats.registry import get_parser
from tooluse.formats.template_detect import rendered_call_text

from .helpers import TOOLS, assert_stream_equals_parse

ROOT = Path(__file__).resolve().parents[2]

#: Template file -> the format its model writes (``None``: no tooluse format fits).
EXPECTED: dict[str, str | None] = {
    "Apertus-8B-Instruct.jinja": "apertus",
    "Apriel-1.6-15b-Thinker-fixed.jinja": "jamba",  # <tool_calls>[{name, arguments}]</tool_calls>
    "Bielik-11B-v3.0-Instruct.jinja": "hermes",
    "ByteDance-Seed-OSS.jinja": "seed_oss",
    "Cohere2MoE.jinja": "command_r7b",
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": "command_r7b",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": "command_r7b",
    "GLM-4.6.jinja": "glm45",
    "GLM-4.7-Flash.jinja": "glm45",
    "GigaChat3-10B-A1.8B.jinja": "gigachat3",
    "GigaChat3.1-10B-A1.8B.jinja": "gigachat3",
    "HuggingFaceTB-SmolLM3-3B.jinja": None,  # this copy has no tool section
    "Kimi-K2-Instruct.jinja": "kimi_k2",
    "Kimi-K2-Thinking.jinja": "kimi_k2",
    "Kimi-K3.jinja": "kimi_k3",
    "LFM2-8B-A1B.jinja": "lfm2",
    "LFM2.5-8B-A1B.jinja": "lfm2",
    "LFM2.5-Instruct.jinja": "lfm2",
    "MiMo-VL.jinja": "hermes",
    "MiniMax-M1.jinja": "minimax_m1",
    "MiniMax-M2.jinja": "minimax_m2",
    "MiniMax-M3.jinja": "minimax_m3",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": "mistral_v11",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": "qwen3_coder",
    "NVIDIA-Nemotron-Nano-v2.jinja": "nemotron",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": "hermes",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": "hermes",
    "Qwen-QwQ-32B.jinja": "hermes",
    "Qwen-Qwen2.5-7B-Instruct.jinja": "hermes",
    "Qwen-Qwen3-0.6B.jinja": "hermes",
    "Qwen3-Coder.jinja": "qwen3_coder",
    "Qwen3.5-4B.jinja": "qwen3_coder",
    "Reka-Edge.jinja": "hermes",
    "Spark2.5.jinja": "glm45",
    "StepFun3.5-Flash.jinja": "qwen3_coder",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": "deepseek_v3",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": "deepseek_v3",
    "deepseek-ai-DeepSeek-V3.1.jinja": "deepseek_v31",
    "deepseek-ai-DeepSeek-V3.2.jinja": "deepseek_v32",
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": "deepseek_v4",
    "deepseek-ai-DeepSeek-V4.jinja": "deepseek_v4",
    "fireworks-ai-llama-3-firefunction-v2.jinja": "phi4_mini",  # functools[...]
    "google-gemma-2-2b-it.jinja": None,  # no tool section
    "google-gemma-4-31B-it-interleaved.jinja": "gemma4",
    "google-gemma-4-31B-it.jinja": "gemma4",
    "ibm-granite-granite-3.3-2B-Instruct.jinja": "granite",
    "ibm-granite-granite-4.0.jinja": "hermes",
    "ibm-granite-granite-4.1.jinja": "hermes",
    "inclusionai-ling-3.0-flash.jinja": "glm45",
    "llama-cpp-deepseek-r1.jinja": "deepseek_v3",
    "llama-cpp-rwkv-world.jinja": None,  # no tool section
    "meetkai-functionary-medium-v3.1.jinja": "function_tag",
    "meetkai-functionary-medium-v3.2.jinja": "functionary_v3_2",
    "meta-llama-Llama-3.1-8B-Instruct.jinja": "llama3_json",
    "meta-llama-Llama-3.2-3B-Instruct.jinja": "llama3_json",
    "meta-llama-Llama-3.3-70B-Instruct.jinja": "llama3_json",
    "microsoft-Phi-3.5-mini-instruct.jinja": None,  # no tool section
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": "mistral_v11",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": "mistral",
    "moonshotai-Kimi-K2.jinja": "kimi_k2",
    "muse-glimmer.jinja": None,  # <atem:function_calls> after a "to=NAME" header: not supported
    "openai-gpt-oss-120b.jinja": "harmony",
    "openbmb-MiniCPM5-1B.jinja": "minicpm5",
    "poolside-Laguna-S-2.1.jinja": "glm45",
    "poolside-Laguna-XS-2.1.jinja": "glm45",
    "poolside-Laguna-XS.2.jinja": "glm45",
    "tencent-Hy3.jinja": None,  # <tool_call:opensource>NAME<tool_sep:opensource>: not supported
    "tool_chat_template_llama3.2_pythonic.jinja": "pythonic",
    "tool_chat_template_llama4_pythonic.jinja": "pythonic",
    "tool_chat_template_olmo3.jinja": "olmo3",
    "tool_chat_template_phi4_mini.jinja": "phi4_mini",
    "unsloth-Apriel-1.5.jinja": "jamba",
    "unsloth-mistral-Devstral-Small-2507.jinja": "mistral_v11",
    "upstage-Solar-Open-100B.jinja": None,  # <|tool_call:begin|>ID<|tool_call:name|>: not supported
}


def _corpus() -> list[Path]:
    folders = sorted((ROOT.parent / "shared" / "conformance" / "formats").glob("templates_*"))
    named = os.environ.get("TOOLUSE_TEMPLATE_CORPUS")
    if named:
        folders.append(Path(named))
    return sorted(path for folder in folders for path in folder.glob("*.jinja"))


CORPUS = _corpus()


@pytest.mark.skipif(not CORPUS, reason="no template corpus beside the repository")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_real_template_names_its_format(path):
    assert path.name in EXPECTED, f"{path.name}: add the format its model writes to EXPECTED"
    assert detect_format(path.read_text(encoding="utf-8")) == EXPECTED[path.name]


# -- shapes of real templates that detection once got wrong --------------------------------------

# Command R7B / Command A: the generation prompt ends in <|START_RESPONSE|>, the call turn
# starts <|START_ACTION|>; the two share "<|START_", so the call text must begin at the marker.
COHERE = """
{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls %}
{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_ACTION|>[' }}
{%- for tc in message.tool_calls %}{{- {'tool_call_id': loop.index0 | string, 'tool_name': tc.function.name, 'parameters': tc.function.arguments} | tojson }}{% if not loop.last %}, {% endif %}{%- endfor %}
{{- ']<|END_ACTION|><|END_OF_TURN_TOKEN|>' }}
{%- else %}{{- '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + message.content + '<|END_OF_TURN_TOKEN|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>' }}{%- endif %}
"""

# Functionary v3.2: arguments joined to the text as they come (JSON text, as the OpenAI API
# sends them), after a generation prompt that ends in ">>>".
FUNCTIONARY_V32 = """
{{- '<|start_header_id|>system<|end_header_id|>\\n\\nReply as >>>${recipient}\\n${content}<|eot_id|>' }}
{%- for message in messages %}
{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' }}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- for tc in message.tool_calls or [] %}{{- '>>>' + tc.function.name + '\\n' + tc.function.arguments }}{%- endfor %}
{{- '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n>>>' }}{%- endif %}
"""

# Command R+: "Action:" on its own line, then a ```json fence.
COMMAND_R_PLUS = """
{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls %}
{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Action:\\n```json\\n[' }}
{%- for tc in message.tool_calls %}{{- {'tool_name': tc.function.name, 'parameters': tc.function.arguments} | tojson }}{% if not loop.last %}, {% endif %}{%- endfor %}
{{- ']```<|END_OF_TURN_TOKEN|>' }}
{%- else %}{{- '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + message.content + '<|END_OF_TURN_TOKEN|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{%- endif %}
"""

# A family tooluse does not read (Solar Open's shape), whose system text mentions <tool_call>:
# no format fits, and the marker must not make a guess of hermes.
UNREAD_SYNTAX = """
{{- '<|begin|>system\\nCall tools; never write <tool_call> tags.<|end|>' }}
{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls %}
{{- '<|begin|>assistant<|tool_calls|>' }}
{%- for tc in message.tool_calls %}{{- '<|tool_call:begin|>' + tc.id + '<|tool_call:name|>' + tc.function.name + '<|tool_call:args|>' + (tc.function.arguments | tojson) + '<|tool_call:end|>' }}{%- endfor %}
{{- '<|calls|>' }}
{%- else %}{{- '<|begin|>' + message.role + '\\n' + message.content + '<|end|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|begin|>assistant' }}{%- endif %}
"""


def test_call_text_begins_at_the_marker_the_generation_prompt_shares_a_prefix_with():
    text = rendered_call_text(COHERE, (("get_weather", {"city": "Paris"}),))
    assert text == (
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
        '{"city": "Paris"}}]<|END_ACTION|><|END_OF_TURN_TOKEN|>'
    )


def test_template_joining_arguments_as_text_is_given_json_text():
    text = rendered_call_text(FUNCTIONARY_V32, (("get_weather", {"city": "Paris"}),))
    assert text == 'get_weather\n{"city": "Paris"}<|eot_id|>'


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (FUNCTIONARY_V32, "functionary_v3_2"),
        (COMMAND_R_PLUS, "command_r7b"),
        (UNREAD_SYNTAX, None),
    ],
)
def test_detection_of_real_template_shapes(template, expected):
    assert detect_format(template) == expected


def test_command_r_plus_action_on_its_own_line_is_read():
    text = 'Action:\n```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]```'
    result = assert_stream_equals_parse(get_parser("command_r7b"), text, TOOLS)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert result.text == "" and result.errors == ()
