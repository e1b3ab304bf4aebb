"""``as_tool``: one :class:`ToolDefinition` from anything that describes a tool.

Accepted: a ``ToolDefinition``; a ``@tool``-decorated function; a class-based ``Tool``; a
pydantic model class; a provider schema dict (OpenAI Chat or Responses, Anthropic, Bedrock,
Gemini declaration, MCP tool); an object with ``name``/``inputSchema`` (an MCP ``Tool``); any
other callable (described by :meth:`ToolDefinition.from_callable`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from tooluse.errors import ToolDefinitionError
from tooluse.tools.class_tool import Tool
from tooluse.tools.definition import ToolDefinition
from tooluse.tools.schema_dict import definition_from_schema_dict

__all__ = ["TOOL_ATTRIBUTE", "as_tool", "as_tools", "definition_from_schema_dict"]

# Attribute under which ``@tool`` stores the definition on the decorated function.
TOOL_ATTRIBUTE = "__tool_definition__"


def as_tool(obj: Any) -> ToolDefinition:
    """The :class:`ToolDefinition` for ``obj``; raises :class:`ToolDefinitionError` otherwise."""
    if isinstance(obj, ToolDefinition):
        return obj
    attached = getattr(obj, TOOL_ATTRIBUTE, None)
    if isinstance(attached, ToolDefinition):
        if inspect.ismethod(obj) and attached.function is obj.__func__:
            # a method decorated in its class body, accessed on an instance: call it bound
            return dataclasses.replace(attached, function=obj)
        return attached
    if isinstance(obj, Tool):
        return obj.definition
    if inspect.isclass(obj):
        from pydantic import BaseModel

        if issubclass(obj, BaseModel):
            return ToolDefinition.from_model(obj)
        if issubclass(obj, Tool):
            return obj().definition
    if isinstance(obj, Mapping):
        return definition_from_schema_dict(obj)
    input_schema = getattr(obj, "inputSchema", None) or getattr(obj, "input_schema", None)
    if isinstance(getattr(obj, "name", None), str) and isinstance(input_schema, Mapping):
        return ToolDefinition.from_schema(
            obj.name,
            dict(input_schema),
            description=str(getattr(obj, "description", "") or ""),
        )
    if callable(obj):
        return ToolDefinition.from_callable(obj)
    raise ToolDefinitionError(
        f"cannot use {type(obj).__name__} as a tool: expected a function, a Tool, a "
        "ToolDefinition, a pydantic model class or a tool schema dict"
    )


def as_tools(objs: Iterable[Any]) -> tuple[ToolDefinition, ...]:
    """``as_tool`` for each item; duplicate names raise :class:`ToolDefinitionError`."""
    out = tuple(as_tool(o) for o in objs)
    names = [t.name for t in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ToolDefinitionError(f"duplicate tool names: {', '.join(duplicates)}")
    return out
