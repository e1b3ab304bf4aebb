"""`tooluse mcp list/call/serve` with real MCP servers.

``serve`` is checked with the SDK's own client (``mcp.Client``), over stdio and HTTP.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parent.parent / "execution" / "mcp_servers"
DEMO = str(SERVERS / "demo_server.py")
SERVED = str(SERVERS / "served_tools.py")
TOOLUSE = [sys.executable, "-c", "from tooluse.cli.app import main; main()"]

runner = CliRunner()


def test_list_prints_the_tools():
    result = runner.invoke(app, ["mcp", "list", "--", sys.executable, DEMO])
    assert result.exit_code == 0, result.output
    for name in ("add", "echo", "weather", "slow"):
        assert name in result.output
    assert "a: integer" in result.output


def test_list_json():
    result = runner.invoke(app, ["mcp", "list", "--json", "--", sys.executable, DEMO])
    assert result.exit_code == 0, result.output
    tools = {tool["name"]: tool for tool in json.loads(result.stdout)}
    assert tools["add"]["input_schema"]["required"] == ["a", "b"]
    assert tools["add"]["annotations"] == {"readOnlyHint": True}


def test_call_prints_the_output():
    args = ["mcp", "call", "add", "--args", '{"a": 2, "b": 40}', "--", sys.executable, DEMO]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "42"


def test_call_json_and_tool_error_exit_code():
    args = [
        "mcp",
        "call",
        "fail",
        "--json",
        "--args",
        '{"reason": "cli"}',
        "--",
        sys.executable,
        DEMO,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["is_error"] is True
    assert "refused: cli" in payload["output"]


def test_call_rejects_bad_json_arguments():
    result = runner.invoke(
        app, ["mcp", "call", "add", "--args", "{a: 1", "--", sys.executable, DEMO]
    )
    assert result.exit_code == 2
    assert "not valid JSON" in result.output


def test_call_needs_exactly_one_server():
    result = runner.invoke(app, ["mcp", "call", "add"])
    assert result.exit_code != 0
    assert "server command" in result.output


def test_list_reports_a_server_that_cannot_start():
    result = runner.invoke(app, ["mcp", "list", "--", "/no/such/server"])
    assert result.exit_code == 1
    assert "command not found" in result.output


def test_call_time_server_through_the_cli():
    import mcp_server_time  # noqa: F401  (installed by make install; absent is a failure)

    args = [
        "mcp",
        "call",
        "convert_time",
        "--json",
        "--args",
        '{"source_timezone": "UTC", "time": "06:30", "target_timezone": "Asia/Tokyo"}',
        "--",
        sys.executable,
        "-m",
        "mcp_server_time",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    structured = json.loads(result.stdout)["structured"]
    assert structured["target"]["datetime"].endswith("T15:30:00+09:00")


async def check_served_tools(client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"multiply", "forecast", "explode"}  # helper_not_a_tool is left out
    assert tools["multiply"].input_schema["properties"]["a"]["description"] == "The first factor."
    assert tools["forecast"].input_schema["properties"]["unit"]["enum"] == ["C", "F"]
    product = await client.call_tool("multiply", {"a": 6, "b": 7})
    assert product.is_error is False
    assert product.content[0].text == "42"
    assert product.structured_content == {"result": 42}
    forecast = await client.call_tool("forecast", {"city": "Oslo", "unit": "F"})
    assert forecast.structured_content == {"city": "Oslo", "celsius": 68.0, "sky": "clear"}
    invalid = await client.call_tool("multiply", {"a": "six", "b": 7})
    assert invalid.is_error is True
    assert "a" in invalid.content[0].text
    exploded = await client.call_tool("explode", {"message": "bang"})
    assert exploded.is_error is True
    assert "bang" in exploded.content[0].text


async def test_serve_stdio_with_the_sdk_client():
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=TOOLUSE[0], args=[*TOOLUSE[1:], "mcp", "serve", SERVED])
    # pytest's captured stderr has no file descriptor; the server's stderr goes to a file.
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await check_served_tools(client)
            from mcp import MCPError

            with pytest.raises(MCPError, match="Unknown tool"):
                await client.call_tool("nope", {})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def served_http_url():
    port = free_port()
    process = subprocess.Popen(
        [*TOOLUSE, "mcp", "serve", SERVED, "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "tooluse mcp serve --http did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stderr.close()


async def test_serve_http_with_the_sdk_client(served_http_url):
    from mcp import Client

    async with Client(served_http_url) as client:
        await check_served_tools(client)


def test_list_and_call_over_http_url(served_http_url):
    listed = runner.invoke(app, ["mcp", "list", "--json", "--url", served_http_url])
    assert listed.exit_code == 0, listed.output
    assert {tool["name"] for tool in json.loads(listed.stdout)} == {
        "multiply",
        "forecast",
        "explode",
    }
    called = runner.invoke(
        app, ["mcp", "call", "multiply", "--args", '{"a": 7, "b": 8}', "--url", served_http_url]
    )
    assert called.exit_code == 0, called.output
    assert called.stdout.strip() == "56"


def test_serve_reports_a_module_without_tools(tmp_path):
    empty = tmp_path / "empty_tools.py"
    empty.write_text("X = 1\n")
    result = runner.invoke(app, ["mcp", "serve", str(empty)])
    assert result.exit_code == 2
    assert "defines no tools" in result.output


def test_list_and_call_from_an_mcp_servers_file(tmp_path):
    path = tmp_path / "servers.json"
    entry = {"command": sys.executable, "args": [DEMO]}
    path.write_text(json.dumps({"mcpServers": {"one": entry, "two": entry}}))
    listed = runner.invoke(app, ["mcp", "list", "--json", "--config", str(path)])
    assert listed.exit_code == 0, listed.output
    names = {tool["name"] for tool in json.loads(listed.stdout)}
    assert {"one_add", "two_add"} <= names
    called = runner.invoke(
        app, ["mcp", "call", "two_add", "--args", '{"a": 5, "b": 6}', "--config", str(path)]
    )
    assert called.exit_code == 0, called.output
    assert called.stdout.strip() == "11"


def test_bad_mcp_servers_file_is_reported(tmp_path):
    path = tmp_path / "servers.json"
    path.write_text('{"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1/sse"}}}')
    result = runner.invoke(app, ["mcp", "list", "--config", str(path)])
    assert result.exit_code == 2
    assert "SSE" in result.output
