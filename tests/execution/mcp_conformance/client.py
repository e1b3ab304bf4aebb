"""The MCP client that the official conformance suite drives: tooluse's own MCP client.

The suite runs ``python client.py URL`` once per client scenario, with the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` and its data (pre-registered credentials, keys) as JSON in
``MCP_CONFORMANCE_CONTEXT``. The client connects with :class:`MCPToolExecutor`, signing in
with :class:`MCPOAuth` where the scenario needs it, lists the tools and calls them the way the
scenario expects. It exits with status 1 (and the error on stderr) when something fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from urllib.parse import urlsplit

import httpx2

from tooluse.execution.mcp import (
    ElicitationResponse,
    MCPHandlers,
    MCPOAuth,
    MCPServerConfig,
    MCPToolExecutor,
)

#: The client id metadata document URL the suite expects where the server supports them.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

#: The arguments each scenario's tool expects (others get none).
ARGUMENTS = {"add_numbers": {"a": 5, "b": 3}}


async def approve(url: str) -> None:
    """The user's browser: the suite's authorization server approves at once and redirects to
    tooluse's loopback listener with the code, which this request then delivers."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as browser:
        await browser.get(url)


async def authorization_server_of(url: str) -> str:
    """The authorization server an MCP server names in its protected resource metadata."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    async with httpx2.AsyncClient(timeout=30) as http:
        for path in (parts.path, ""):
            found = await http.get(f"{origin}/.well-known/oauth-protected-resource{path}")
            if found.status_code == 200:
                return str(found.json()["authorization_servers"][0])
    raise RuntimeError(f"{url} names no authorization server")


def identity_provider(context: dict):
    """The organisation's identity provider, as the ``assertion`` of enterprise-managed
    authorization: the user's ID token exchanged for an ID-JAG (RFC 8693 token exchange)."""

    async def assertion(audience: str, resource: str) -> str:
        exchange = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": audience,
            "resource": resource,
            "subject_token": context["idp_id_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "client_id": context["idp_client_id"],
        }
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.post(context["idp_token_endpoint"], data=exchange)
        answer.raise_for_status()
        return str(answer.json()["access_token"])

    return assertion


async def oauth_for(url: str, scenario: str, context: dict, token_dir: str) -> MCPOAuth | None:
    if not scenario.startswith("auth/"):
        return None
    common = {"token_dir": token_dir, "on_authorize": approve, "client_name": "tooluse-conformance"}
    if "idp_id_token" in context:
        return MCPOAuth(
            token_dir=token_dir,
            grant="jwt_bearer",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            token_endpoint_auth="client_secret_basic",
            issuer=await authorization_server_of(url),
            assertion=identity_provider(context),
        )
    if scenario.startswith("auth/client-credentials-"):
        if "private_key_pem" in context:
            return MCPOAuth(
                token_dir=token_dir,
                grant="client_credentials",
                client_id=context["client_id"],
                private_key=context["private_key_pem"],
                signing_algorithm=context.get("signing_algorithm", "RS256"),
            )
        return MCPOAuth(
            token_dir=token_dir,
            grant="client_credentials",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
        )
    if "client_id" in context:  # a client registered beforehand
        return MCPOAuth(
            **common, client_id=context["client_id"], client_secret=context.get("client_secret")
        )
    return MCPOAuth(**common, client_metadata_url=CLIENT_METADATA_URL)


def accept_with_defaults(request):
    """Accept every question without filling anything in: the schema's defaults apply."""
    return ElicitationResponse.accept({})


async def run(url: str, scenario: str, context: dict) -> None:
    with tempfile.TemporaryDirectory() as token_dir:
        config = MCPServerConfig(
            url=url,
            timeout=20,
            startup_timeout=20,
            oauth=await oauth_for(url, scenario, context, token_dir),
        )
        handlers = MCPHandlers(elicitation=accept_with_defaults)
        async with MCPToolExecutor(config, handlers=handlers) as executor:
            tools = await executor.list_tools()
            for tool in tools:
                result = await executor.call_tool(tool.name, ARGUMENTS.get(tool.name, {}))
                print(f"{tool.name}: {result.output[:200]}")
                if result.is_error:
                    raise RuntimeError(f"{tool.name} failed: {result.output}")


def main() -> None:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        asyncio.run(run(url, scenario, context))
    except Exception as exc:
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
