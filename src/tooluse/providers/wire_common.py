"""Pure helpers shared by the wire adapters: history grouping, arguments, tool choice, schemas.

Nothing here does I/O; every function maps values to values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Union

from tooluse.errors import IncompleteStreamError, ToolDefinitionError
from tooluse.messages import (
    ChatMessage,
    ProviderState,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)
from tooluse.providers.base import GenerationResult, ToolChoice
from tooluse.providers.call_ids import wire_tool_name
from tooluse.providers.history import validate_history
from tooluse.tools.definition import ToolDefinition, check_tool_name
from tooluse.tools.tool_names import original_tool_name, provider_tool_name

__all__ = [
    "SSE_DONE",
    "ResultBatch",
    "Turn",
    "decode_arguments",
    "group_turns",
    "log",
    "normalize_tool_choice",
    "replayable",
    "restore_tool_names",
    "system_text",
    "tool_schema",
    "tools_for_history",
    "wire_name",
]

log = logging.getLogger("tooluse.providers")

#: The ``type`` of the event the HTTP layer feeds a stream assembler for ``data: [DONE]``.
SSE_DONE = "[DONE]"


def cut_short(partial: GenerationResult, terminal: str) -> IncompleteStreamError:
    """The error for a stream that ended before ``terminal``; ``partial`` goes with it."""
    calls = ", ".join(c.name or "?" for c in partial.tool_calls)
    detail = f" (tool calls so far, possibly half-written: {calls})" if calls else ""
    return IncompleteStreamError(
        f"the stream ended before its terminal event {terminal}: the answer is incomplete{detail}",
        partial=partial,
    )


@dataclass(frozen=True, kw_only=True)
class ResultBatch:
    """The results answering one assistant turn, in that turn's call order."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]


Turn = Union[ChatMessage, ResultBatch]


def group_turns(messages: Sequence[ChatMessage], *, keep_system: bool = False) -> Iterator[Turn]:
    """Validated turns, with each run of tool messages folded into one batch in call order.

    System messages are skipped unless ``keep_system`` (providers with a separate system field
    take :func:`system_text`). Raises :class:`HistoryError` for histories a provider would reject.
    """
    checked = validate_history(messages)
    calls: tuple[ToolCall, ...] = ()
    pending: list[ToolResult] = []
    for message in checked:
        if message.role == "tool":
            assert message.result is not None  # validate_history guarantees it
            pending.append(message.result)
            continue
        if pending:
            yield _batch(calls, pending)
            pending = []
        if message.role == "system" and not keep_system:
            continue
        if message.role == "assistant":
            calls = message.tool_calls
        yield message
    if pending:
        yield _batch(calls, pending)


def _batch(calls: tuple[ToolCall, ...], results: list[ToolResult]) -> ResultBatch:
    order = {call.id: i for i, call in enumerate(calls)}
    ordered = sorted(results, key=lambda r: order[r.call_id])
    return ResultBatch(calls=calls, results=tuple(ordered))


def system_text(messages: Sequence[ChatMessage]) -> str:
    """All system messages joined (providers with a separate system field get them there)."""
    return "\n\n".join(m.content for m in messages if m.role == "system" and m.content)


def history_has_tools(messages: Sequence[ChatMessage]) -> bool:
    return any(m.tool_calls or m.role == "tool" for m in messages)


def decode_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Wire arguments to ``(arguments, raw_arguments)``.

    ``""``, ``None`` and ``"null"`` mean no arguments (``{}``). Text that is not a JSON object is
    kept whole in ``raw_arguments`` (with ``{}`` as arguments) so validation can tell the model.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return dict(raw), None
    if not isinstance(raw, str):
        return {}, json.dumps(raw)
    text = raw.strip()
    if not text or text == "null":
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, raw
    if isinstance(value, dict):
        return value, None
    return {}, raw


NormalizedChoice = Union[Literal["auto", "none", "required"], tuple[Literal["tool"], str]]


def normalize_tool_choice(choice: ToolChoice, tools: Sequence[ToolDefinition]) -> NormalizedChoice:
    """``"auto"``/``"none"``/``"required"`` or ``("tool", name)``; unknown names raise ``ValueError``."""
    if choice in ("auto", "none", "required"):
        return choice
    if choice == "any":
        return "required"
    names = [t.name for t in tools]
    if choice not in names:
        raise ValueError(
            f"tool_choice {choice!r} is neither auto/none/required nor an offered tool "
            f"({', '.join(names) or 'no tools offered'})"
        )
    return ("tool", choice)


