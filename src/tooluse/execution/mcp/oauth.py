"""OAuth 2.1 for HTTP MCP servers (see :class:`~tooluse.execution.mcp.config.MCPOAuth`).

The SDK's ``OAuthClientProvider`` runs the protocol (discovery, dynamic registration, the
authorization code with PKCE, refresh); this module gives it what it needs from tooluse:

- :class:`FileTokenStorage`: the tokens and the client registration of one server, in one
  JSON file that only the user can read (mode 0600, in a 0700 folder), written atomically;
- :class:`LoopbackReceiver`: the one-shot listener on ``127.0.0.1`` that the authorization
  server redirects the browser to, with the code;
- :func:`oauth_http_auth`: the ``httpx2.Auth`` for a config.

The SDK is reached through :mod:`~tooluse.execution.mcp.sdk`; this module is imported only
when a server with ``oauth=`` connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import logging
import os
import socket
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tooluse.errors import MCPError
from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.execution.mcp.config import MCPOAuth

__all__ = ["FileTokenStorage", "LoopbackReceiver", "default_token_dir", "oauth_http_auth"]

logger = logging.getLogger("tooluse.mcp")

_PAGE = (
    b"<!doctype html><title>tooluse</title>"
    b"<p>%s</p><p>You can close this window and go back to tooluse.</p>"
)


def default_token_dir() -> Path:
    """Where tokens are kept unless ``MCPOAuth.token_dir`` says otherwise."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("tooluse", appauthor=False)) / "mcp-oauth"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` for one server URL: ``{"tokens": ..., "client_info": ...}``.

    A missing or unreadable file means nothing is stored (the user signs in again).
    """

    def __init__(self, directory: Path, server_url: str, client_id: str | None = None) -> None:
        # A client registered beforehand gets a file of its own: tokens of one client are never
        # offered as another's.
        key = server_url if client_id is None else f"{server_url}\n{client_id}"
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        self.path = directory / f"{digest}.json"
        self.server_url = server_url

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("server") == self.server_url else {}

    def _write(self, key: str, value: Any) -> None:
        data = self._read()
        data.update({"server": self.server_url, key: value})
        self._save(data)

    def _save(self, data: dict[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o700)
        temporary = directory / f".{self.path.name}.{os.getpid()}.tmp"
        # Created with 0600 (never readable by others, not even for a moment), then renamed.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(temporary, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)

    async def get_tokens(self) -> Any:
        raw = self._read().get("tokens")
        return mcp_sdk.oauth_parts().OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: Any) -> None:
        data = self._read()
        data.update(
            server=self.server_url, tokens=tokens.model_dump(mode="json", exclude_none=True)
        )
        # A token's lifetime is relative to when it was issued: keep the moment it ends.
        data["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        self._save(data)

    def expires_at(self) -> float | None:
        """When the stored access token ends (``None``: unknown or no token)."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    async def get_client_info(self) -> Any:
        raw = self._read().get("client_info")
        return mcp_sdk.oauth_parts().OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: Any) -> None:
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))

    def registered_port(self) -> int | None:
        """The port of the redirect URI the stored registration was made with."""
        uris = (self._read().get("client_info") or {}).get("redirect_uris") or []
        port = urlsplit(str(uris[0])).port if uris else None
        return port if isinstance(port, int) else None

    def forget_client(self) -> None:
        """Drop the stored registration, whose redirect URI can no longer be served (the client
        registers again on its next sign-in; the tokens stay usable until then)."""
        data = self._read()
        if data.pop("client_info", None) is not None:
            self._save(data)


class LoopbackReceiver:
    """One authorization response received on ``http://127.0.0.1:PORT/callback``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: asyncio.AbstractServer | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        """Listen (before the browser is sent to the authorization server)."""
        if self._server is not None:
            return
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", self.port)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), timeout=10)
            while (await asyncio.wait_for(reader.readline(), timeout=10)).strip():
                pass  # the headers are not needed
        except (asyncio.TimeoutError, ConnectionError):
            writer.close()
            return
        parts = request_line.decode("latin-1").split()
        target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
        params = {k: v[0] for k, v in parse_qs(target.query).items()}
        found = target.path == "/callback" and ("code" in params or "error" in params)
        status = b"200 OK" if found else b"404 Not Found"
        message = b"Signed in." if "code" in params else b"The sign-in did not succeed."
        body = _PAGE % (message if found else b"Not found.")
        header = b"HTTP/1.1 %s\r\nContent-Type: text/html\r\nContent-Length: %d\r\n" % (
            status,
            len(body),
        )
        writer.write(header + b"Connection: close\r\n\r\n" + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()
        if found and self._result is not None and not self._result.done():
            self._result.set_result(params)

    async def wait(self, timeout: float) -> dict[str, str]:
        """The redirect's query parameters (``code`` and ``state``, or ``error``)."""
        assert self._result is not None, "start() first"
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout=timeout)
        except asyncio.TimeoutError:
            raise MCPError(f"no OAuth approval arrived within {timeout:g}s") from None
        finally:
            await self.stop()

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        # as the listener will bind it: a port whose last connection is in TIME_WAIT is free
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _choose_port(oauth: MCPOAuth, storage: FileTokenStorage) -> int:
    """The configured port, else the one registered before (if still free), else a free one."""
    if oauth.redirect_port:
        if storage.registered_port() not in (None, oauth.redirect_port):
            storage.forget_client()
        return oauth.redirect_port
    registered = storage.registered_port()
    if registered is not None and _port_is_free(registered):
        return registered
    if registered is not None:
        storage.forget_client()  # registered with a port that is taken now: register again
    return _free_port()


