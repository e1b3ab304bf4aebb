"""Rendering a model's Jinja2 chat template with tools, the way ``apply_chat_template`` does.

The template comes from a GGUF's ``tokenizer.chat_template`` metadata or a
``tokenizer_config.json``. It is rendered in a sandboxed Jinja2 environment with the same
conventions as Hugging Face transformers: ``trim_blocks``/``lstrip_blocks``, loop controls, a
``tojson`` filter that keeps non-ASCII text, ``raise_exception(message)``, ``strftime_now(fmt)``
and the ``{% generation %}`` block (rendered as its body). Tools become OpenAI function schemas
(``ToolDefinition.to_openai_schema()``); :class:`~tooluse.messages.ChatMessage` values become the
dicts templates expect, including assistant ``tool_calls`` and tool results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tooluse.errors import ChatTemplateError
from tooluse.messages import ChatMessage
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "chat_template_from_config",
    "message_to_template_dict",
    "render_chat_template",
    "template_uses_tools",
    "tool_to_template_dict",
]


class _GenerationBlock(Extension):
    """``{% generation %}...{% endgeneration %}`` marks assistant text for training masks; the
    text itself renders unchanged."""

    tags = {"generation"}

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols", _GenerationBlock],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@lru_cache(maxsize=32)
def _compile(template: str) -> jinja2.Template:
    try:
        return _environment().from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise ChatTemplateError(f"chat template does not compile: {exc}") from exc


@lru_cache(maxsize=32)
def template_uses_tools(template: str) -> bool:
    """Whether the template reads the ``tools`` variable (SmolLM2's, for one, does not)."""
    env = _environment()
    try:
        parsed = env.parse(template)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise ChatTemplateError(f"chat template does not compile: {exc}") from exc
    return "tools" in meta.find_undeclared_variables(parsed)


def tool_to_template_dict(tool: Any) -> dict[str, Any]:
    """A tool as templates expect it: the OpenAI function schema.

    Accepts a :class:`ToolDefinition`, anything :func:`tooluse.tools.as_tool` describes (a
    documented function, a ``Tool``), or a schema dict (passed through).
    """
    if isinstance(tool, Mapping):
        return dict(tool)
    if isinstance(tool, ToolDefinition):
        return tool.to_openai_schema()
    from tooluse.tools import as_tool

    definition: ToolDefinition = as_tool(tool)
    return definition.to_openai_schema()


#: The names a message's reasoning comes under, the standard one first.
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


def message_to_template_dict(message: ChatMessage | Mapping[str, Any]) -> dict[str, Any]:
    """A message as templates expect it (OpenAI chat shape; dicts pass through).

    Assistant tool calls carry their arguments as an object (templates apply ``tojson``); tool
    results carry ``tool_call_id`` and ``name``; reasoning goes in ``reasoning_content`` and, as
    transformers 5 passes it, in ``thinking`` (gpt-oss and LFM2.5 templates read that one). A
    dict's reasoning, under any of :data:`REASONING_KEYS`, is given both names the same way
    (a ``thinking`` it has is kept).
    """
    if not isinstance(message, ChatMessage):
        return _with_reasoning_names(dict(message))
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant":
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments
                        if call.raw_arguments is None
                        else call.raw_arguments,
                    },
                }
                for call in message.tool_calls
            ]
        if message.reasoning:
            out["reasoning_content"] = message.reasoning
            out["thinking"] = message.reasoning
    elif message.role == "tool":
        if message.result is not None:
            out["tool_call_id"] = message.result.call_id
            out["name"] = message.result.tool_name
        elif message.name:
            out["name"] = message.name
    elif message.name:
        out["name"] = message.name
    return out


def _with_reasoning_names(message: dict[str, Any]) -> dict[str, Any]:
    reasoning = next((message[k] for k in REASONING_KEYS if message.get(k) is not None), None)
    if reasoning is not None:
        message.setdefault("thinking", reasoning)
        message["reasoning_content"] = reasoning
    return message


def render_chat_template(
    template: str,
    messages: Sequence[ChatMessage | Mapping[str, Any]],
    *,
    tools: Sequence[Any] | None = None,
    add_generation_prompt: bool = True,
    tools_prompt: str | None = None,
    **extra: Any,
) -> str:
    """Render ``template`` for ``messages`` (and ``tools``) into the prompt text.

    ``tools_prompt`` is for templates without a tools section: when given and the template does
    not read ``tools``, the text goes into the system message (after its content, or as a new
    first system message), so tools are never dropped silently. ``extra`` reaches the template
    as variables (``bos_token``, ``eos_token``, ``enable_thinking``, ``documents``...). A
    template that calls ``raise_exception`` or fails to render raises
    :class:`~tooluse.errors.ChatTemplateError`.
    """
    compiled = _compile(template)
    dicts = [message_to_template_dict(m) for m in messages]
    if tools_prompt and not template_uses_tools(template):
        dicts = _with_system_text(dicts, tools_prompt)
    context: dict[str, Any] = {
        "messages": dicts,
        "tools": [tool_to_template_dict(t) for t in tools] if tools else None,
        "add_generation_prompt": add_generation_prompt,
    }
    context.update(extra)
    try:
        return compiled.render(**context)
    except jinja2.exceptions.TemplateError as exc:
        raise ChatTemplateError(f"chat template refused the conversation: {exc}") from exc
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ChatTemplateError(f"chat template failed to render: {exc}") from exc


def _with_system_text(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0])
        content = first.get("content") or ""
        first["content"] = f"{content}\n\n{text}" if content else text
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def chat_template_from_config(
    config: Mapping[str, Any], *, with_tools: bool = False, name: str | None = None
) -> str:
    """The chat template stored in a ``tokenizer_config.json`` (already loaded as a dict).

    The value is either one template or a list of ``{"name", "template"}``; like transformers,
    ``name`` picks one, else the ``tool_use`` template when tools are given and one exists, else
    ``default``.
    """
    value = config.get("chat_template")
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        named = {
            str(item.get("name")): str(item.get("template"))
            for item in value
            if isinstance(item, Mapping) and "template" in item
        }
        if name is not None:
            if name in named:
                return named[name]
            raise ChatTemplateError(f"no chat template named {name!r}; have {sorted(named)}")
        for choice in ("tool_use" if with_tools else "", "default"):
            if choice in named:
                return named[choice]
    raise ChatTemplateError("the tokenizer config has no usable chat_template")
