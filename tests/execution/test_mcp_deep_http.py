"""One tool nested hundreds of levels deep over streamable HTTP: rejected on its own, the rest
kept (as over stdio, test_mcp_faults.py). The server is written with the official TypeScript
SDK (tests/npm/deep_schema_server.mjs) and runs as a real HTTP subprocess, answering with event
streams or with JSON bodies."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.npm_tools import node, npm_path

from tooluse.errors import MCPError
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.execution.mcp.deep_replies import CUT_DEPTH, MARKER, readable_message

SERVER = str(Path(__file__).parents[1] / "npm" / "deep_schema_server.mjs")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(levels: int, replies: str):
    npm_path("@modelcontextprotocol/sdk/package.json")  # installed by `make npm-tools`
    port = free_port()
    options = ["--json"] if replies == "json" else []
    process = subprocess.Popen(
        [node(), SERVER, str(port), str(levels), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError(f"the server exited early: {process.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start listening")


@pytest.mark.slow
@pytest.mark.parametrize("replies", ["event-stream", "json"])
async def test_one_tool_nested_400_levels_is_rejected_and_the_rest_work(replies):
    process, url = start_server(400, replies)
    try:
        async with MCPToolExecutor(MCPServerConfig(url=url, timeout=30)) as executor:
            names = [tool.name for tool in await executor.list_tools()]
            rejected = dict(executor.rejected_tools)
            ok = await executor.call_tool("ok")
            refused = await executor.call_tool("deep_schema", {})
    finally:
        process.kill()
        process.wait()
        process.stderr.close()
    assert names == ["ok"]
    assert set(rejected) == {"deep_schema"}
    assert "input schema nests deeper than 64 levels" in rejected["deep_schema"]
    assert ok.output == "called ok"
    assert refused.is_error and "deeper than 64 levels" in refused.output


@pytest.mark.slow
async def test_a_listing_too_deep_for_any_parser_is_a_clear_error():
    process, url = start_server(2000, "event-stream")
    try:
        async with MCPToolExecutor(MCPServerConfig(url=url, timeout=30)) as executor:
            with pytest.raises(MCPError, match="nested too deeply to be read"):
                await executor.list_tools()
    finally:
        process.kill()
        process.wait()
        process.stderr.close()


def deep(levels: int) -> dict:
    value: dict = {"type": "string"}
    for _ in range(levels):
        value = {"type": "object", "properties": {"x": value}}
    return value


def depth_of(value) -> int:
    found = 0
    stack = [(value, 0)]
    while stack:
        node_, level = stack.pop()
        found = max(found, level)
        if isinstance(node_, dict):
            stack.extend((item, level + 1) for item in node_.values())
        elif isinstance(node_, list):
            stack.extend((item, level + 1) for item in node_)
    return found


def listing(levels: int) -> bytes:
    """A tools/list reply (written as text: json cannot encode 2000 levels), ``id`` last."""
    schema = (
        '{"type": "object", "properties": {"x": ' * levels + '{"type": "string"}' + "}}" * levels
    )
    tools = '[{"name": "ok", "inputSchema": {"type": "object"}}, {"name": "d", "inputSchema": '
    return ('{"result": {"tools": ' + tools + schema + '}]}, "jsonrpc": "2.0", "id": 7}').encode()


def test_shallow_messages_pass_untouched():
    assert readable_message(listing(10)) is None
    assert readable_message(b'{"jsonrpc": "2.0", "id": 1, "result": {}}') is None


def test_a_deep_listing_keeps_every_tool_and_cuts_the_deep_schema():
    rewritten = json.loads(readable_message(listing(400)))
    tools = rewritten["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["ok", "d"]
    assert tools[0]["inputSchema"] == {"type": "object"}
    assert depth_of(rewritten) == CUT_DEPTH  # below it, the marker
    assert MARKER in json.dumps(rewritten)
    assert rewritten["id"] == 7


def test_other_deep_replies_become_an_error_for_their_request():
    message = {"jsonrpc": "2.0", "id": "call-3", "result": {"structuredContent": deep(400)}}
    error = json.loads(readable_message(json.dumps(message).encode()))
    assert error["id"] == "call-3" and "nests deeper" in error["error"]["message"]


def test_a_reply_too_deep_for_python_is_an_error_found_by_its_id_at_either_end():
    tail_id = listing(2000)  # "id" written last, as the TypeScript SDK does
    head_id = b'{"jsonrpc": "2.0", "id": 12, "result": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    for payload, request_id in ((tail_id, 7), (head_id, 12)):
        error = json.loads(readable_message(payload))
        assert error["id"] == request_id
        assert "nested too deeply to be read" in error["error"]["message"]


async def test_an_event_stream_is_rewritten_line_by_line_across_chunks():
    from tooluse.execution.mcp.deep_replies import _EventStream

    deep_event = b"event: message\ndata: " + listing(400) + b"\n\n"
    shallow_event = b"event: message\ndata: " + listing(3) + b"\n\n"
    body = shallow_event + deep_event + shallow_event

    class Chunks:
        async def __aiter__(self):
            for start in range(0, len(body), 1000):  # lines split across chunks
                yield body[start : start + 1000]

        async def aclose(self):
            pass

    out = b"".join([chunk async for chunk in _EventStream(Chunks())])
    events = out.split(b"\n\n")
    assert events[0] + b"\n\n" == shallow_event and events[2] + b"\n\n" == shallow_event
    data = json.loads(events[1].split(b"data: ", 1)[1])
    assert [tool["name"] for tool in data["result"]["tools"]] == ["ok", "d"]
    assert depth_of(data) == CUT_DEPTH
