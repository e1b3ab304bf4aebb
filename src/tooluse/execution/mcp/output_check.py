"""Why an MCP tool's result could not be taken, in words the model can act on.

The SDK checks a result's ``structuredContent`` against the tool's advertised ``outputSchema``
before handing it over, and raises when it does not match (or is missing). Such a result
becomes a failed :class:`~tooluse.messages.ToolResult` saying what is wrong, with the problem
in ``metadata["output_schema_error"]``; any other reply the SDK could not read is "malformed".
No ``mcp`` import here.
"""

from __future__ import annotations

from typing import Any

from tooluse.tools.definition import ToolDefinition

__all__ = ["result_problem"]


def _schema_error(exc: BaseException) -> Any:
    """The jsonschema ``ValidationError`` behind the SDK's error, if that is what it is."""
    cause = exc.__cause__
    named = cause is not None and type(cause).__name__ == "ValidationError"
    if named and hasattr(cause, "absolute_path") and hasattr(cause, "message"):
        return cause
    return None


def result_problem(
    exc: BaseException, tool_name: str, definition: ToolDefinition
) -> tuple[str, dict[str, Any]]:
    """The failure text and metadata for a result the SDK refused with ``exc``."""
    found = _schema_error(exc)
    if found is not None:
        where = "/".join(str(part) for part in found.absolute_path) or "(root)"
        problem = f"{where}: {found.message}"
        text = (
            f"tool {tool_name!r} returned structured content that does not match its output "
            f"schema ({problem})"
        )
        return text, {"output_schema_error": problem}
    message = str(exc)
    if definition.output_schema is not None and "did not return structured content" in message:
        problem = "no structured content"
        text = f"tool {tool_name!r} declares an output schema but returned no structured content"
        return text, {"output_schema_error": problem}
    if definition.output_schema is not None and message.startswith("Invalid schema for tool"):
        problem = f"invalid output schema: {message}"[:300]
        text = (
            f"tool {tool_name!r} advertises an output schema its result cannot be checked against"
        )
        return text, {"output_schema_error": problem}
    if "InputRequiredResult" in message:
        return f"the MCP server kept asking for input during {tool_name!r}: {message}", {}
    return f"MCP server sent a malformed result for {tool_name!r}: {exc}", {}
