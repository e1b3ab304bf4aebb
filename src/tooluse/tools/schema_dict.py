"""``definition_from_schema_dict``: a :class:`ToolDefinition` from a provider-shaped tool dict.

A leaf below :mod:`tooluse.tools.normalise` and :mod:`tooluse.tools.class_tool`, which both use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tooluse.errors import ToolDefinitionError
from tooluse.tools.definition import ToolDefinition

__all__ = ["definition_from_schema_dict"]


def definition_from_schema_dict(
    schema: Mapping[str, Any], *, function: Callable[..., Any] | None = None
) -> ToolDefinition:
    """A definition from a provider-shaped tool dict (no implementation unless given)."""
    data: Mapping[str, Any] = schema
    if isinstance(data.get("function"), Mapping):  # OpenAI Chat
        data = data["function"]
    elif isinstance(data.get("toolSpec"), Mapping):  # Bedrock
        data = data["toolSpec"]
    name = data.get("name")
    if not isinstance(name, str):
        raise ToolDefinitionError(f"tool schema without a name: keys {sorted(schema)}")
    params: Any = None
    for key in ("parameters", "input_schema", "inputSchema", "parametersJsonSchema"):
        if key in data:
            params = data[key]
            break
    if isinstance(params, Mapping) and set(params) == {"json"}:  # Bedrock inputSchema
        params = params["json"]
    if params is None:
        params = {"type": "object", "properties": {}}
    if not isinstance(params, Mapping):
        raise ToolDefinitionError(f"tool {name!r}: the parameters schema must be an object")
    output = data.get("outputSchema") or data.get("output_schema")
    return ToolDefinition.from_schema(
        name,
        dict(params),
        description=str(data.get("description") or ""),
        function=function,
        output_schema=dict(output) if isinstance(output, Mapping) else None,
    )
