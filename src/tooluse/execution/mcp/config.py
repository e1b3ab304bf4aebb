"""Where MCP servers are and which of their tools to use: :class:`MCPServerConfig`.

Configs are built directly, or read from the ``mcpServers`` JSON that MCP clients share
(Claude Desktop, Cursor, VS Code...) with :func:`load_mcp_servers`::

    {"mcpServers": {
        "time": {"command": "python", "args": ["-m", "mcp_server_time"]},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}
    }}

The package's leaf: the other MCP modules build on these types, this module on none of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["MCPOAuth", "MCPServerConfig", "load_mcp_servers"]

_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, kw_only=True)
class MCPOAuth:
    """OAuth 2.1 for an HTTP server (the SDK's OAuth client).

    By default (``grant="authorization_code"``) the user signs in: on the first connection the
    client registers itself with the server's authorization server (dynamic registration), the
    user approves in a browser, and the authorization server redirects to a one-shot listener on
    ``http://127.0.0.1:PORT/callback`` (authorization code with PKCE). Tokens (and the
    registration) are kept in ``token_dir`` (default: the user's data dir,
    ``tooluse/mcp-oauth``), one file per server URL (and client id) readable by the user only
    (mode 0600), and refreshed when they expire.

    - ``scopes``: the scopes to ask for (none: the server's default);
    - ``redirect_port``: the listener's port (0: a free one, then the same once registered);
    - ``on_authorize``: called with the authorization URL instead of printing it and opening
      the browser (``open_browser=False`` only prints it); may be async;
    - ``callback_timeout``: seconds to wait for the user's approval (added to the server's
      ``startup_timeout``);
    - ``client_id`` (and ``client_secret``): a client registered with the authorization server
      beforehand, used instead of dynamic registration; ``token_endpoint_auth`` says how it
      authenticates at the token endpoint (``client_secret_basic``, the default with a secret,
      ``client_secret_post``, or ``none``, the default without one);
    - ``client_metadata_url``: an https URL serving the client's metadata document, used as
      its client id where the authorization server supports that (instead of registering);
    - ``grant="client_credentials"``: no user and no browser: the client itself is
      authorized, with ``client_id`` and either ``client_secret`` or ``private_key`` (a PEM
      key signing a JWT assertion with ``signing_algorithm``: ``private_key_jwt``);
    - ``grant="jwt_bearer"``: enterprise-managed authorization (cross-app access, SEP-990):
      ``assertion(audience, resource)`` (possibly async) returns an identity assertion grant
      (ID-JAG) the organisation's identity provider issued for that authorization server
      (``audience``) and MCP server (``resource``); it is exchanged, with ``client_id`` and
      ``client_secret``, for an access token at ``issuer`` (required: no discovery);
    - ``issuer``: the authorization server the client's credentials belong to; they are then
      never sent to another one (recommended with a secret or a key).
    """

    token_dir: str | Path | None = None
    client_name: str = "tooluse"
    scopes: tuple[str, ...] = ()
    redirect_port: int = 0
    open_browser: bool = True
    on_authorize: Callable[[str], Any] | None = field(default=None, compare=False)
    callback_timeout: float = 300.0
    grant: Literal["authorization_code", "client_credentials", "jwt_bearer"] = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth: Literal["client_secret_basic", "client_secret_post", "none"] | None = None
    client_metadata_url: str | None = None
    private_key: str | None = field(default=None, repr=False)
    signing_algorithm: str = "RS256"
    issuer: str | None = None
    assertion: Callable[[str, str], Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.scopes, str):
            raise ValueError("MCPOAuth.scopes must be a sequence of strings, not one string")
        object.__setattr__(self, "scopes", tuple(self.scopes))
        if not 0 <= self.redirect_port < 65536:
            raise ValueError("MCPOAuth.redirect_port must be between 0 and 65535")
        if not self.callback_timeout > 0:
            raise ValueError("MCPOAuth.callback_timeout must be positive")
        self._check_client()

    def _check_client(self) -> None:
        if self.grant not in ("authorization_code", "client_credentials", "jwt_bearer"):
            raise ValueError(
                "MCPOAuth.grant must be 'authorization_code', 'client_credentials' or "
                f"'jwt_bearer', got {self.grant!r}"
            )
        if (self.assertion is not None) != (self.grant == "jwt_bearer"):
            raise ValueError("MCPOAuth.assertion goes with grant='jwt_bearer' (and it needs one)")
        if (self.client_secret or self.token_endpoint_auth) and not self.client_id:
            raise ValueError("MCPOAuth.client_secret and token_endpoint_auth need a client_id")
        if self.client_metadata_url is not None:
            if self.client_id:
                raise ValueError("give MCPOAuth either client_id or client_metadata_url, not both")
            parts = urlsplit(self.client_metadata_url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise ValueError(
                    "MCPOAuth.client_metadata_url must be an https URL with a path, got "
                    f"{self.client_metadata_url!r}"
                )
        if self.grant != "client_credentials" and self.private_key is not None:
            raise ValueError("MCPOAuth.private_key applies to grant='client_credentials'")
        if self.grant == "authorization_code":
            return
        if self.grant == "jwt_bearer":
            if not (self.client_id and self.client_secret and self.issuer):
                raise ValueError(
                    "grant='jwt_bearer' needs a client_id, a client_secret and the issuer"
                )
            if self.token_endpoint_auth == "none":
                raise ValueError("grant='jwt_bearer' cannot use token_endpoint_auth='none'")
            return
        if not self.client_id or (self.client_secret is None) == (self.private_key is None):
            raise ValueError(
                "grant='client_credentials' needs a client_id and either a client_secret or "
                "a private_key"
            )
        if self.token_endpoint_auth == "none":
            raise ValueError("grant='client_credentials' cannot use token_endpoint_auth='none'")
        if self.private_key is not None and self.token_endpoint_auth is not None:
            raise ValueError("a private_key authenticates with its JWT: no token_endpoint_auth")


@dataclass(frozen=True, kw_only=True)
class MCPServerConfig:
    """How to reach one MCP server.

    Give ``command`` (and ``args``, ``env``, ``cwd``) for a stdio server started as a
    subprocess, ``url`` (and optional ``headers``) for a streamable HTTP server, or ``server``
    (an SDK ``MCPServer``/``Server`` object, e.g. ``MCPToolServer(...).lowlevel_server()``) to
    talk to it in process, without a subprocess or a socket (tests, embedding).

    - ``timeout``: seconds allowed for each call (and each tool listing);
    - ``startup_timeout``: seconds allowed to start the server and finish the handshake;
    - ``tool_prefix``: prepended to every tool name (``"time_"`` -> ``time_get_current_time``)
      to keep names apart when several servers are used together;
    - ``include_tools`` / ``exclude_tools``: server-side tool names to keep (``None``: all) or
      to hide; hidden tools are neither listed nor callable;
    - ``name``: a label for messages (defaults to the command or URL);
    - ``max_output_chars``: a tool result's text is cut to this many characters, with a marker,
      like a local tool's output;
    - ``max_reply_bytes``: a stdio server's reply longer than this is dropped as it arrives
      and its request fails with that reason (``None``: the SDK's own, unbounded reader);
    - ``oauth``: an :class:`MCPOAuth` signs in to an HTTP server with OAuth 2.1;
    - ``protocol``: ``"auto"`` negotiates the protocol revision (2026-07-28 with current
      servers, the 2025-11-25 handshake with older ones); ``"2025-11-25"`` always uses the
      handshake, which servers need that send sampling, elicitation or roots requests in the
      middle of a call (2026-07-28 has no such requests: it asks through ``input_required``
      results instead); ``"2026-07-28"`` adopts that revision without probing;
    - ``task_threshold``: tasks (protocol 2025-11-25; see :mod:`~tooluse.execution.mcp.tasks`).
      A tool whose ``execution.taskSupport`` is ``required`` always runs as a task; one that
      says ``optional`` runs as a task when its call may take longer than this many seconds
      (its timeout is longer), so that a long call does not hang on one open request;
      ``None``: ``optional`` tools never run as tasks.

    ``env`` is added to a small safe default environment (``PATH``, ``HOME``...), as the SDK does.
    """

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = None
    timeout: float = 30.0
    startup_timeout: float = 30.0
    tool_prefix: str = ""
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    name: str | None = None
    max_output_chars: int = 20_000
    max_reply_bytes: int | None = 16 * 1024 * 1024
    protocol: str = "auto"
    task_threshold: float | None = 60.0
    oauth: MCPOAuth | None = None
    server: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        targets = [self.command is not None, self.url is not None, self.server is not None]
        if sum(targets) != 1:
            raise ValueError(
                "MCPServerConfig needs exactly one of command= (stdio), url= (HTTP) "
                "or server= (in process)"
            )
        for label in ("args", "include_tools", "exclude_tools"):
            value = getattr(self, label)
            if isinstance(value, str):
                raise ValueError(
                    f"MCPServerConfig.{label} must be a sequence of strings, not one string"
                )
            if value is not None:
                object.__setattr__(self, label, tuple(str(item) for item in value))
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"MCPServerConfig.url must be an http(s) URL, got {self.url!r}")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError("args=, env= and cwd= apply only to command= servers")
        if self.url is None and self.headers:
            raise ValueError("headers= applies only to url= servers")
        if self.url is None and self.oauth is not None:
            raise ValueError("oauth= applies only to url= servers")
        for label in ("timeout", "startup_timeout"):
            if not getattr(self, label) > 0:
                raise ValueError(f"MCPServerConfig.{label} must be positive")
        if self.task_threshold is not None and not self.task_threshold >= 0:
            raise ValueError("MCPServerConfig.task_threshold must be at least 0 (or None)")
        if self.max_output_chars < 1:
            raise ValueError("MCPServerConfig.max_output_chars must be at least 1")
        if self.max_reply_bytes is not None and self.max_reply_bytes < 1024:
            raise ValueError("MCPServerConfig.max_reply_bytes must be at least 1024 (or None)")
        if self.protocol != "auto" and not _REVISION.fullmatch(self.protocol):
            raise ValueError(
                "MCPServerConfig.protocol must be 'auto' or a protocol revision such as "
                f"'2025-11-25', got {self.protocol!r}"
            )

    @property
    def label(self) -> str:
        """A short human name for this server."""
        if self.name:
            return self.name
        if self.url is not None:
            return self.url
        if self.server is not None:
            return str(getattr(self.server, "name", None) or "in-process server")
        return " ".join((str(self.command), *self.args))

    @property
    def transport(self) -> str:
        """``"stdio"``, ``"http"`` or ``"in-process"``."""
        if self.server is not None:
            return "in-process"
        return "http" if self.url is not None else "stdio"

    def trace_attributes(self) -> dict[str, Any]:
        """The server as OpenTelemetry attributes of its calls (the MCP semantic conventions:
        ``network.transport``, ``server.address``/``server.port``; the name as
        ``tooluse.mcp.server.name``). No URL path or query, no command arguments: they may
        hold secrets."""
        attributes: dict[str, Any] = {"tooluse.mcp.transport": self.transport}
        name = self.name
        if self.url is not None:
            parts = urlsplit(self.url)
            default_port = 443 if parts.scheme == "https" else 80
            attributes["network.transport"] = "tcp"
            attributes["network.protocol.name"] = "http"
            attributes["server.address"] = parts.hostname or ""
            attributes["server.port"] = parts.port or default_port
            name = name or parts.hostname
        elif self.command is not None:
            attributes["network.transport"] = "pipe"
            name = name or os.path.basename(self.command)
        attributes["tooluse.mcp.server.name"] = name or self.label
        return attributes

    def wants_tool(self, server_name: str) -> bool:
        """Whether the server-side tool ``server_name`` passes the include/exclude filters."""
        if self.include_tools is not None and server_name not in self.include_tools:
            return False
        return server_name not in self.exclude_tools


class _ServerEntry(BaseModel):
    """One ``mcpServers`` entry as MCP clients write it (unknown keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    type: Literal["stdio", "http", "streamable-http", "streamableHttp", "sse"] | None = None
    timeout: float | None = None
    protocol: str | None = None  # tooluse's own key (MCPServerConfig.protocol)


def load_mcp_servers(
    source: Mapping[str, Any] | str | Path,
    *,
    prefix_with_name: bool = False,
    timeout: float | None = None,
) -> tuple[MCPServerConfig, ...]:
    """Configs from ``mcpServers`` JSON: a mapping, JSON text or a path to a JSON file.

    Each server is named by its key; ``prefix_with_name=True`` also prefixes its tools with
    ``<name>_``. ``timeout`` applies to every server that sets none. Raises ``ValueError`` naming
    the server whose entry is invalid (SSE servers are not supported: use streamable HTTP).
    """
    if isinstance(source, Path) or (
        isinstance(source, str) and not source.lstrip().startswith("{")
    ):
        text = Path(source).read_text(encoding="utf-8")
        data: Any = json.loads(text)
    elif isinstance(source, str):
        data = json.loads(source)
    else:
        data = source
    if not isinstance(data, Mapping):
        raise ValueError("an MCP servers config must be a JSON object")
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, Mapping) or not servers:
        raise ValueError('an MCP servers config needs a non-empty "mcpServers" object')
    configs = []
    for name, raw in servers.items():
        try:
            entry = _ServerEntry.model_validate(raw)
        except ValidationError as exc:
            raise ValueError(f"MCP server {name!r}: {exc}") from exc
        if entry.type == "sse":
            raise ValueError(
                f"MCP server {name!r}: SSE servers are not supported; use streamable HTTP"
            )
        seconds = entry.timeout if entry.timeout is not None else timeout
        extra: dict[str, Any] = {"timeout": seconds} if seconds is not None else {}
        if entry.protocol is not None:
            extra["protocol"] = entry.protocol
        try:
            configs.append(
                MCPServerConfig(
                    command=entry.command,
                    args=tuple(entry.args),
                    env=entry.env,
                    cwd=entry.cwd,
                    url=entry.url,
                    headers=entry.headers,
                    name=str(name),
                    tool_prefix=f"{name}_" if prefix_with_name else "",
                    **extra,
                )
            )
        except ValueError as exc:
            raise ValueError(f"MCP server {name!r}: {exc}") from exc
    return tuple(configs)
