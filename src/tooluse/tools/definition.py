"""The neutral description of a tool: ``ToolDefinition`` and its parameters.

A tool is described either by a tuple of :class:`ToolParameter` (the simple, llenvs-style form)
or by a full JSON Schema (``input_schema``) for anything richer. ``parameters_schema`` always
gives the JSON Schema of the argument object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["ToolDefinition", "ToolParameter", "ToolParameterType"]


class ToolParameterType(str, Enum):
    """JSON Schema type names of tool parameters."""

    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    BOOLEAN = "boolean"
    ARRAY = "array"
    OBJECT = "object"
    NULL = "null"


@dataclass(frozen=True)
class ToolParameter:
    """One parameter of a tool (positional construction is allowed, as in the llenvs docs)."""

    name: str
    type: ToolParameterType = ToolParameterType.STRING
    description: str = ""
    required: bool = True
    enum: tuple[Any, ...] | None = None
    default: Any = None
    items: dict[str, Any] | None = None
    schema: dict[str, Any] | None = None

    def to_json_schema(self) -> dict[str, Any]:
        """The JSON Schema of this parameter (``schema`` wins when given)."""
        if self.schema is not None:
            out = dict(self.schema)
        else:
            out = {"type": ToolParameterType(self.type).value}
            if self.items is not None:
                out["items"] = dict(self.items)
            if self.enum is not None:
                out["enum"] = list(self.enum)
            if not self.required and self.default is not None:
                out["default"] = self.default
        if self.description and "description" not in out:
            out["description"] = self.description
        return out


@dataclass(frozen=True, kw_only=True)
class ToolDefinition:
    """A tool: its name, description, argument schema and, optionally, its implementation.

    ``input_schema`` (full JSON Schema of the argument object) takes precedence over
    ``parameters`` when both are given. ``function`` is the callable that runs the tool;
    ``injected`` names its parameters that the caller supplies at run time (never the model).
    """

    name: str
    description: str = ""
    parameters: tuple[ToolParameter, ...] = ()
    is_terminal: bool = False
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    injected: tuple[str, ...] = ()
    annotations: dict[str, Any] = field(default_factory=dict, compare=False)
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """JSON Schema of the argument object."""
        if self.input_schema is not None:
            return self.input_schema
        props = {p.name: p.to_json_schema() for p in self.parameters}
        required = [p.name for p in self.parameters if p.required]
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        return schema

    def to_openai_schema(self) -> dict[str, Any]:
        """OpenAI Chat Completions tool schema (``{"type": "function", "function": {...}}``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema,
            },
        }
