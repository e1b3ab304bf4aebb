"""Messages as JSON-ready data and back, losing nothing a later request needs: calls with their
ids and provider state, results with their error flag, and the ordered parts of an assistant
turn (reasoning signatures included). Used by saved run states; values that are not JSON
(a tool's structured output, metadata) are kept as their JSON form or their text."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from tooluse.media import File, Image, MediaPart
from tooluse.messages import (
    AssistantPart,
    ChatMessage,
    ProviderState,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
)

__all__ = [
    "call_from_data",
    "call_to_data",
    "message_from_data",
    "message_to_data",
    "result_from_data",
    "result_to_data",
]


def _plain(value: Any) -> Any:
    """``value`` as JSON data (its text where it is not JSON)."""
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def _state_to_data(state: ProviderState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {"provider": state.provider, "model": state.model, "data": _plain(state.data)}


def _state_from_data(data: Mapping[str, Any] | None) -> ProviderState | None:
    if not data:
        return None
    return ProviderState(
        provider=data["provider"], model=data.get("model", ""), data=dict(data.get("data") or {})
    )


def call_to_data(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": _plain(call.arguments),
        "raw_arguments": call.raw_arguments,
        "state": _state_to_data(call.state),
        "synthetic_id": call.synthetic_id,
        **({"caller": call.caller} if call.caller is not None else {}),
    }


def call_from_data(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        id=data["id"],
        name=data["name"],
        arguments=dict(data.get("arguments") or {}),
        raw_arguments=data.get("raw_arguments"),
        state=_state_from_data(data.get("state")),
        synthetic_id=bool(data.get("synthetic_id")),
        caller=data.get("caller"),
    )


def result_to_data(result: ToolResult) -> dict[str, Any]:
    """A tool result as JSON data."""
    return {
        "call_id": result.call_id,
        "tool_name": result.tool_name,
        "output": result.output,
        "is_error": result.is_error,
        "structured": _plain(result.structured),
        "metadata": _plain(result.metadata),
        "parts": [_media_to_data(p) for p in result.parts],
    }


def _media_to_data(part: MediaPart) -> Any:
    if isinstance(part, str):
        return part
    kind = "image" if isinstance(part, Image) else "file"
    data = {"type": kind, "media_type": part.media_type, "data": part.base64}
    return {**data, "name": part.name} if isinstance(part, File) else data


def _media_from_data(data: Any) -> MediaPart:
    if isinstance(data, str):
        return data
    raw = base64.b64decode(data["data"])
    if data["type"] == "image":
        return Image(data=raw, media_type=data["media_type"])
    return File(data=raw, media_type=data["media_type"], name=data.get("name", "document"))


def result_from_data(data: Mapping[str, Any]) -> ToolResult:
    """The tool result :func:`result_to_data` wrote."""
    return ToolResult(
        call_id=data["call_id"],
        tool_name=data["tool_name"],
        output=data.get("output", ""),
        is_error=bool(data.get("is_error")),
        structured=data.get("structured"),
        metadata=dict(data.get("metadata") or {}),
        parts=tuple(_media_from_data(p) for p in data.get("parts") or ()),
    )


def _part_to_data(part: AssistantPart) -> dict[str, Any]:
    if isinstance(part, ToolCall):
        return {"type": "call", "call": call_to_data(part)}
    kind = "reasoning" if isinstance(part, ReasoningPart) else "text"
    return {"type": kind, "text": part.text, "state": _state_to_data(part.state)}


def _part_from_data(data: Mapping[str, Any]) -> AssistantPart:
    if data["type"] == "call":
        return call_from_data(data["call"])
    state = _state_from_data(data.get("state"))
    if data["type"] == "reasoning":
        return ReasoningPart(text=data.get("text", ""), state=state)
    return TextPart(text=data.get("text", ""), state=state)


def message_to_data(message: ChatMessage) -> dict[str, Any]:
    """A message as JSON-ready data (see :func:`message_from_data`)."""
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [call_to_data(c) for c in message.tool_calls],
        "result": result_to_data(message.result) if message.result is not None else None,
        "reasoning": message.reasoning,
        "name": message.name,
        "metadata": _plain(message.metadata),
        "parts": [_part_to_data(p) for p in message.parts],
    }


def message_from_data(data: Mapping[str, Any]) -> ChatMessage:
    """The message :func:`message_to_data` wrote."""
    result = data.get("result")
    return ChatMessage(
        role=data["role"],
        content=data.get("content", ""),
        tool_calls=tuple(call_from_data(c) for c in data.get("tool_calls") or ()),
        result=result_from_data(result) if result else None,
        reasoning=data.get("reasoning", ""),
        name=data.get("name"),
        metadata=dict(data.get("metadata") or {}),
        parts=tuple(_part_from_data(p) for p in data.get("parts") or ()),
    )
