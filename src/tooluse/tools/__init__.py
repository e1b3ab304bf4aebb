"""Tool definitions, registries, argument validation and schema export."""

from tooluse.tools.argument_validation import Coercion, ValidationReport
from tooluse.tools.callable_schema import ToolDefinitionWarning
from tooluse.tools.class_tool import Tool
from tooluse.tools.definition import (
    ToolDefinition,
    ToolParameter,
    ToolParameterType,
    check_tool_name,
    sanitize_tool_name,
)
from tooluse.tools.injection import Injected, ToolContext
from tooluse.tools.manager import ToolManager
from tooluse.tools.normalise import as_tool, as_tools
from tooluse.tools.registry import DEFAULT_REGISTRY, ToolRegistry, tool
from tooluse.tools.schema_export import SchemaChange, SchemaExport

__all__ = [
    "DEFAULT_REGISTRY",
    "Coercion",
    "Injected",
    "SchemaChange",
    "SchemaExport",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolDefinitionWarning",
    "ToolManager",
    "ToolParameter",
    "ToolParameterType",
    "ToolRegistry",
    "ValidationReport",
    "as_tool",
    "as_tools",
    "check_tool_name",
    "sanitize_tool_name",
    "tool",
]
