"""Chat-template rendering for local models (the template stored in the GGUF file).

Kept apart so that it can hand over to ``tooluse.formats`` chat-template rendering; it renders
with a sandboxed Jinja2 environment, as the Hugging Face tokenizers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from tooluse.errors import BackendError

__all__ = ["ChatTemplateError", "render_prompt"]


class ChatTemplateError(BackendError):
    """A model has no chat template, or its template fails on a conversation."""


def _raise(message: str) -> None:
    raise ChatTemplateError(f"the chat template refused the conversation: {message}")


@lru_cache(maxsize=8)
def _compile(template: str) -> Any:
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    try:
        return env.from_string(template)
    except TemplateError as exc:
        raise ChatTemplateError(f"the model's chat template does not compile: {exc}") from exc


def render_prompt(
    template: str,
    messages: Sequence[dict[str, Any]],
    *,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text of ``messages`` under a Jinja2 chat ``template``."""
    from jinja2 import TemplateError

    try:
        return str(
            _compile(template).render(
                messages=list(messages),
                bos_token=bos_token,
                eos_token=eos_token,
                add_generation_prompt=add_generation_prompt,
            )
        )
    except TemplateError as exc:
        raise ChatTemplateError(f"the chat template failed: {exc}") from exc
