"""The one module that imports the official ``mcp`` SDK, and the pure conversions around it.

Supported SDK: ``mcp`` 2.x (tested with 2.3), whose results use snake_case fields
(``input_schema``, ``structured_content``, ``is_error``) and whose ``Client`` negotiates the
protocol version itself (``server/discover`` first, then the classic ``initialize`` handshake).
Everything else in tooluse reaches the SDK through this module, so ``import tooluse`` never
imports ``mcp`` and a missing SDK raises :class:`~tooluse.errors.MissingDependencyError`.

The conversions here are pure functions:

- :func:`tool_definition_from_mcp`: an advertised MCP tool -> :class:`ToolDefinition`;
- :func:`tool_result_from_mcp`: a ``CallToolResult`` -> :class:`ToolResult`;
- :func:`mcp_tool_from_definition` / :func:`call_tool_result_from_output`: the other way,
  for serving tooluse tools.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO

from pydantic_core import PydanticSerializationError, to_jsonable_python

from tooluse.errors import MissingDependencyError
from tooluse.messages import ToolResult, render_output
from tooluse.tools.definition import TOOL_NAME_PATTERN, ToolDefinition, sanitize_tool_name

try:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError as SDKError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("mcp", "mcp") from exc

__all__ = [
    "CONNECTION_CLOSED",
    "REQUEST_TIMEOUT",
    "Client",
    "SDKError",
    "Server",
    "build_server",
    "call_tool_result_from_output",
    "describe_content_block",
    "mcp_tool_from_definition",
    "open_client",
    "sdk_version",
    "serve_http",
    "serve_stdio",
    "served_output_schema",
    "session_closed",
    "tool_definition_from_mcp",
    "tool_result_from_mcp",
]

CONNECTION_CLOSED: int = mcp_types.CONNECTION_CLOSED
REQUEST_TIMEOUT: int = mcp_types.REQUEST_TIMEOUT

# Annotation fields of the SDK (snake_case in v2) mapped to the wire names other tools expect.
_ANNOTATION_WIRE_NAMES = {
    "title": "title",
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def sdk_version() -> str:
    """The installed ``mcp`` version."""
    from importlib.metadata import version

    return version("mcp")


# ---------------------------------------------------------------------------------------------
# Connecting


def open_client(
    *,
    server: Any = None,
    command: str | None,
    args: tuple[str, ...],
    env: dict[str, str] | None,
    cwd: str | None,
    url: str | None,
    headers: dict[str, str] | None,
    timeout: float,
    errlog: TextIO,
) -> Any:
    """An un-entered SDK ``Client`` for an in-process server, a stdio command or an HTTP URL.

    The server's stderr goes to ``errlog`` (a real file) so that startup failures can quote it.
    """
    transport: Any
    if server is not None:
        transport = server  # the SDK connects to a Server/MCPServer object in process
    elif url is not None:
        if headers:
            transport = _http_transport_with_headers(url, dict(headers))
        else:
            transport = streamable_http_client(url)
    else:
        assert command is not None
        params = StdioServerParameters(command=command, args=list(args), env=env, cwd=cwd)
        transport = stdio_client(params, errlog=errlog)
    return Client(transport, read_timeout_seconds=timeout)


@contextlib.asynccontextmanager
async def _http_transport_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with extra headers; the HTTP client we create is closed with it."""
    import httpx2  # the SDK's own HTTP client; a dependency of mcp 2.x

    # The SDK's defaults: a long read timeout, since a server may hold a response stream open
    # (per-call timeouts are enforced by the client session, not by HTTP reads).
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http_client,
        streamable_http_client(url, http_client=http_client) as streams,
    ):
        yield streams


# ---------------------------------------------------------------------------------------------
# MCP -> tooluse


def annotations_from_mcp(annotations: Any) -> dict[str, Any]:
    """Tool annotations as a plain dict with MCP wire names (``readOnlyHint``...), unset dropped."""
    if annotations is None:
        return {}
    raw = annotations.model_dump(exclude_none=True)
    return {_ANNOTATION_WIRE_NAMES.get(key, key): value for key, value in raw.items()}


