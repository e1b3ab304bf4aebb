"""Schema checks and loop glue for MCP tools: advertised schemas, arguments, tool functions.

No ``mcp`` import here: these work on plain JSON Schema dicts and tooluse types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from tooluse.errors import ToolArgumentError
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["MCPCaller", "check_advertised_schema", "check_arguments", "make_tool_function"]


class MCPCaller(Protocol):
    """What an MCP tool's function uses of its client (``MCPToolExecutor`` is one)."""

    async def execute_async(
        self, call: ToolCall, *, timeout: float | None = None, validate: bool = True
    ) -> ToolResult: ...


def check_advertised_schema(schema: Any) -> str | None:
    """Why an advertised input schema is unusable, or ``None`` when it is fine.

    It must be a JSON object schema (``type: object`` at the root, as MCP requires) and valid
    JSON Schema for its declared (or the latest) draft.
    """
    import jsonschema  # imported on use: `import tooluse` stays light
    from jsonschema.validators import validator_for

    if not isinstance(schema, Mapping):
        return f"input schema is not an object: {repr(schema)[:100]}"
    root_type = schema.get("type", "object")
    if root_type != "object":
        return f"input schema root type must be 'object', got {root_type!r}"
    problem = _structure_problem(schema)
    if problem is not None:
        return problem
    try:
        validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path) or "(root)"
        return f"invalid input schema at {where}: {exc.message}"[:500]
    except RecursionError:
        return "input schema is nested too deeply to check"
    return None


#: Containers (objects and arrays) nested deeper than this make a schema unusable: real tool
#: schemas stay far below it, and checking or validating deeper ones costs recursion.
MAX_SCHEMA_DEPTH = 64


def _structure_problem(schema: Mapping[str, Any]) -> str | None:
    """Too deep, or a ``$ref`` that does not resolve inside the schema (walked without recursion)."""
    anchors = set()
    refs: list[tuple[str, str]] = []
    stack: list[tuple[Any, int, str]] = [(schema, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            return f"input schema nests deeper than {MAX_SCHEMA_DEPTH} levels (at {path[:200]})"
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str):
                refs.append((ref, path or "(root)"))
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                anchors.add(anchor)
            stack.extend((value, depth + 1, f"{path}/{key}") for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, depth + 1, f"{path}/{i}") for i, value in enumerate(node))
    for ref, path in refs:
        if not ref.startswith("#"):
            return f"input schema $ref {ref!r} at {path} points outside the schema"
        if ref.startswith("#/") or ref == "#":
            if not _pointer_resolves(schema, ref[1:]):
                return f"input schema $ref {ref!r} at {path} does not resolve"
        elif ref[1:] not in anchors:
            return f"input schema $ref {ref!r} at {path} names no $anchor"
    return None


def _pointer_resolves(document: Any, pointer: str) -> bool:
    from urllib.parse import unquote

    node = document
    for raw in pointer.split("/")[1:]:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def check_arguments(definition: ToolDefinition, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments to send; :class:`ToolArgumentError` when they break the input schema.

    Uses the definition's own ``validate_arguments`` when it has one, so MCP tools are checked
    (and safely coerced) exactly like local tools; otherwise validates against
    ``parameters_schema`` with jsonschema.
    """
    validate = getattr(definition, "validate_arguments", None)
    if callable(validate):
        return dict(validate(dict(arguments)))
    from jsonschema.validators import validator_for

    schema = definition.parameters_schema
    validator = validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda error: list(error.path))
    if not errors:
        return dict(arguments)
    problems = [
        {"path": "/".join(str(part) for part in error.absolute_path), "message": error.message}
        for error in errors
    ]
    lines = [f"{p['path'] or '(arguments)'}: {p['message']}" for p in problems]
    raise ToolArgumentError(
        f"invalid arguments for {definition.name}: " + "; ".join(lines),
        tool_name=definition.name,
        errors=problems,  # type: ignore[arg-type]
        model_message=f"invalid arguments for {definition.name}: " + "; ".join(lines),
    )


def make_tool_function(executor: MCPCaller, name: str) -> Callable[..., Any]:
    """The async ``function`` of an MCP tool's ToolDefinition: calls the server.

    It returns the :class:`ToolResult` itself (text, structured content and ``is_error`` as the
    server sent them); the tool loop's executors pass a returned ToolResult through, setting
    the call id. Arguments are expected to be validated already by the caller (the loop does).
    """

    async def call_mcp_tool(**arguments: Any) -> ToolResult:
        call = ToolCall(name=name, arguments=arguments)
        return await executor.execute_async(call, validate=False)

    call_mcp_tool.__name__ = name
    call_mcp_tool.__qualname__ = name
    call_mcp_tool.__doc__ = f"Call the MCP tool {name!r}."
    return call_mcp_tool