def tool_schema(tool: ToolDefinition, dialect: str, *, strict: bool = False) -> dict[str, Any]:
    """The tool's definition in a provider dialect, from the definition's exporter when it has one.

    ``dialect`` is one of ``openai``, ``openai_responses``, ``anthropic``, ``gemini``, ``bedrock``.
    ``strict`` asks for the provider's strict (grammar-constrained) form where it has one.
    """
    exporter = getattr(tool, f"to_{dialect}_schema", None)
    if callable(exporter):
        try:
            exported = exporter(strict=True) if strict else exporter()
        except ImportError:  # exporter not available in this build; use the plain form below
            exported = None
        if isinstance(exported, dict):
            return exported
    params = _object_schema(tool.parameters_schema)
    if dialect == "openai":
        return {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": params},
        }
    if dialect == "openai_responses":
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": params,
        }
    if dialect == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": params}
    if dialect == "gemini":
        return {
            "name": tool.name,
            "description": tool.description,
            "parametersJsonSchema": params,
        }
    if dialect == "bedrock":
        return {
            "toolSpec": {
                "name": tool.name,
                "description": tool.description or tool.name,
                "inputSchema": {"json": params},
            }
        }
    raise ValueError(f"unknown schema dialect {dialect!r}")


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # Argument-less tools must still declare an object with properties for every provider.
    out = dict(schema)
    out.setdefault("type", "object")
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def _valid_tool_name(name: str) -> bool:
    try:
        check_tool_name(name)
    except ToolDefinitionError:
        return False
    return True


def wire_name(name: str, dialect: str) -> str:
    """The name to send for a tool, call or result named ``name`` in a schema ``dialect``.

    A valid tool name gets the provider's form, the same one its exported definition carries
    (``Calendar.create_event`` becomes ``Calendar__create_event`` where dots are refused); a
    name a model made up (``"get weather"``) gets a hashed stand-in that no tool can share.
    """
    if _valid_tool_name(name):
        return provider_tool_name(name, dialect)
    return wire_tool_name(name)


def restore_tool_names(
    result: GenerationResult, tools: Sequence[ToolDefinition], dialect: str
) -> GenerationResult:
    """``result`` with each call named as the offered tool whose wire name it carries."""
    names = [t.name for t in tools]
    mapping = {
        c.name: original_tool_name(c.name, dialect, names)
        for c in result.tool_calls
        if c.name not in names
    }
    mapping = {wire: original for wire, original in mapping.items() if wire != original}
    if not mapping:
        return result

    def renamed(call: ToolCall) -> ToolCall:
        return replace(call, name=mapping.get(call.name, call.name))

    message = result.message
    if message is not None:
        parts = tuple(renamed(p) if isinstance(p, ToolCall) else p for p in message.parts)
        message = replace(message, parts=parts, tool_calls=tuple(map(renamed, message.tool_calls)))
    return replace(result, tool_calls=tuple(map(renamed, result.tool_calls)), message=message)


def replayable(state: ProviderState | None, provider: str, model: str) -> ProviderState | None:
    """``state`` when it may be replayed to ``provider``/``model``, else ``None`` (dropped)."""
    if state is not None and state.replayable_to(provider, model):
        return state
    return None


def encode_assistant_parts(
    message: ChatMessage,
    provider: str,
    model: str,
    *,
    reasoning: Callable[[ProviderState], dict[str, Any] | None],
    text: Callable[[str], dict[str, Any]],
    call: Callable[[ToolCall], dict[str, Any]],
    drop_blank_text: bool = False,
) -> list[dict[str, Any]]:
    """An assistant turn's parts in order, each encoded by the provider's own function.

    Reasoning goes out only as state replayable to ``provider``/``model`` (``reasoning`` may
    still refuse it by returning ``None``); empty text parts are left out, and so are
    whitespace-only ones with ``drop_blank_text`` (Anthropic and Bedrock refuse text blocks
    without visible characters, which Claude itself emits as ``"\n\n"`` before a tool call).
    """
    out: list[dict[str, Any]] = []
    for part in message.ordered_parts():
        if isinstance(part, ReasoningPart):
            state = replayable(part.state, provider, model)
            block = reasoning(state) if state is not None else None
            if block is not None:
                out.append(block)
        elif isinstance(part, TextPart):
            if part.text.strip() if drop_blank_text else part.text:
                out.append(text(part.text))
        else:
            out.append(call(part))
    return out


def tools_for_history(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]
) -> tuple[ToolDefinition, ...]:
    """The tools to declare: ``tools``, or placeholders named after the history's calls.

    Anthropic and Bedrock reject a history holding tool blocks when no tool is declared, so a
    request without tools after tool turns declares the called names (object schema, no
    properties) instead of failing.
    """
    if tools or not history_has_tools(messages):
        return tuple(tools)
    names: dict[str, None] = {}
    for message in messages:
        for call in message.tool_calls:
            names.setdefault(call.name, None)
        if message.result is not None:
            names.setdefault(message.result.tool_name, None)
    log.info("declaring placeholder tools %s because the history holds tool blocks", list(names))
    placeholders = []
    for name in names:
        # Named as the history's calls are sent (see wire_name): valid names as they are (the
        # export maps them per provider), made-up ones as their hashed stand-in.
        placeholder = name if _valid_tool_name(name) else wire_tool_name(name)
        try:
            placeholders.append(
                ToolDefinition(name=placeholder, description="(earlier tool, no longer offered)")
            )
        except ToolDefinitionError:  # a made-up name no definition may carry; the call stays
            continue
    return tuple(placeholders)
