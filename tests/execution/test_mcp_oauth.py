"""OAuth 2.1 against a real authorization server on 127.0.0.1 (``oauth_server.py``: an MCP
server over HTTP that registers clients and approves every authorization).

The "browser" is an HTTP client that opens the authorization URL and follows its redirect to
tooluse's loopback listener, as a browser would after the user approved. Tokens are kept on
disk, readable by the user only, and reused (and refreshed) by the next connection.
"""

from __future__ import annotations

import asyncio
import json
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest

from tooluse.errors import MCPError
from tooluse.execution.mcp import MCPOAuth, MCPServerConfig, MCPToolExecutor

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).parent / "mcp_servers" / "oauth_server.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(expires: int = 3600):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, str(port), str(expires)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            assert process.poll() is None, "the OAuth test server exited"
            time.sleep(0.1)
    process.kill()
    raise AssertionError("the OAuth test server did not listen")


@pytest.fixture
def oauth_server():
    process, url = start()
    yield url
    process.terminate()
    process.wait(timeout=10)


class Browser:
    """Opens authorization URLs and follows the redirect, as the user's browser would."""

    def __init__(self, refuse: bool = False) -> None:
        self.opened: list[str] = []
        self.refuse = refuse

    async def __call__(self, url: str) -> None:
        self.opened.append(url)
        async with httpx2.AsyncClient() as http:
            if self.refuse:  # the user said no: the server redirects with an error
                query = parse_qs(urlsplit(url).query)
                target = query["redirect_uri"][0]
                error = {"error": "access_denied", "state": query["state"][0]}
                await http.get(f"{target}?{urlencode(error)}")
                return
            approved = await http.get(url)
            assert approved.status_code == 302, approved.text
            landed = await http.get(approved.headers["location"])
            assert landed.status_code == 200 and "Signed in." in landed.text


def config(url: str, token_dir: Path, browser) -> MCPServerConfig:
    return MCPServerConfig(
        url=url, name="oauth-demo", oauth=MCPOAuth(token_dir=token_dir, on_authorize=browser)
    )


async def events(mcp) -> dict:
    result = await mcp.call_tool("oauth_events")
    assert not result.is_error, result.output
    return json.loads(result.output)


async def test_the_first_connection_signs_in_and_keeps_the_tokens_private(oauth_server, tmp_path):
    browser = Browser()
    tokens = tmp_path / "tokens"
    async with MCPToolExecutor(config(oauth_server, tokens, browser)) as mcp:
        added = await mcp.call_tool("add", {"a": 2, "b": 3})
        counted = await events(mcp)
    assert (added.is_error, added.output) == (False, "5")
    [opened] = browser.opened
    query = parse_qs(urlsplit(opened).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["redirect_uri"][0].startswith("http://127.0.0.1:")
    assert counted == {"authorize": 1, "exchange": 1, "refresh": 0}
    [saved] = list(tokens.iterdir())
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o700
    data = json.loads(saved.read_text())
    assert data["server"] == oauth_server
    assert data["tokens"]["access_token"] and data["tokens"]["refresh_token"]
    assert data["client_info"]["client_id"]


async def test_the_next_connection_reuses_the_stored_tokens(oauth_server, tmp_path):
    tokens = tmp_path / "tokens"
    async with MCPToolExecutor(config(oauth_server, tokens, Browser())) as mcp:
        await mcp.call_tool("add", {"a": 1, "b": 1})
    again = Browser()
    async with MCPToolExecutor(config(oauth_server, tokens, again)) as mcp:
        added = await mcp.call_tool("add", {"a": 4, "b": 4})
        counted = await events(mcp)
    assert added.output == "8"
    assert again.opened == []  # no second sign-in
    assert counted["authorize"] == 1


async def test_an_expired_token_is_refreshed_without_a_new_sign_in(tmp_path):
    process, url = start(expires=1)
    try:
        tokens = tmp_path / "tokens"
        async with MCPToolExecutor(config(url, tokens, Browser())) as mcp:
            await mcp.call_tool("add", {"a": 1, "b": 2})
        before = json.loads(next(tokens.iterdir()).read_text())["tokens"]["access_token"]
        await asyncio.sleep(1.5)  # the access token is expired now
        again = Browser()
        async with MCPToolExecutor(config(url, tokens, again)) as mcp:
            added = await mcp.call_tool("add", {"a": 2, "b": 2})
            counted = await events(mcp)
        after = json.loads(next(tokens.iterdir()).read_text())["tokens"]["access_token"]
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert added.output == "4"
    assert again.opened == []
    assert counted["refresh"] >= 1 and counted["authorize"] == 1
    assert after != before


async def test_a_refused_sign_in_fails_the_connection_with_the_reason(oauth_server, tmp_path):
    with pytest.raises(MCPError, match="the authorization was refused: access_denied"):
        async with MCPToolExecutor(config(oauth_server, tmp_path, Browser(refuse=True))):
            pass


async def test_without_oauth_the_server_refuses_the_client(oauth_server):
    with pytest.raises(MCPError, match="oauth-demo"):
        async with MCPToolExecutor(MCPServerConfig(url=oauth_server, name="oauth-demo")):
            pass


def test_oauth_settings_are_checked():
    with pytest.raises(ValueError, match="oauth= applies only to url= servers"):
        MCPServerConfig(command="python", oauth=MCPOAuth())
    with pytest.raises(ValueError, match="not one string"):
        MCPOAuth(scopes="tools")
    with pytest.raises(ValueError, match="redirect_port"):
        MCPOAuth(redirect_port=70000)


def test_client_settings_are_checked():
    with pytest.raises(ValueError, match="need a client_id"):
        MCPOAuth(client_secret="s")
    with pytest.raises(ValueError, match="either client_id or client_metadata_url"):
        MCPOAuth(client_id="c", client_metadata_url="https://example.test/client.json")
    with pytest.raises(ValueError, match="https URL with a path"):
        MCPOAuth(client_metadata_url="http://example.test/client.json")
    with pytest.raises(ValueError, match="needs a client_id and either"):
        MCPOAuth(grant="client_credentials", client_id="c")
    with pytest.raises(ValueError, match="needs a client_id and either"):
        MCPOAuth(grant="client_credentials", client_id="c", client_secret="s", private_key="k")
    with pytest.raises(ValueError, match="private_key applies"):
        MCPOAuth(private_key="k")
    with pytest.raises(ValueError, match="needs a client_id, a client_secret and the issuer"):
        MCPOAuth(grant="jwt_bearer", client_id="c", client_secret="s", assertion=lambda a, r: "")
    with pytest.raises(ValueError, match="assertion goes with"):
        MCPOAuth(assertion=lambda a, r: "")
    with pytest.raises(ValueError, match="grant must be"):
        MCPOAuth(grant="password")  # type: ignore[arg-type]
    assert "s3cret" not in repr(MCPOAuth(client_id="c", client_secret="s3cret"))
