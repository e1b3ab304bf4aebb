"""An assistant turn's reasoning reaches chat templates as transformers passes it, for message
dicts as for ``ChatMessage`` values.

transformers 5 gives a message's reasoning (``reasoning_content``, or the older ``thinking`` /
``reasoning``) under both ``reasoning_content`` and ``thinking``; gpt-oss and LFM2.5 templates
read ``thinking``. The comparison with transformers' own renderer runs on the templates of the
corpus described in ``test_chat_template_corpus.py`` (with ``TOOLUSE_TEMPLATE_CORPUS`` set: all
74) and on two small templates shaped like those two families' reasoning sections.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooluse.errors import ChatTemplateError
from tooluse.formats.chat_template import message_to_template_dict, render_chat_template

from .test_chat_template_corpus import _corpus

# The shapes of the two families' reasoning sections, a few lines each.
GPT_OSS_SHAPE = """
{%- for message in messages %}
{%- if message.role == 'assistant' %}
{%- if message.thinking %}{{- '<|start|>assistant<|channel|>analysis<|message|>' + message.thinking + '<|end|>' }}{%- endif %}
{%- for tc in message.tool_calls %}{{- '<|start|>assistant to=functions.' + tc.function.name + '<|message|>' + (tc.function.arguments | tojson) + '<|call|>' }}{%- endfor %}
{%- else %}{{- '<|start|>' + message.role + '<|message|>' + message.content + '<|end|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}
"""
LFM25_SHAPE = """
{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\\n' -}}
{%- if message.thinking is defined -%}{{- '<think>' + message.thinking + '</think>' -}}{%- endif -%}
{{- message.content + '<|im_end|>\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
"""
SHAPES = {"gpt-oss shape": GPT_OSS_SHAPE, "LFM2.5 shape": LFM25_SHAPE}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def conversation(key: str = "reasoning_content") -> list[dict]:
    """A tool round whose assistant turn carries its reasoning under ``key``."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
    return [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", key: "I should ask the tool.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "Sunny"},
    ]


@pytest.mark.parametrize("key", ["reasoning_content", "thinking", "reasoning"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_dicts_reasoning_reaches_a_template_reading_thinking(shape, key):
    prompt = render_chat_template(SHAPES[shape], conversation(key), tools=TOOLS)
    assert "I should ask the tool." in prompt


def test_a_dict_gets_both_names_and_keeps_its_own_thinking():
    named = message_to_template_dict({"role": "assistant", "reasoning": "why"})
    assert named["reasoning_content"] == named["thinking"] == "why"
    both = message_to_template_dict(
        {"role": "assistant", "reasoning_content": "long", "thinking": "short"}
    )
    assert (both["reasoning_content"], both["thinking"]) == ("long", "short")
    assert "thinking" not in message_to_template_dict({"role": "user", "content": "hi"})
    original = {"role": "assistant", "reasoning_content": "why"}
    message_to_template_dict(original)
    assert original == {"role": "assistant", "reasoning_content": "why"}  # not changed in place


def _render_like_transformers(template: str, key: str) -> str:
    utils = pytest.importorskip(
        "transformers.utils.chat_template_utils", reason="transformers comes with tooluse[train]"
    )
    rendered = utils.render_jinja_template(
        [conversation(key)],
        tools=TOOLS,
        chat_template=template,
        add_generation_prompt=True,
        bos_token="<s>",
        eos_token="</s>",
    )
    return str(rendered[0][0])


TEMPLATES = [pytest.param(text, id=name) for name, text in sorted(SHAPES.items())] + [
    pytest.param(path, id=path.name) for path in _corpus()
]


@pytest.mark.parametrize("key", ["reasoning_content", "thinking"])
@pytest.mark.parametrize("template", TEMPLATES)
def test_rendering_a_dict_conversation_with_reasoning_equals_transformers(template, key):
    text = template.read_text(encoding="utf-8") if isinstance(template, Path) else template
    tokens = {"bos_token": "<s>", "eos_token": "</s>"}
    try:
        expected = _render_like_transformers(text, key)
    except Exception:  # a template that refuses this conversation (no tool role, say)
        with pytest.raises(ChatTemplateError):  # refuses it here too
            render_chat_template(text, conversation(key), tools=TOOLS, **tokens)
        return
    assert render_chat_template(text, conversation(key), tools=TOOLS, **tokens) == expected
