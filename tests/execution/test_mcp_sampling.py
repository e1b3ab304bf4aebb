"""Sampling: a real MCP server (subprocess) asks the client's model, a tooluse backend answers
when the policy allows; refused, failed or unset sampling gives the server a clear MCP error.

Both ways a server asks are covered: ``ctx.session.create_message`` in the middle of a call
(``protocol="2025-11-25"``) and a ``Resolve(Sample)`` marker, which on the negotiated
2026-07-28 revision comes as an ``input_required`` result.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tooluse
from tooluse.execution.mcp import (
    MCPHandlers,
    MCPSampling,
    MCPServerConfig,
    MCPToolExecutor,
    SamplingRequest,
    SyncMCPToolExecutor,
)
from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.messages import ToolCall
from tooluse.providers.base import BaseBackend
from tooluse.providers.scripted import ScriptedBackend

pytestmark = pytest.mark.slow

RICH = str(Path(__file__).parent / "mcp_servers" / "rich_server.py")


def rich(protocol: str = "auto", **overrides) -> MCPServerConfig:
    return MCPServerConfig(
        command=sys.executable, args=(RICH,), name="rich", protocol=protocol, **overrides
    )


class FailingBackend(BaseBackend):
    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        raise ConnectionError("the model is down")


async def test_a_sampling_request_mid_call_is_answered_by_the_backend():
    model = ScriptedBackend(["Paris."], name="tiny-model")
    seen: list[SamplingRequest] = []

    def allow(request: SamplingRequest) -> bool:
        seen.append(request)
        return True

    handlers = MCPHandlers(sampling=MCPSampling(backend=model, allow=allow, max_tokens=40))
    async with MCPToolExecutor(rich("2025-11-25"), handlers=handlers) as mcp:
        result = await mcp.call_tool("ask_model", {"question": "Capital of France?"})
        assert mcp.protocol_version == "2025-11-25"
    assert (result.is_error, result.output) == (False, "tiny-model said: Paris.")
    [request] = seen
    assert request.server == "rich"
    assert request.max_tokens == 64 and request.temperature == 0.0
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "Answer in one short sentence."),
        ("user", "Capital of France?"),
    ]
    [asked] = model.requests
    assert [m.content for m in asked.messages] == [m.content for m in request.messages]
    assert asked.params.max_tokens == 40  # the client's cap wins over the server's 64
    assert asked.params.temperature == 0.0


async def test_a_resolver_sample_on_the_negotiated_revision_is_answered():
    async def allow(request: SamplingRequest) -> bool:  # an async policy
        return "weather" in request.messages[-1].content

    model = ScriptedBackend(["Sunny."], name="tiny-model")
    handlers = MCPHandlers(sampling=MCPSampling(backend=model, allow=allow))
    async with MCPToolExecutor(rich(), handlers=handlers) as mcp:
        assert mcp.protocol_version == mcp_sdk.LATEST_PROTOCOL_VERSION
        answered = await mcp.call_tool("ask_model_resolved", {"question": "The weather?"})
        refused = await mcp.call_tool("ask_model_resolved", {"question": "Your secrets?"})
    assert (answered.is_error, answered.output) == (False, "tiny-model said: Sunny.")
    assert refused.is_error
    assert "the client refused the sampling request" in refused.output
    assert len(model.requests) == 1


async def test_a_refused_request_is_an_error_for_the_server_and_the_model_is_not_used():
    model = ScriptedBackend([])
    handlers = MCPHandlers(sampling=MCPSampling(backend=model, allow=lambda request: False))
    async with MCPToolExecutor(rich("2025-11-25"), handlers=handlers) as mcp:
        result = await mcp.execute_async(
            ToolCall(id="s1", name="ask_model", arguments={"question": "Hi?"})
        )
    assert result.call_id == "s1" and result.is_error
    assert "the client refused the sampling request" in result.output
    assert model.requests == []


@pytest.mark.parametrize("protocol", ["2025-11-25", "auto"])
async def test_without_a_sampling_handler_the_server_gets_an_error_not_a_hang(protocol):
    tool = "ask_model" if protocol != "auto" else "ask_model_resolved"
    async with MCPToolExecutor(rich(protocol, timeout=60)) as mcp:
        result = await mcp.call_tool(tool, {"question": "Hi?"})
    assert result.is_error
    assert "timed out" not in result.output
    assert "sampling" in result.output.lower()


async def test_a_failing_model_or_policy_is_reported_to_the_server():
    broken_model = MCPSampling(backend=FailingBackend(), allow=lambda request: True)

    def broken_policy(request: SamplingRequest) -> bool:
        raise RuntimeError("policy bug")

    broken_rule = MCPSampling(backend=ScriptedBackend([]), allow=broken_policy)
    outputs = []
    for sampling in (broken_model, broken_rule):
        handlers = MCPHandlers(sampling=sampling)
        async with MCPToolExecutor(rich("2025-11-25"), handlers=handlers) as mcp:
            outputs.append((await mcp.call_tool("ask_model", {"question": "Hi?"})).output)
    assert "the client's model failed: ConnectionError: the model is down" in outputs[0]
    assert "the client's sampling policy failed: RuntimeError: policy bug" in outputs[1]


def test_sampling_inside_the_blocking_tool_loop():
    """The loop's model calls the MCP tool; the tool's server samples a second backend."""
    sampler = ScriptedBackend(["42, of course."], name="sampler")
    handlers = MCPHandlers(sampling=MCPSampling(backend=sampler, allow=lambda request: True))
    loop_model = ScriptedBackend(
        [
            [ToolCall(id="q", name="ask_model", arguments={"question": "The answer?"})],
            "The server's model says 42.",
        ]
    )
    with SyncMCPToolExecutor(rich("2025-11-25"), handlers=handlers) as mcp:
        result = tooluse.run(loop_model, "Ask the server.", tools=mcp.list_tools())
    [tool_message] = [m for m in result.messages if m.role == "tool"]
    assert tool_message.result.call_id == "q"
    assert tool_message.result.output == "sampler said: 42, of course."
    assert result.final_text == "The server's model says 42."


@pytest.fixture
def rich_http():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, RICH, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "no HTTP server"
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


@pytest.mark.parametrize(
    ("protocol", "tool"), [("2025-11-25", "ask_model"), ("auto", "ask_model_resolved")]
)
async def test_sampling_over_streamable_http(rich_http, protocol, tool):
    model = ScriptedBackend(["Over HTTP."], name="tiny-model")
    handlers = MCPHandlers(sampling=MCPSampling(backend=model, allow=lambda request: True))
    config = MCPServerConfig(url=rich_http, name="rich", protocol=protocol)
    async with MCPToolExecutor(config, handlers=handlers) as mcp:
        result = await mcp.call_tool(tool, {"question": "Which transport?"})
    assert (result.is_error, result.output) == (False, "tiny-model said: Over HTTP.")
    assert model.requests[0].messages[-1].content == "Which transport?"


def test_sampling_policy_must_be_callable():
    with pytest.raises(TypeError, match="allow must be a callable"):
        MCPSampling(backend=ScriptedBackend([]), allow=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tokens"):
        MCPSampling(backend=ScriptedBackend([]), allow=lambda r: True, max_tokens=0)


@pytest.mark.timeout(900)
async def test_the_local_model_answers_a_servers_sampling_request():
    """The embedded llama.cpp model answers a real server's sampling request."""
    from tooluse.local import LlamaCppBackend

    model = LlamaCppBackend.default(max_tokens=48)
    handlers = MCPHandlers(
        sampling=MCPSampling(backend=model, allow=lambda request: True, max_tokens=48)
    )
    async with MCPToolExecutor(rich("2025-11-25", timeout=600), handlers=handlers) as mcp:
        result = await mcp.call_tool(
            "ask_model", {"question": "What is the capital of France? One word."}
        )
    print(f"\nlocal model via MCP sampling: {result.output!r}")
    assert not result.is_error, result.output
    prefix, _, answer = result.output.partition(" said: ")
    assert prefix and answer.strip()
