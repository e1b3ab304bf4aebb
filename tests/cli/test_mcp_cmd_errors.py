"""`tooluse mcp` user errors: one `error:` line, a non-zero exit, no traceback; Ctrl-C during
`mcp list` leaves no server process behind (real subprocesses and servers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parent.parent / "execution" / "mcp_servers"
BROKEN = str(SERVERS / "broken_server.py")
DEMO = str(SERVERS / "demo_server.py")
TOOLUSE = [sys.executable, "-c", "from tooluse.cli.app import main; main()"]

runner = CliRunner()


def assert_one_error_line(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, lines
    for fragment in fragments:
        assert fragment in errors[0]


def test_not_a_url():
    result = runner.invoke(app, ["mcp", "list", "--url", "not a url"])
    assert_one_error_line(result, 2, "url must be an http(s) URL", "'not a url'")


@pytest.mark.parametrize("value", ["-1", "0", "nan"])
def test_timeout_must_be_positive(value):
    result = runner.invoke(app, ["mcp", "list", "--timeout", value, "--", sys.executable, DEMO])
    assert_one_error_line(result, 2, "--timeout must be a positive number")


def test_port_out_of_range(tmp_path):
    tools = tmp_path / "tools.py"
    tools.write_text("def ping() -> str:\n    return 'pong'\n")
    result = runner.invoke(app, ["mcp", "serve", str(tools), "--http", "--port", "70000"])
    assert_one_error_line(result, 2, "--port must be between 1 and 65535, got 70000")


def test_tools_file_with_a_syntax_error(tmp_path):
    tools = tmp_path / "broken_tools.py"
    tools.write_text("def ping() -> str\n    return 'pong'\n")
    result = runner.invoke(app, ["mcp", "serve", str(tools)])
    assert_one_error_line(result, 2, "SyntaxError", "broken_tools.py, line 1")


def test_tools_file_that_raises_on_import(tmp_path):
    tools = tmp_path / "raising_tools.py"
    tools.write_text("raise RuntimeError('no config')\n")
    result = runner.invoke(app, ["mcp", "serve", str(tools)])
    assert_one_error_line(result, 2, "RuntimeError: no config")


def test_tools_file_with_an_invalid_schema(tmp_path):
    tools = tmp_path / "schema_tools.py"
    tools.write_text(
        "from tooluse import ToolDefinition\n"
        "TOOLS = [ToolDefinition.from_schema('odd', {'type': 'object', 'properties': "
        "{'x': {'$ref': '#/$defs/missing'}}})]\n"
    )
    result = runner.invoke(app, ["mcp", "serve", str(tools)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith("error: ")


def test_a_server_with_invalid_tool_schemas_lists_the_rest_and_exits_non_zero():
    result = runner.invoke(app, ["mcp", "list", "--", sys.executable, BROKEN, "--bad-tools"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    skipped = [line for line in result.output.splitlines() if line.startswith("error: skipped")]
    assert len(skipped) == 5  # one line per rejected tool
    assert "ok" in result.output and "garbled" in result.output


def test_no_server_given():
    result = runner.invoke(app, ["mcp", "list"])
    assert_one_error_line(result, 2, "give exactly one of")


def test_ctrl_c_during_list_leaves_no_server_behind(tmp_path):
    pid_file = tmp_path / "server.pid"
    command = [
        *TOOLUSE,
        "mcp",
        "list",
        "--timeout",
        "120",
        "--",
        sys.executable,
        BROKEN,
        "--hang-on-init",
        "--pid-file",
        str(pid_file),
    ]
    cli = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):  # the server is up and stuck in its handshake
            if pid_file.exists() or cli.poll() is not None:
                break
            time.sleep(0.05)
        assert pid_file.exists(), cli.communicate(timeout=5)
        server = int(pid_file.read_text())
        cli.send_signal(signal.SIGINT)
        _, stderr = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "error: interrupted" in stderr
    for _ in range(100):  # the kill is sent before the CLI exits; reaping may lag a moment
        try:
            os.kill(server, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(server, signal.SIGKILL)
        raise AssertionError("the MCP server outlived the interrupted command")


def test_serve_with_an_unknown_task_setting():
    result = runner.invoke(app, ["mcp", "serve", DEMO, "--tasks", "sometimes"])
    assert_one_error_line(result, 2, "--tasks must be optional, required or forbidden")
