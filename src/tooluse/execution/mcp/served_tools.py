"""tooluse tools as an MCP server's tools: the listing, the results, and the low-level ``Server``
that :class:`~tooluse.execution.mcp.MCPToolServer` runs.

- :func:`mcp_tool_from_definition`: a :class:`ToolDefinition` as an MCP ``Tool``;
- :func:`call_tool_result_from_output`: a :class:`ToolResult` as a ``CallToolResult``: its text,
  and the images and files the tool returned as image blocks and embedded resources;
- :func:`build_server`: the ``Server`` answering ``tools/list`` and ``tools/call`` (each call
  runs with its :func:`~tooluse.execution.mcp.served_call.served_call` line to the client) and
  ``logging/setLevel``.

The SDK is reached through :mod:`~tooluse.execution.mcp.sdk`.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import quote

from pydantic_core import PydanticSerializationError, to_jsonable_python

from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.execution.mcp.served_call import ServedCall
from tooluse.media import File, Image, MediaPart
from tooluse.messages import ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "FILE_URI_PREFIX",
    "build_server",
    "call_tool_result_from_output",
    "content_block",
    "mcp_tool_from_definition",
    "served_output_schema",
]

types = mcp_sdk.mcp_types

#: The URI an embedded file gets: this prefix and its name.
FILE_URI_PREFIX = "tooluse://files/"


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


def mcp_tool_from_definition(definition: ToolDefinition, task_support: str | None = None) -> Any:
    """A :class:`ToolDefinition` as an MCP ``Tool`` (annotations with wire names are kept;
    ``task_support`` becomes ``execution.taskSupport``)."""
    known = {wire: key for key, wire in mcp_sdk.ANNOTATION_WIRE_NAMES.items()}
    fields = {known[k]: v for k, v in definition.annotations.items() if k in known}
    annotations = types.ToolAnnotations(**fields) if fields else None
    output_schema, _ = served_output_schema(definition)
    execution = None
    if task_support:
        execution = types.ToolExecution.model_validate({"taskSupport": task_support})
    return types.Tool(
        name=definition.name,
        description=definition.description or None,
        input_schema=definition.parameters_schema,
        output_schema=output_schema,
        annotations=annotations,
        execution=execution,
    )


def content_block(part: MediaPart) -> Any:
    """One part of a result (or of a prompt) as an MCP content block: a text, an image, or an
    embedded resource holding a file (as text for ``text/*`` files, else as data) whose URI is
    :data:`FILE_URI_PREFIX` and its name."""
    if isinstance(part, Image):
        return types.ImageContent(type="image", data=part.base64, mime_type=part.media_type)
    if isinstance(part, File):
        uri = FILE_URI_PREFIX + quote(part.name)
        resource: Any
        if part.media_type.startswith("text/"):
            text = part.data.decode("utf-8", errors="replace")
            resource = types.TextResourceContents(uri=uri, text=text, mime_type=part.media_type)
        else:
            blob = part.base64
            resource = types.BlobResourceContents(uri=uri, blob=blob, mime_type=part.media_type)
        return types.EmbeddedResource(type="resource", resource=resource)
    return types.TextContent(type="text", text=str(part))


def _media_json(part: MediaPart) -> Any:
    """A result part as JSON the way its annotation's output schema describes it (an image or
    a file: its fields, the data in base64)."""
    if isinstance(part, File):
        return {"data": part.base64, "media_type": part.media_type, "name": part.name}
    if isinstance(part, Image):
        return {"data": part.base64, "media_type": part.media_type}
    return part


def call_tool_result_from_output(
    result: ToolResult, *, wrap: bool = False, declares_output: bool = False
) -> Any:
    """A :class:`ToolResult` as an MCP ``CallToolResult``.

    The content is the output text, or, when the tool returned images or files, each of its
    parts in order (:func:`content_block`). Structured output (models and dataclasses made
    JSON-able) goes into ``structured_content`` when it is a JSON object, or always when ``wrap``
    is set (as ``{"result": value}``, matching :func:`served_output_schema`). A tool that
    ``declares_output`` (an output schema) and returned images or files gets them as structured
    content too (their fields, the data in base64), as its schema says.
    """
    structured: Any = None
    value: Any = None
    has_value = not result.is_error and result.structured is not None
    if has_value:
        try:
            value = to_jsonable_python(result.structured)
        except (TypeError, ValueError, PydanticSerializationError):
            value = None
    elif not result.is_error and result.parts and declares_output:
        media = [_media_json(part) for part in result.parts]
        value, has_value = (media[0] if len(media) == 1 else media), True
    if has_value and wrap:
        structured = {"result": value}
    elif has_value and isinstance(value, dict):
        structured = value
    if result.parts and not result.is_error:
        content = [content_block(part) for part in result.parts]
    else:
        content = [types.TextContent(type="text", text=result.output)]
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error
    )


class _LogLevels:
    """The log level each client connection asked for (``logging/setLevel``)."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    @staticmethod
    def _key(context: Any) -> Any:
        # The connection outlives the per-request session objects; the SDK keeps it private.
        session = context.session
        return getattr(session, "_connection", session)

    def get(self, context: Any) -> str | None:
        return self._levels.get(self._key(context))

    async def on_set_level(self, context: Any, params: Any) -> Any:
        self._levels[self._key(context)] = params.level
        return types.EmptyResult()


def build_server(
    name: str,
    definitions: list[ToolDefinition],
    run_tool: Callable[[str, dict[str, Any]], Awaitable[ToolResult]],
    *,
    version: str = "",
    handlers: dict[str, Any] | None = None,
    task_support: Mapping[str, str] | None = None,
    subscriptions: Any = None,
) -> Any:
    """A low-level MCP ``Server`` that lists ``definitions`` and answers calls with ``run_tool``.

    ``run_tool(name, arguments)`` is awaited and must return a :class:`ToolResult`; it runs with
    the call's :class:`~tooluse.execution.mcp.served_call.ServedCall` current. Unknown names
    are answered with the JSON-RPC "invalid params" error, as the protocol asks. ``handlers``
    are more ``Server`` keywords (the resource and prompt handlers); ``task_support`` each
    tool's ``execution.taskSupport`` to advertise; ``subscriptions`` the resource
    subscriptions a call may notify.
    """
    by_name = {definition.name: definition for definition in definitions}
    support = task_support or {}
    tools = [mcp_tool_from_definition(d, support.get(d.name)) for d in definitions]
    wrapped = {d.name for d in definitions if served_output_schema(d)[1]}
    declared = {d.name for d in definitions if d.output_schema is not None}
    levels = _LogLevels()

    async def on_list_tools(_ctx: Any, _params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        if params.name not in by_name:
            raise mcp_sdk.SDKError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        call = ServedCall(ctx, params.name, levels.get(ctx), subscriptions)
        token = call.bind()
        try:
            result = await run_tool(params.name, dict(params.arguments or {}))
        finally:
            ServedCall.unbind(token)
        return call_tool_result_from_output(
            result, wrap=params.name in wrapped, declares_output=params.name in declared
        )

    def input_schema(tool_name: str) -> dict[str, Any] | None:
        definition = by_name.get(tool_name)
        return None if definition is None else definition.parameters_schema

    options: dict[str, Any] = {"version": version, "get_tool_input_schema": input_schema}
    if definitions:
        options.update(on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        options["on_set_logging_level"] = levels.on_set_level
    options.update(handlers or {})
    with warnings.catch_warnings():  # logging is deprecated only for 2026-07-28 clients
        warnings.simplefilter("ignore")
        return mcp_sdk.Server(name, **options)
