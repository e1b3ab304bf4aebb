"""MCP tasks (protocol 2025-11-25) on the client, against the reference server
``@modelcontextprotocol/server-everything`` run as a real subprocess (stdio and streamable
HTTP), and on ``tooluse mcp serve``, whose tools run as tasks for clients of that revision."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.npm_tools import everything_server, node, npm_path

from tooluse.errors import MCPError
from tooluse.execution.mcp import (
    ElicitationResponse,
    MCPHandlers,
    MCPServerConfig,
    MCPToolExecutor,
)

pytestmark = pytest.mark.slow

TOOLUSE = [sys.executable, "-c", "from tooluse.cli.app import main; main()"]
TASK_TOOLS = str(Path(__file__).parent / "mcp_servers" / "task_tools.py")
RESEARCH = "simulate-research-query"  # server-everything's tool with taskSupport "required"


def everything_stdio(**overrides) -> MCPServerConfig:
    command, *args = everything_server("stdio")
    return MCPServerConfig(command=command, args=tuple(args), **overrides)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_listening(command: list[str], port: int, env: dict[str, str] | None = None):
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError(f"the server exited early: {process.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start listening")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    process.stderr.close()


def wait_for_file(path: Path) -> str:
    for _ in range(600):
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def clarify(request):
    """The user's answer to server-everything's question about an ambiguous topic."""
    assert "interpretation" in request.schema["properties"]
    return ElicitationResponse.accept({"interpretation": "snake"})


# ---------------------------------------------------------------------------------------------
# The client, against server-everything


async def test_a_tool_that_requires_a_task_runs_as_one_polled_until_it_ends():
    reports = []
    handlers = MCPHandlers(on_progress=reports.append)
    async with MCPToolExecutor(everything_stdio(), handlers=handlers) as executor:
        tools = {tool.name: tool for tool in await executor.list_tools()}
        result = await executor.call_tool(RESEARCH, {"topic": "tides"})
        task = await executor.get_task(result.metadata["mcp_task_id"])
        listed = await executor.list_tasks()
    assert tools[RESEARCH].metadata["mcp_task_support"] == "required"
    assert not result.is_error, result.output
    assert "Research Report: tides" in result.output
    assert task.status == "completed" and task.poll_interval_ms == 1000
    assert task.task_id in {listed_task.task_id for listed_task in listed}
    # The stages seen by polling tasks/get (the polls sample them: some may fall between two),
    # in the server's order, and then the end.
    order = ["Gathering", "Analyzing", "Synthesizing", "Generating"]
    seen = [next(i for i, stage in enumerate(order) if stage in r.message) for r in reports]
    assert seen == sorted(seen) and len(set(seen)) >= 2, [r.message for r in reports]
    assert reports[0].message.startswith("working") and reports[-1].message.startswith("completed")
    assert [r.progress for r in reports] == list(range(1, len(reports) + 1))


async def test_a_running_task_asks_for_input_and_the_handler_answers():
    asked = []

    def answer(request):
        asked.append(request)
        return clarify(request)

    handlers = MCPHandlers(elicitation=answer)
    async with MCPToolExecutor(everything_stdio(), handlers=handlers) as executor:
        result = await executor.call_tool(RESEARCH, {"topic": "python", "ambiguous": True})
    assert len(asked) == 1 and "python" in asked[0].message
    assert not result.is_error, result.output
    assert "Research Report: python (snake)" in result.output


async def test_a_task_that_outlives_its_call_is_cancelled_on_the_server():
    async with MCPToolExecutor(everything_stdio()) as executor:
        result = await executor.call_tool(RESEARCH, {"topic": "slow"}, timeout=2.5)
        task = await executor.get_task(result.metadata["mcp_task_id"])
        after = await executor.call_tool("echo", {"message": "still here"})
    assert result.is_error and "timed out after 2.5s" in result.output
    assert task.status == "cancelled"
    assert "still here" in after.output


async def test_unknown_tasks_are_a_clear_error():
    async with MCPToolExecutor(everything_stdio()) as executor:
        with pytest.raises(MCPError, match="could not report task nope"):
            await executor.get_task("nope")


@pytest.fixture(scope="module")
def everything_http_url():
    port = free_port()
    process = start_listening(everything_server("streamableHttp"), port, {"PORT": str(port)})
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


async def test_tasks_and_their_input_requests_over_streamable_http(everything_http_url):
    handlers = MCPHandlers(elicitation=clarify)
    config = MCPServerConfig(url=everything_http_url)
    async with MCPToolExecutor(config, handlers=handlers) as executor:
        plain = await executor.call_tool(RESEARCH, {"topic": "rivers"})
        asked = await executor.call_tool(RESEARCH, {"topic": "python", "ambiguous": True})
    assert "Research Report: rivers" in plain.output and plain.metadata["mcp_task_id"]
    assert "Research Report: python (snake)" in asked.output


def test_tooluse_mcp_call_runs_a_task_tool():
    completed = subprocess.run(
        [
            *TOOLUSE,
            "mcp",
            "call",
            RESEARCH,
            "--args",
            '{"topic": "moss"}',
            "--",
            *everything_server("stdio"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Research Report: moss" in completed.stdout


# ---------------------------------------------------------------------------------------------
# tooluse mcp serve: tools run as tasks


# A stdio server gets a small default environment: PYTHONPATH is passed on, so that the server
# runs the same tooluse as the test.
SAME_TOOLUSE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None


def served(*options: str, **overrides) -> MCPServerConfig:
    args = (*TOOLUSE[1:], "mcp", "serve", TASK_TOOLS, *options)
    overrides.setdefault("protocol", "2025-11-25")
    return MCPServerConfig(command=TOOLUSE[0], args=args, env=SAME_TOOLUSE, **overrides)


async def test_served_tools_run_as_tasks_when_the_call_is_long(tmp_path):
    config = served(task_threshold=10.0)
    async with MCPToolExecutor(config) as executor:
        tools = {tool.name: tool for tool in await executor.list_tools()}
        short = await executor.call_tool("wait_then_echo", {"text": "quick"}, timeout=5)
        long = await executor.call_tool(
            "wait_then_echo", {"text": "slow", "seconds": 0.5}, timeout=20
        )
        failed = await executor.call_tool("refuse", {"reason": "not today"}, timeout=20)
        failed_task = await executor.get_task(failed.metadata["mcp_task_id"])
    assert tools["wait_then_echo"].metadata["mcp_task_support"] == "optional"
    assert short.output == "quick" and "mcp_task_id" not in short.metadata  # a plain call
    assert long.output == "slow" and long.metadata["mcp_task_id"]
    assert failed.is_error and "not today" in failed.output
    assert failed_task.status == "failed" and "not today" in (failed_task.status_message or "")


async def test_a_served_task_is_cancelled_and_stays_cancelled(tmp_path):
    marker = tmp_path / "marker"
    async with MCPToolExecutor(served(task_threshold=0.0)) as executor:
        arguments = {"text": "never", "seconds": 60, "marker": str(marker)}
        result = await executor.call_tool("wait_then_echo", arguments, timeout=3.0)
        task_id = result.metadata["mcp_task_id"]
        assert wait_for_file(marker) == "cancelled"  # the tool's run was stopped
        task = await executor.get_task(task_id)
        with pytest.raises(MCPError, match="already cancelled"):
            await executor.cancel_task(task_id)
        with pytest.raises(MCPError, match="no task"):
            await executor.get_task("0" * 32)
    assert result.is_error and "timed out" in result.output
    assert task.status == "cancelled"


async def test_a_required_task_tool_refuses_a_plain_call():
    from tooluse.execution.mcp import sdk as mcp_sdk

    async with MCPToolExecutor(served("--tasks", "required")) as executor:
        answered = await executor.call_tool("wait_then_echo", {"text": "as a task"})
        client = executor._connection.client
        with pytest.raises(mcp_sdk.SDKError) as refused:
            await mcp_sdk.send_raw(
                client, "tools/call", {"name": "wait_then_echo", "arguments": {"text": "x"}}, 10
            )
    assert answered.output == "as a task" and answered.metadata["mcp_task_id"]
    assert refused.value.code == -32601 and "requires task augmentation" in refused.value.message


async def test_newer_protocol_clients_get_plain_calls():
    async with MCPToolExecutor(served(protocol="auto")) as executor:
        tools = await executor.list_tools()
        result = await executor.call_tool("wait_then_echo", {"text": "plain"}, timeout=100)
        version = executor.protocol_version
    assert version != "2025-11-25"
    assert all("mcp_task_support" not in tool.metadata for tool in tools)
    assert result.output == "plain" and "mcp_task_id" not in result.metadata


async def test_served_tasks_over_streamable_http():
    port = free_port()
    process = start_listening(
        [*TOOLUSE, "mcp", "serve", TASK_TOOLS, "--http", "--port", str(port)], port
    )
    try:
        config = MCPServerConfig(
            url=f"http://127.0.0.1:{port}/mcp", protocol="2025-11-25", task_threshold=0.0
        )
        async with MCPToolExecutor(config) as executor:
            result = await executor.call_tool("wait_then_echo", {"text": "web", "seconds": 0.3})
            task = await executor.get_task(result.metadata["mcp_task_id"])
    finally:
        stop(process)
    assert result.output == "web"
    assert task.status == "completed"


def test_the_official_typescript_client_runs_a_served_tool_as_a_task():
    """An outside client (tests/npm/task_client.mjs, on the TypeScript SDK's task API)."""
    npm_path("@modelcontextprotocol/sdk/package.json")  # installed by `make npm-tools`
    client = str(Path(__file__).parents[1] / "npm" / "task_client.mjs")
    port = free_port()
    process = start_listening(
        [*TOOLUSE, "mcp", "serve", TASK_TOOLS, "--http", "--port", str(port)], port
    )
    try:
        arguments = json.dumps({"text": "from node", "seconds": 1.0})
        ran = subprocess.run(
            [node(), client, f"http://127.0.0.1:{port}/mcp", "wait_then_echo", arguments],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        stop(process)
    assert ran.returncode == 0, ran.stderr
    messages = [json.loads(line) for line in ran.stdout.splitlines()]
    assert messages[0] == {"type": "listed", "taskSupport": "optional"}
    assert messages[1] == {"type": "taskCreated", "status": "working"}
    assert {"type": "taskStatus", "status": "completed"} in messages
    assert messages[-1] == {"type": "result", "text": "from node"}