def tool_definition_from_mcp(
    tool: Any, *, prefix: str = "", function: Callable[..., Any] | None = None
) -> ToolDefinition:
    """An advertised MCP ``Tool`` as a :class:`ToolDefinition`.

    The input schema is passed through as ``input_schema`` (only a missing ``type: object`` or
    ``properties`` is filled in); ``metadata`` records the
    server-side name (``mcp_name``) so a prefixed (or sanitised: MCP allows ``.`` in names,
    providers do not) tool can still be called.
    """
    title = getattr(tool, "title", None)
    annotations = annotations_from_mcp(getattr(tool, "annotations", None))
    if title and "title" not in annotations:
        annotations["title"] = title
    name = f"{prefix}{tool.name}"
    if not TOOL_NAME_PATTERN.match(name):
        # MCP allows dots and longer names; providers do not. The server-side name is kept.
        name = sanitize_tool_name(name)
    return ToolDefinition(
        name=name,
        description=tool.description or "",
        input_schema=_object_schema(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        function=function,
        annotations=annotations,
        metadata={"mcp_name": tool.name},
    )


def _object_schema(schema: Any) -> dict[str, Any]:
    """The advertised input schema, with ``type``/``properties`` filled in when left out.

    Servers may send ``{}`` for a tool without arguments; several providers reject a function
    schema without ``"type": "object"`` and ``properties``. Nothing else is changed.
    """
    out = dict(schema)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def describe_content_block(block: Any) -> str:
    """One content block as text for the model (non-text blocks are described, not dumped)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(base64.b64decode(block.data, validate=False)) if block.data else 0
        return f"[{kind}: {block.mime_type}, {size} bytes]"
    if kind == "resource_link":
        return f"[resource link: {block.name} <{block.uri}>]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        return f"[resource: {resource.uri}, {getattr(resource, 'mime_type', None) or 'binary'}]"
    return f"[{kind or 'unknown'} content]"


def tool_result_from_mcp(call_id: str, tool_name: str, result: Any) -> ToolResult:
    """A ``CallToolResult`` as a :class:`ToolResult`.

    Text blocks are joined with newlines (other blocks are described in brackets); when there
    are no content blocks but structured content, the structured content is rendered as JSON.
    ``is_error`` maps to a failure whose text is the server's message.
    """
    parts = [describe_content_block(block) for block in result.content]
    text = "\n".join(part for part in parts if part)
    structured = result.structured_content
    if not result.content and structured is not None:
        text = render_output(structured)  # an empty text block, by contrast, means ""
    metadata: dict[str, Any] = {"source": "mcp"}
    kinds = [getattr(block, "type", "unknown") for block in result.content]
    if any(kind != "text" for kind in kinds):
        metadata["content_types"] = kinds
    if result.is_error:
        return ToolResult.failure(
            call_id, tool_name, text or "the MCP tool reported an error", **metadata
        )
    return ToolResult(
        call_id=call_id,
        tool_name=tool_name,
        output=text,
        structured=structured,
        metadata=metadata,
    )


# ---------------------------------------------------------------------------------------------
# tooluse -> MCP (serving)


def served_output_schema(definition: ToolDefinition) -> tuple[dict[str, Any] | None, bool]:
    """The output schema to advertise, and whether results are wrapped as ``{"result": x}``.

    Protocol versions before 2026-07-28 allow only object output schemas, so any other schema is
    wrapped the way the SDK's own ``MCPServer`` does it.
    """
    schema = definition.output_schema
    if schema is None:
        return None, False
    if schema.get("type") == "object":
        return dict(schema), False
    wrapped = {"type": "object", "properties": {"result": dict(schema)}, "required": ["result"]}
    return wrapped, True


def mcp_tool_from_definition(definition: ToolDefinition) -> Any:
    """A :class:`ToolDefinition` as an MCP ``Tool`` (annotations with wire names are kept)."""
    known = {wire: key for key, wire in _ANNOTATION_WIRE_NAMES.items()}
    fields = {known[k]: v for k, v in definition.annotations.items() if k in known}
    annotations = mcp_types.ToolAnnotations(**fields) if fields else None
    output_schema, _ = served_output_schema(definition)
    return mcp_types.Tool(
        name=definition.name,
        description=definition.description or None,
        input_schema=definition.parameters_schema,
        output_schema=output_schema,
        annotations=annotations,
    )


def call_tool_result_from_output(result: ToolResult, *, wrap: bool = False) -> Any:
    """A :class:`ToolResult` as an MCP ``CallToolResult``.

    The text block always carries the full output. Structured output (models and dataclasses
    made JSON-able) goes into ``structured_content`` when it is a JSON object, or always when
    ``wrap`` is set (as ``{"result": value}``, matching :func:`served_output_schema`).
    """
    structured: Any = None
    if result.structured is not None and not result.is_error:
        try:
            value = to_jsonable_python(result.structured)
        except (TypeError, ValueError, PydanticSerializationError):
            value = None
        if wrap:
            structured = {"result": value}
        elif isinstance(value, dict):
            structured = value
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=result.output)],
        structured_content=structured,
        is_error=result.is_error,
    )


def build_server(
    name: str,
    definitions: list[ToolDefinition],
    run_tool: Callable[[str, dict[str, Any]], Any],
    *,
    version: str = "",
) -> Any:
    """A low-level MCP ``Server`` that lists ``definitions`` and answers calls with ``run_tool``.

    ``run_tool(name, arguments)`` is awaited and must return a :class:`ToolResult`; unknown
    names are answered with the JSON-RPC "invalid params" error, as the protocol asks.
    """
    by_name = {definition.name: definition for definition in definitions}
    tools = [mcp_tool_from_definition(definition) for definition in definitions]
    wrapped = {d.name for d in definitions if served_output_schema(d)[1]}

    async def on_list_tools(_ctx: Any, _params: Any) -> Any:
        return mcp_types.ListToolsResult(tools=tools)

    async def on_call_tool(_ctx: Any, params: Any) -> Any:
        if params.name not in by_name:
            raise SDKError(mcp_types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        result = await run_tool(params.name, dict(params.arguments or {}))
        return call_tool_result_from_output(result, wrap=params.name in wrapped)

    def input_schema(tool_name: str) -> dict[str, Any] | None:
        definition = by_name.get(tool_name)
        return None if definition is None else definition.parameters_schema

    return Server(
        name,
        version=version,
        get_tool_input_schema=input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def session_closed(client: Any) -> bool:
    """Whether the client's connection is known to be closed (the server exited, say).

    The SDK has no public flag for this; its dispatcher's ``_closed`` is read when present, and
    an unknown layout counts as open (the next call then reports the closed connection).
    """
    session = getattr(client, "_session", None)
    dispatcher = getattr(session, "_dispatcher", None) if session is not None else None
    return bool(getattr(dispatcher, "_closed", False))


async def serve_stdio(server: Any) -> None:
    """Serve a low-level ``Server`` over this process's stdin/stdout until the client leaves."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Any, *, host: str, port: int, path: str) -> None:
    """Serve a low-level ``Server`` over streamable HTTP at ``http://host:port/path``."""
    import uvicorn  # a dependency of mcp 2.x

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
