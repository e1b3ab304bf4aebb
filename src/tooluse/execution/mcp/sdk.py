"""The one module that imports the official ``mcp`` SDK, and the pure conversions around it.

Supported SDK: ``mcp`` 2.x (tested with 2.3), whose results use snake_case fields
(``input_schema``, ``structured_content``, ``is_error``) and whose ``Client`` negotiates the
protocol version itself (``server/discover`` first, then the classic ``initialize`` handshake).
The newest protocol revision it speaks is :data:`LATEST_PROTOCOL_VERSION` (the SDK's
``mcp.types.LATEST_PROTOCOL_VERSION``: 2026-07-28 with mcp 2.3).
Everything else in tooluse reaches the SDK through this module, so ``import tooluse`` never
imports ``mcp`` and a missing SDK raises :class:`~tooluse.errors.MissingDependencyError`.

The conversions here are pure functions:

- :func:`tool_definition_from_mcp`: an advertised MCP tool -> :class:`ToolDefinition`;
- :func:`tool_result_from_mcp`: a ``CallToolResult`` -> :class:`ToolResult`.

The other way, serving tooluse tools, is :mod:`~tooluse.execution.mcp.served_tools`.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO

from tooluse.errors import MissingDependencyError
from tooluse.media import File, Image, MediaError
from tooluse.messages import ToolResult, render_output
from tooluse.tools.definition import TOOL_NAME_PATTERN, ToolDefinition, sanitize_tool_name

try:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import get_default_environment, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http import EventMessage
    from mcp.shared.exceptions import MCPError as SDKError
    from mcp.shared.message import SessionMessage
    from mcp.shared.uri_template import UriTemplate
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("mcp", "mcp") from exc

__all__ = [
    "CONNECTION_CLOSED",
    "ANNOTATION_WIRE_NAMES",
    "LATEST_PROTOCOL_VERSION",
    "REQUEST_TIMEOUT",
    "Client",
    "EventMessage",
    "SDKError",
    "Server",
    "SessionMessage",
    "UriTemplate",
    "check_tool_result",
    "connection_lost",
    "describe_content_block",
    "get_default_environment",
    "list_tools_page",
    "mcp_types",
    "oauth_parts",
    "open_client",
    "raw_requests_possible",
    "sdk_version",
    "send_raw",
    "serve_http",
    "serve_stdio",
    "server_task_support",
    "session_closed",
    "tool_definition_from_mcp",
    "tool_result_from_mcp",
]

CONNECTION_CLOSED: int = mcp_types.CONNECTION_CLOSED
REQUEST_TIMEOUT: int = mcp_types.REQUEST_TIMEOUT
LATEST_PROTOCOL_VERSION: str = mcp_types.LATEST_PROTOCOL_VERSION
#: How long a client of a served HTTP server waits before it resumes a broken event stream.
RECONNECT_MS = 1000

# Annotation fields of the SDK (snake_case in v2) mapped to the wire names other tools expect.
ANNOTATION_WIRE_NAMES = {
    "title": "title",
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def oauth_parts() -> Any:
    """The SDK's OAuth client parts, imported on first use: ``OAuthClientProvider``,
    ``OAuthClientMetadata``, ``OAuthToken``, ``OAuthClientInformationFull``,
    ``AuthorizationCodeResult``, ``OAuthFlowError``, the client-credentials providers
    (``ClientCredentialsOAuthProvider``, ``PrivateKeyJWTOAuthProvider``,
    ``SignedJWTParameters``), ``IdentityAssertionOAuthProvider`` (enterprise-managed
    authorization) and ``MCPDeprecationWarning``."""
    from types import SimpleNamespace

    from mcp.client.auth import OAuthClientProvider, OAuthFlowError
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
        OAuthClientMetadata,
        OAuthToken,
    )
    from mcp.shared.exceptions import MCPDeprecationWarning

    return SimpleNamespace(
        OAuthClientProvider=OAuthClientProvider,
        OAuthClientMetadata=OAuthClientMetadata,
        OAuthToken=OAuthToken,
        OAuthClientInformationFull=OAuthClientInformationFull,
        AuthorizationCodeResult=AuthorizationCodeResult,
        OAuthFlowError=OAuthFlowError,
        ClientCredentialsOAuthProvider=ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider=PrivateKeyJWTOAuthProvider,
        SignedJWTParameters=SignedJWTParameters,
        IdentityAssertionOAuthProvider=IdentityAssertionOAuthProvider,
        MCPDeprecationWarning=MCPDeprecationWarning,
    )


def sdk_version() -> str:
    """The installed ``mcp`` version."""
    from importlib.metadata import version

    return version("mcp")


# ---------------------------------------------------------------------------------------------
# Connecting


def open_client(  # noqa: PLR0913 - the client's settings, all keyword-only
    *,
    server: Any = None,
    transport: Any = None,
    command: str | None,
    args: tuple[str, ...],
    env: dict[str, str] | None,
    cwd: str | None,
    url: str | None,
    headers: dict[str, str] | None,
    timeout: float,
    errlog: TextIO,
    protocol: str = "auto",
    callbacks: dict[str, Any] | None = None,
    http_auth: Any = None,
) -> Any:
    """An un-entered SDK ``Client`` for an in-process server, a stdio command or an HTTP URL.

    ``transport`` (streams already set up, such as the bounded stdio transport) wins over
    ``command``, which otherwise starts with the SDK's own ``stdio_client``; the server's stderr
    goes to ``errlog`` (a real file) so that startup failures can quote it. ``protocol`` is
    ``"auto"`` or a revision (a handshake-era one means the ``initialize`` handshake);
    ``callbacks`` are the Client's sampling, elicitation and roots keywords; ``http_auth``
    an ``httpx2.Auth`` for an HTTP server (the OAuth provider).
    """
    if server is not None:
        transport = server  # the SDK connects to a Server/MCPServer object in process
    elif transport is not None:
        pass
    elif url is not None:
        transport = _http_transport(url, dict(headers or {}), http_auth)
    else:
        assert command is not None
        params = StdioServerParameters(command=command, args=list(args), env=env, cwd=cwd)
        transport = stdio_client(params, errlog=errlog)
    mode = "legacy" if protocol in HANDSHAKE_PROTOCOL_VERSIONS else protocol
    return Client(transport, read_timeout_seconds=timeout, mode=mode, **(callbacks or {}))


@contextlib.asynccontextmanager
async def _http_transport(
    url: str, headers: dict[str, str], auth: Any = None
) -> AsyncIterator[Any]:
    """Streamable HTTP with extra headers (and ``auth``) and replies too deep for the SDK's
    parser made readable (:mod:`~tooluse.execution.mcp.deep_replies`); the HTTP client we
    create is closed with it."""
    import httpx2  # the SDK's own HTTP client; a dependency of mcp 2.x

    from tooluse.execution.mcp.deep_replies import readable_replies

    # The SDK's defaults: a long read timeout, since a server may hold a response stream open
    # (per-call timeouts are enforced by the client session, not by HTTP reads).
    timeout = httpx2.Timeout(30.0, read=300.0)
    hooks = {"response": [readable_replies]}
    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, event_hooks=hooks
        ) as http_client,
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
    return {ANNOTATION_WIRE_NAMES.get(key, key): value for key, value in raw.items()}


async def list_tools_page(
    client: Any, cursor: str | None, timeout: float
) -> tuple[list[Any], dict[str, str], str | None]:
    """One ``tools/list`` page, each tool checked on its own.

    Returns the well-formed tools (SDK ``Tool`` objects), the malformed ones (name -> reason;
    a tool with no usable name is named by its position, ``#3``) and the next cursor. The
    SDK's own ``list_tools`` validates the page as a whole, so one malformed tool would make
    every tool of the server unusable. The good tools are handed back to the SDK session as
    its own listing would be, so it can check their structured results later.
    """
    from pydantic import ValidationError

    session = client.session
    if not raw_requests_possible(client):  # another SDK layout: the whole page at once
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        return list(page.tools), {}, page.next_cursor
    # The SDK's send_request checks the result as a whole; its raw request (with the same
    # protocol headers) lets each tool be checked alone.
    raw = await send_raw(client, "tools/list", {"cursor": cursor} if cursor else None, timeout)
    if not isinstance(raw, dict):
        raise ValueError(f"the tool list is not an object: {type(raw).__name__}")
    entries = raw.get("tools")
    if not isinstance(entries, list):
        raise ValueError(f"the tool list is not a list: {type(entries).__name__}")
    next_cursor = raw.get("nextCursor")
    next_cursor = next_cursor if isinstance(next_cursor, str) else None
    tools: list[Any] = []
    rejected: dict[str, str] = {}
    for index, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        label = name if isinstance(name, str) and name else f"#{index}"
        try:
            tools.append(mcp_types.Tool.model_validate(entry))
        except (ValidationError, RecursionError) as exc:
            rejected[label] = f"malformed tool entry: {_first_problem(exc)}"
    absorb = getattr(session, "_absorb_tool_listing", None)
    if callable(absorb):  # private in the SDK: skipped (harmlessly) if it goes away
        listing = mcp_types.ListToolsResult(tools=tools, next_cursor=next_cursor)
        tools = list(absorb(listing, complete=cursor is None and next_cursor is None).tools)
    return tools, rejected, next_cursor


def raw_requests_possible(client: Any) -> bool:
    """Whether the SDK session exposes what :func:`send_raw` uses (private in the SDK)."""
    session = getattr(client, "session", None)
    return callable(getattr(session, "_stamp", None)) and hasattr(session, "_dispatcher")


async def send_raw(client: Any, method: str, params: dict[str, Any] | None, timeout: float) -> Any:
    """One request sent as it is and its result returned as raw JSON (a dict, unless the
    server broke the protocol).

    The session's own protocol stamp (headers, and the ``_meta`` of newer revisions) is applied,
    but not its result checks: a tool listing is checked tool by tool, and the task methods of
    protocol 2025-11-25 (``tasks/get``...) are types only in the SDK, which never sends them.
    Raises the SDK's ``MCPError`` for an error reply, a timeout or a closed connection.
    """
    session = client.session
    data: dict[str, Any] = {"method": method}
    if params is not None:
        data["params"] = dict(params)
    options: dict[str, Any] = {"timeout": timeout}
    session._stamp(data, options)
    return await session._dispatcher.send_raw_request(data["method"], data.get("params"), options)


def server_task_support(client: Any) -> tuple[bool, bool]:
    """Whether the server runs ``tools/call`` as tasks, and whether it takes ``tasks/cancel``
    (its ``tasks`` capability: protocol 2025-11-25)."""
    capabilities = getattr(getattr(client, "session", None), "server_capabilities", None)
    tasks = getattr(capabilities, "tasks", None)
    if tasks is None:
        return False, False
    tools = getattr(getattr(tasks, "requests", None), "tools", None)
    return getattr(tools, "call", None) is not None, getattr(tasks, "cancel", None) is not None


async def check_tool_result(client: Any, name: str, result: Any) -> None:
    """The SDK's output-schema check of a result that did not come from ``call_tool`` (a task's
    result); raises ``RuntimeError`` as ``call_tool`` does."""
    if not result.is_error:
        await client.session.validate_tool_result(name, result)


def _first_problem(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "(tool)"
            return f"{where}: {first.get('msg', '')}"[:300]
        except (IndexError, TypeError, ValueError):
            pass
    return f"{type(exc).__name__}: {exc}"[:300]


def tool_definition_from_mcp(
    tool: Any, *, prefix: str = "", function: Callable[..., Any] | None = None
) -> ToolDefinition:
    """An advertised MCP ``Tool`` as a :class:`ToolDefinition`.

    The input schema is passed through as ``input_schema`` (only a missing ``type: object`` or
    ``properties`` is filled in); ``metadata`` records the
    server-side name (``mcp_name``) so a prefixed (or sanitised: MCP allows ``.`` in names,
    providers do not) tool can still be called, and the tool's ``execution.taskSupport``
    (``mcp_task_support``: ``optional`` or ``required``) when it may run as a task.
    """
    title = getattr(tool, "title", None)
    annotations = annotations_from_mcp(getattr(tool, "annotations", None))
    if title and "title" not in annotations:
        annotations["title"] = title
    metadata: dict[str, Any] = {"mcp_name": tool.name}
    task_support = getattr(getattr(tool, "execution", None), "task_support", None)
    if task_support in ("optional", "required"):
        metadata["mcp_task_support"] = task_support
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
        metadata=metadata,
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


def media_of_block(block: Any) -> Image | File | None:
    """An image block, or an embedded resource holding an image or a document, as a media part
    that passes through to the model; ``None`` for anything else (described as text)."""
    kind = getattr(block, "type", None)
    try:
        if kind == "image" and block.data:
            return Image(data=base64.b64decode(block.data), media_type=block.mime_type)
        blob = (
            getattr(getattr(block, "resource", None), "blob", None) if kind == "resource" else None
        )
        if blob:
            media_type = getattr(block.resource, "mime_type", None) or ""
            data = base64.b64decode(blob)
            if media_type.startswith("image/"):
                return Image(data=data, media_type=media_type)
            name = str(block.resource.uri).rsplit("/", 1)[-1] or "document"
            return File(data=data, media_type=media_type, name=name)
    except (MediaError, ValueError):  # a type or size no provider takes: described instead
        return None
    return None


def tool_result_from_mcp(
    call_id: str, tool_name: str, result: Any, *, max_output_chars: int | None = None
) -> ToolResult:
    """A ``CallToolResult`` as a :class:`ToolResult`.

    Text blocks are joined with newlines (other blocks are described in brackets); when there
    are no content blocks but structured content, the structured content is rendered as JSON.
    ``is_error`` maps to a failure whose text is the server's message. Text longer than
    ``max_output_chars`` is cut like a local tool's output (head and tail around a marker,
    ``truncated_chars`` in the metadata); structured content too large to show whole is
    dropped then (``structured_dropped`` in the metadata).
    """
    from tooluse.execution.base import truncate_output

    parts = [describe_content_block(block) for block in result.content]
    text = "\n".join(part for part in parts if part)
    structured = result.structured_content
    if not result.content and structured is not None:
        text = render_output(structured)  # an empty text block, by contrast, means ""
    metadata: dict[str, Any] = {"source": "mcp"}
    kinds = [getattr(block, "type", "unknown") for block in result.content]
    if any(kind != "text" for kind in kinds):
        metadata["content_types"] = kinds
    if max_output_chars is not None:
        text, removed = truncate_output(text, max_output_chars)
        if removed:
            metadata["truncated_chars"] = removed
            if structured is not None and len(render_output(structured)) > max_output_chars:
                structured = None
                metadata["structured_dropped"] = True
    if result.is_error:
        return ToolResult.failure(
            call_id, tool_name, text or "the MCP tool reported an error", **metadata
        )
    media = [(block, media_of_block(block)) for block in result.content]
    passed: tuple[Any, ...] = ()
    if any(m is not None for _, m in media):
        # images and documents go to the model as they are, in the server's order
        passed = tuple(m if m is not None else describe_content_block(b) for b, m in media)
    return ToolResult(
        call_id=call_id,
        tool_name=tool_name,
        output=text,
        structured=structured,
        metadata=metadata,
        parts=passed,
    )


def connection_lost(exc: Any, client: Any) -> bool:
    """Whether an SDK error means the connection is gone.

    The SDK reports a closed connection with code -32000, which is also the first code of
    JSON-RPC's server-error range: a server's own ``-32000`` error must be shown as its message.
    """
    if getattr(exc, "code", None) != CONNECTION_CLOSED:
        return False
    return client is None or session_closed(client)


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


async def serve_http(
    server: Any, *, host: str, port: int, path: str, event_store: Any = None
) -> None:
    """Serve a low-level ``Server`` over streamable HTTP at ``http://host:port/path``; with an
    ``event_store`` a client whose event stream broke resumes it (see
    :mod:`~tooluse.execution.mcp.event_store`)."""
    import uvicorn  # a dependency of mcp 2.x

    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        event_store=event_store,
        retry_interval=RECONNECT_MS if event_store is not None else None,
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