async def _show(oauth: MCPOAuth, server: str, url: str) -> None:
    if oauth.on_authorize is not None:
        outcome = oauth.on_authorize(url)
        if inspect.isawaitable(outcome):
            await outcome
        return
    print(f"To let tooluse use {server}, open this address and approve:\n{url}", file=sys.stderr)
    if oauth.open_browser:
        import webbrowser

        with contextlib.suppress(Exception):
            await asyncio.to_thread(webbrowser.open, url)


@cache
def _provider_class() -> Any:
    """The SDK's provider, told when a stored token ends (and given a client registered
    beforehand, when there is one).

    The SDK keeps a token's end time only for tokens it obtained itself; a token read from
    storage counts as valid until the server rejects it, which then starts a new sign-in
    instead of a refresh. Setting the stored end time lets an expired token be refreshed.
    (If the SDK renames the hook, tokens still work: expired ones cost a new sign-in.)
    """
    base = mcp_sdk.oauth_parts().OAuthClientProvider

    class StoredExpiryProvider(base):  # type: ignore[misc, valid-type]
        #: A client registered beforehand (``MCPOAuth.client_id``): no dynamic registration.
        preregistered: Any = None

        async def _initialize(self) -> None:
            await super()._initialize()
            if self.preregistered is not None:
                self.context.client_info = self.preregistered
            storage = self.context.storage
            ends = storage.expires_at() if isinstance(storage, FileTokenStorage) else None
            if ends is not None and self.context.current_tokens is not None:
                self.context.token_expiry_time = ends

    return StoredExpiryProvider


def oauth_http_auth(oauth: MCPOAuth, server_url: str, label: str) -> Any:
    """The ``httpx2.Auth`` that signs requests to ``server_url`` in (see the module docs)."""
    directory = Path(oauth.token_dir).expanduser() if oauth.token_dir else default_token_dir()
    storage = FileTokenStorage(directory, server_url, oauth.client_id)
    if oauth.grant == "client_credentials":
        return _client_credentials_auth(oauth, server_url, storage)
    if oauth.grant == "jwt_bearer":
        return _identity_assertion_auth(oauth, server_url, storage)
    parts = mcp_sdk.oauth_parts()
    receiver = LoopbackReceiver(_choose_port(oauth, storage))

    async def redirect(url: str) -> None:
        await receiver.start()
        await _show(oauth, label, url)

    async def callback() -> Any:
        params = await receiver.wait(oauth.callback_timeout)
        if "error" in params:
            reason = params.get("error_description") or params["error"]
            raise parts.OAuthFlowError(f"the authorization was refused: {reason}")
        return parts.AuthorizationCodeResult(
            code=params["code"], state=params.get("state"), iss=params.get("iss")
        )

    metadata = parts.OAuthClientMetadata(
        redirect_uris=[receiver.redirect_uri],
        client_name=oauth.client_name,
        scope=" ".join(oauth.scopes) or None,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    provider = _provider_class()(
        server_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=oauth.client_metadata_url,
    )
    if oauth.client_id:
        method = oauth.token_endpoint_auth or (
            "client_secret_basic" if oauth.client_secret else "none"
        )
        provider.preregistered = parts.OAuthClientInformationFull(
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            redirect_uris=[receiver.redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method=method,
            scope=" ".join(oauth.scopes) or None,
        )
    return provider


def _client_credentials_auth(oauth: MCPOAuth, server_url: str, storage: FileTokenStorage) -> Any:
    """The SDK's machine-to-machine providers: a client secret, or a JWT signed with a key."""
    import warnings

    parts = mcp_sdk.oauth_parts()
    assert oauth.client_id is not None  # MCPOAuth checks it
    scope = " ".join(oauth.scopes) or None
    with warnings.catch_warnings():
        # Without an issuer the SDK warns that the MCP server picks the authorization server;
        # MCPOAuth.issuer documents that choice for the user.
        warnings.simplefilter("ignore", parts.MCPDeprecationWarning)
        if oauth.private_key is not None:
            signer = parts.SignedJWTParameters(
                issuer=oauth.client_id,
                subject=oauth.client_id,
                signing_key=oauth.private_key,
                signing_algorithm=oauth.signing_algorithm,
            )
            return parts.PrivateKeyJWTOAuthProvider(
                server_url,
                storage,
                client_id=oauth.client_id,
                assertion_provider=signer.create_assertion_provider(),
                scope=scope,
                issuer=oauth.issuer,
            )
        assert oauth.client_secret is not None
        return parts.ClientCredentialsOAuthProvider(
            server_url,
            storage,
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            token_endpoint_auth_method=oauth.token_endpoint_auth or "client_secret_basic",
            scope=scope,
            issuer=oauth.issuer,
        )


def _identity_assertion_auth(oauth: MCPOAuth, server_url: str, storage: FileTokenStorage) -> Any:
    """The SDK's enterprise-managed authorization: an ID-JAG exchanged at ``oauth.issuer``."""
    parts = mcp_sdk.oauth_parts()
    assertion = oauth.assertion
    assert assertion is not None and oauth.client_id and oauth.client_secret and oauth.issuer

    async def identity_assertion(audience: str, resource: str) -> str:
        outcome = assertion(audience, resource)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return str(outcome)

    method = oauth.token_endpoint_auth or "client_secret_post"
    return parts.IdentityAssertionOAuthProvider(
        server_url,
        storage,
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
        issuer=oauth.issuer,
        assertion_provider=identity_assertion,
        scope=" ".join(oauth.scopes) or None,
        token_endpoint_auth_method=method,
    )
