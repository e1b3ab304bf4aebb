"""Whether a chat template's generation prompt opens the model's reasoning, and a parser set up
for that template.

Some templates end the generation prompt with the reasoning opener (Qwen3.5, QwQ, GLM-4.7,
DeepSeek R1: ``<|im_start|>assistant\\n<think>\\n``), so the model's output starts inside the
reasoning and only closes it. Its parser must then start in reasoning
(``reasoning_started=True``); :func:`reasoning_started_from_template` finds that out by rendering
the template, and :func:`parser_for_template` builds the parser with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooluse.errors import ChatTemplateError
from tooluse.formats.base import ToolCallParser

__all__ = [
    "REASONING_OPENERS",
    "parser_for_template",
    "reasoning_started_from_prompt",
    "reasoning_started_from_template",
]

#: Markers that open reasoning in the formats tooluse reads.
REASONING_OPENERS: tuple[str, ...] = (
    "<think>",
    "<seed:think>",
    "[THINK]",
    "<|channel>thought",
    "<longcat_think>",
)

_PROBE: tuple[Mapping[str, Any], ...] = ({"role": "user", "content": "Hello"},)


def reasoning_started_from_prompt(prompt: str) -> bool:
    """Whether a rendered prompt ends inside reasoning: after trailing whitespace it ends with a
    reasoning opener (a prompt that closes the block, ``<think>\\n\\n</think>``, does not)."""
    tail = prompt.rstrip()
    return any(tail.endswith(opener) for opener in REASONING_OPENERS)


def reasoning_started_from_template(template: str, **variables: Any) -> bool:
    """Whether ``template``'s generation prompt opens reasoning, found by rendering it for a
    one-message conversation. ``variables`` reach the template (``enable_thinking=False``,
    ``bos_token``...). A template that refuses the probe conversation gives ``False``."""
    from tooluse.formats.chat_template import render_chat_template

    try:
        prompt = render_chat_template(template, list(_PROBE), **variables)
    except ChatTemplateError:
        return False
    return reasoning_started_from_prompt(prompt)


def parser_for_template(
    template: str,
    format: str | None = None,
    *,
    template_variables: Mapping[str, Any] | None = None,
    **options: Any,
) -> ToolCallParser:
    """The parser for the format ``template`` uses (``format`` overrides detection), starting
    in reasoning when the template's generation prompt opens it. ``options`` go to the parser
    (an explicit ``reasoning_started`` wins). Raises ``ValueError`` when no format is known."""
    from tooluse.formats.registry import get_parser
    from tooluse.formats.template_detect import detect_format

    name = format or detect_format(template)
    if name is None:
        raise ValueError("no tool-call format detected in the chat template; pass format=")
    if "reasoning_started" not in options and reasoning_started_from_template(
        template, **dict(template_variables or {})
    ):
        options["reasoning_started"] = True
    return get_parser(name, **options)
