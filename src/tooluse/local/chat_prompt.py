"""Chat-template rendering for local models: the template from the GGUF file (or a profile),
rendered by :func:`tooluse.formats.chat_template.render_chat_template`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse.errors import ChatTemplateError
from tooluse.local.profiles import ToolPromptProfile
from tooluse.messages import ChatMessage
from tooluse.providers.base import without_media
from tooluse.tools.definition import ToolDefinition

__all__ = ["ChatTemplateError", "TurnText", "render_prompt"]


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


@dataclass(frozen=True, kw_only=True)
class TurnText:
    """How a model's conversations are written as text: its chat template, the profile that
    puts tools and calls into the messages, and its special tokens. The local backend renders
    its prompts with it, and training renders its examples with it (for a GGUF from the
    backend; for a transformers model from its tokenizer), so both are the same text."""

    chat_template: str
    profile: ToolPromptProfile
    bos: str = ""
    eos: str = ""
    model_name: str = ""

    def render(self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition] = ()) -> str:
        """The prompt text of ``messages`` with ``tools`` listed, up to the next assistant
        header (images and files as their text placeholders)."""
        dicts = self.profile.to_template_messages(without_media(messages, self.model_name), tools)
        return render_prompt(self.chat_template, dicts, bos_token=self.bos, eos_token=self.eos)

    def render_turn(
        self,
        history: Sequence[ChatMessage],
        reply: ChatMessage,
        tools: Sequence[ToolDefinition] = (),
    ) -> tuple[str, str]:
        """The prompt of ``reply``'s turn and the text the model writes for it, up to its
        end-of-turn token (calls in the profile's format, with ``tools`` listed)."""
        prompt = self.render(history, tools)
        dicts = self.profile.to_template_messages([*history, reply], tools)
        whole = render_prompt(
            self.chat_template,
            dicts,
            bos_token=self.bos,
            eos_token=self.eos,
            add_generation_prompt=False,
        )
        if not whole.startswith(prompt):
            raise ChatTemplateError(
                "the chat template renders a turn that does not extend its prompt"
            )
        completion = whole[len(prompt) :]
        end = completion.find(self.eos) if self.eos else -1
        return prompt, completion[: end + len(self.eos)] if end >= 0 else completion.rstrip()
