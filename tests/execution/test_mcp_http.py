"""MCPToolExecutor over streamable HTTP, against the demo server run as a real HTTP subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tooluse.errors import MCPError
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.messages import ToolCall

pytestmark = pytest.mark.slow

DEMO = str(Path(__file__).parent / "mcp_servers" / "demo_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP server exited early: {process.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the HTTP server did not start listening")


@pytest.fixture(scope="module")
def http_url():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, DEMO, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stderr.close()


async def test_http_list_and_call(http_url):
    async with MCPToolExecutor(MCPServerConfig(url=http_url, tool_prefix="web_")) as executor:
        names = [tool.name for tool in await executor.list_tools()]
        added = await executor.execute_async(
            ToolCall(id="h1", name="web_add", arguments={"a": 20, "b": 22})
        )
        weather = await executor.call_tool("web_weather", {"city": "Lima"})
        failed = await executor.call_tool("web_fail", {"reason": "over http"})
        invalid = await executor.call_tool("web_add", {"a": 1})
    assert "web_add" in names and "web_crash" in names
    assert (added.call_id, added.output, added.structured) == ("h1", "42", {"result": 42})
    assert weather.structured == {"city": "Lima", "celsius": 21.5}
    assert failed.is_error and "refused: over http" in failed.output
    assert invalid.is_error and "b" in invalid.output


async def test_http_timeout_is_enforced(http_url):
    async with MCPToolExecutor(MCPServerConfig(url=http_url, timeout=1.0)) as executor:
        slow = await executor.call_tool("slow", {"seconds": 20})
        after = await executor.call_tool("echo", {"text": "ok"})
    assert slow.is_error and "timed out" in slow.output
    assert after.output == "ok"


async def test_http_headers_are_sent(http_url):
    config = MCPServerConfig(url=http_url, headers={"X-Test": "tooluse-42"})
    async with MCPToolExecutor(config) as executor:
        sent = await executor.call_tool("header", {"name": "X-Test"})
    async with MCPToolExecutor(MCPServerConfig(url=http_url)) as executor:
        absent = await executor.call_tool("header", {"name": "X-Test"})
    assert sent.output == "tooluse-42"
    assert absent.output == ""


async def test_nothing_listening_is_a_clear_start_error():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPError, match="failed to start"):
        async with MCPToolExecutor(MCPServerConfig(url=url, startup_timeout=10)):
            pass


def start_demo_http(port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, DEMO, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_port(port, process)
    return process


def stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()
    process.stderr.close()


async def test_http_server_restart_fails_one_call_then_recovers():
    port = free_port()
    process = start_demo_http(port)
    try:
        config = MCPServerConfig(url=f"http://127.0.0.1:{port}/mcp", timeout=10)
        async with MCPToolExecutor(config) as executor:
            first = await executor.call_tool("echo", {"text": "one"})
            stop(process)
            during = await executor.execute_async(
                ToolCall(id="gone", name="echo", arguments={"text": "two"})
            )
            process = start_demo_http(port)
            after = await executor.call_tool("echo", {"text": "three"})
            assert executor.restarts == 1
    finally:
        if process.poll() is None:
            stop(process)
    assert first.output == "one"
    assert during.is_error and during.call_id == "gone"
    assert after.output == "three" and not after.is_error
