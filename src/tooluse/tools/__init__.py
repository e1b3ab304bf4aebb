"""Tool definitions, registries, argument validation and schema export."""

from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

__all__ = ["ToolDefinition", "ToolParameter", "ToolParameterType"]
