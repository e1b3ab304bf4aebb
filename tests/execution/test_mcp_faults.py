"""MCP faults with real misbehaving servers: hung handshakes, error replies, huge replies,
malformed tool entries. Each check would fail with the behaviour it guards against."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import pytest

from tooluse.errors import MCPError
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor
from tooluse.execution.mcp.schema import check_advertised_schema

pytestmark = pytest.mark.slow

BROKEN = str(Path(__file__).parent / "mcp_servers" / "broken_server.py")


def broken(*options: str, **overrides) -> MCPServerConfig:
    return MCPServerConfig(command=sys.executable, args=(BROKEN, *options), **overrides)


def wait_for_file(path: Path) -> str:
    for _ in range(600):
        if path.exists():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_server_hung_in_its_handshake_is_killed_at_the_startup_timeout(tmp_path):
    pid_file = tmp_path / "server.pid"
    config = broken("--hang-on-init", "--pid-file", str(pid_file), startup_timeout=1.0)
    with pytest.raises(MCPError, match="no handshake within 1s"):
        async with MCPToolExecutor(config):
            pass
    pid = int(wait_for_file(pid_file))
    assert_gone(pid)
    # Killed outright: it never got the polite SIGTERM it would have survived.
    assert not (tmp_path / "server.pid.sigterm").exists()


async def test_a_json_rpc_error_reply_is_shown_as_the_servers_message():
    async with MCPToolExecutor(broken("--error-on", "tools/call")) as executor:
        await executor.list_tools()
        result = await executor.call_tool("ok")
        assert executor._connection is not None and executor._connection.alive
    assert result.is_error
    assert "database is down (while handling tools/call)" in result.output
    assert "closed the connection" not in result.output


async def test_a_json_rpc_error_to_the_tool_listing_is_the_servers_message():
    with pytest.raises(MCPError, match="could not list tools: database is down"):
        async with MCPToolExecutor(broken("--error-on", "tools/list")) as executor:
            await executor.list_tools()


async def test_huge_replies_are_cut_with_a_marker():
    async with MCPToolExecutor(broken(max_output_chars=1000)) as executor:
        result = await executor.call_tool("huge", {"mb": 3})
    assert not result.is_error
    assert len(result.output) < 1200
    assert "output truncated" in result.output
    assert result.metadata["truncated_chars"] == 3_000_000 - 1000


async def test_malformed_tools_are_rejected_one_by_one_with_a_warning(caplog):
    caplog.set_level(logging.WARNING, logger="tooluse.mcp")
    async with MCPToolExecutor(broken("--bad-tools")) as executor:
        names = [tool.name for tool in await executor.list_tools()]
        rejected = dict(executor.rejected_tools)
        ok = await executor.call_tool("ok")
        refused = await executor.call_tool("dangling_ref", {"x": 1})
    assert names == ["ok", "garbled", "mixed", "huge"]  # the good ones survive
    assert set(rejected) == {
        "bad_schema",
        "no_schema",
        "string_schema",
        "dangling_ref",
        "deep_schema",
    }
    assert "input_schema" in rejected["no_schema"] or "inputSchema" in rejected["no_schema"]
    assert "malformed tool entry" in rejected["string_schema"]
    assert "'#/$defs/missing'" in rejected["dangling_ref"]
    assert "deeper than" in rejected["deep_schema"]
    assert ok.output == "fine"
    assert refused.is_error and "does not resolve" in refused.output
    warned = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(warned) == 5


@pytest.mark.parametrize("levels", [400, 2000])
async def test_one_tool_nested_hundreds_of_levels_is_rejected_and_the_rest_work(levels):
    """Deeper than the SDK's JSON parser reads: the listing must not wait out its timeout."""
    started = time.monotonic()
    async with MCPToolExecutor(broken("--deep-tool", str(levels), timeout=30.0)) as executor:
        try:
            names = [tool.name for tool in await executor.list_tools()]
        except MCPError as exc:  # nested deeper than any parser here reads: said at once
            assert levels == 2000, exc
            assert "nested too deeply" in str(exc)
            assert time.monotonic() - started < 10.0
            return
        listed = time.monotonic() - started
        rejected = dict(executor.rejected_tools)
        ok = await executor.call_tool("ok")
        refused = await executor.call_tool("deep_schema", {})
    assert levels == 400
    assert listed < 10.0  # well under the 30 s listing timeout
    assert names == ["ok", "garbled", "mixed", "huge"]
    assert set(rejected) == {"bad_schema", "deep_schema"}  # bad_schema: always advertised
    assert "deeper than" in rejected["deep_schema"]
    assert ok.output == "fine"
    assert refused.is_error and "deeper than" in refused.output


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}, "does not resolve"),
        ({"type": "object", "properties": {"a": {"$ref": "https://x.test/s"}}}, "outside"),
        ({"type": "object", "properties": {"a": {"$ref": "#thing"}}}, "no $anchor"),
        ("not a schema", "not an object"),
        ({"type": "array"}, "root type"),
    ],
)
def test_schema_problems_are_named(schema, problem):
    assert problem in (check_advertised_schema(schema) or "")


def test_deep_schemas_are_refused_without_recursion():
    schema: dict = {"type": "string"}
    for _ in range(50_000):  # far past Python's recursion limit
        schema = {"type": "object", "properties": {"x": schema}}
    assert "deeper than" in (check_advertised_schema(schema) or "")


def test_good_schemas_with_local_refs_and_anchors_pass():
    schema = {
        "type": "object",
        "$defs": {"point": {"$anchor": "pt", "type": "object"}, "a/b": {"type": "string"}},
        "properties": {
            "p": {"$ref": "#/$defs/point"},
            "q": {"$ref": "#pt"},
            "r": {"$ref": "#/$defs/a~1b"},
        },
    }
    assert check_advertised_schema(schema) is None


async def test_a_reply_over_the_byte_limit_fails_its_call_and_the_server_stays_usable():
    config = broken(max_reply_bytes=1_000_000)
    async with MCPToolExecutor(config) as executor:
        too_big = await executor.call_tool("huge", {"mb": 3})
        fits = await executor.call_tool("huge", {"mb": 0})
        ok = await executor.call_tool("ok")
    assert too_big.is_error
    assert "over the 1,000,000-byte limit" in too_big.output
    assert not fits.is_error and fits.output == ""
    assert ok.output == "fine"
