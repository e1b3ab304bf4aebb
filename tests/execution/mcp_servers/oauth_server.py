"""An MCP server over streamable HTTP that is also its own OAuth 2.1 authorization server.

``python oauth_server.py PORT`` serves ``http://127.0.0.1:PORT/mcp``. Clients register
dynamically; ``/authorize`` approves at once (no login page: the test's "browser" just follows
the redirect) and remembers the PKCE challenge; codes and tokens live in memory; access tokens
expire after ``EXPIRES`` seconds (the second argument, default 3600) and can be refreshed. Like
real authorization servers, it accepts a token for ``LEEWAY`` seconds past its advertised end
(clock skew): a client that refreshes on time never meets a rejection, however slow the machine.
The ``oauth_events`` tool tells how many authorizations, code exchanges and refreshes happened.
"""

from __future__ import annotations

import secrets
import sys
import time
from urllib.parse import urlencode

from mcp.server.auth.provider import AccessToken, AuthorizationCode, RefreshToken
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthToken

PORT = int(sys.argv[1])
EXPIRES = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
BASE = f"http://127.0.0.1:{PORT}"
LEEWAY = 60
EVENTS = {"authorize": 0, "exchange": 0, "refresh": 0}


class MemoryAuthorizationServer:
    """Clients, codes and tokens in dictionaries; every authorization is approved."""

    def __init__(self) -> None:
        self.clients: dict = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params):
        EVENTS["authorize"] += 1
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["tools"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        query = {"code": code, **({"state": params.state} if params.state else {})}
        return f"{params.redirect_uri}?{urlencode(query)}"

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + EXPIRES + LEEWAY,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access, expires_in=EXPIRES, scope=" ".join(scopes), refresh_token=refresh
        )

    async def exchange_authorization_code(self, client, authorization_code):
        EVENTS["exchange"] += 1
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        EVENTS["refresh"] += 1
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, None)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(getattr(token, "token", ""), None)


server = MCPServer(
    "oauth-demo",
    auth_server_provider=MemoryAuthorizationServer(),
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["tools"], default_scopes=["tools"]
        ),
        required_scopes=["tools"],
        validate_token_resource=False,
    ),
    log_level="WARNING",
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def oauth_events() -> dict:
    """How many authorizations, code exchanges and token refreshes happened."""
    return dict(EVENTS)


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
