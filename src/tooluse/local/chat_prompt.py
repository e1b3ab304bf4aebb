"""Chat-template rendering for local models: the template from the GGUF file (or a profile),
rendered by :func:`tooluse.formats.chat_template.render_chat_template`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.errors import ChatTemplateError

__all__ = ["ChatTemplateError", "render_prompt"]


def render_prompt(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text of role/content ``messages`` under a Jinja2 chat ``template``.

    Tools are already in the messages (the profile's system prompt), so none are passed.
    """
    from tooluse.formats.chat_template import render_chat_template

    return render_chat_template(
        template,
        list(messages),
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
    )
