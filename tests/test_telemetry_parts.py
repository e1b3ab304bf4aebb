"""Spans of the parts a run uses: MCP calls (a real stdio server), sandboxed Python runs (real
sandboxes), evaluation items (a real evaluation with the scripted backend), read back from the
SDK's in-memory exporter; and an OTLP/HTTP collector that is down, which costs one warning."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import tooluse
from tooluse import ScriptedBackend, ToolCall, run
from tooluse.envs import ArithmeticEnvironment, TrajectoryRunner
from tooluse.execution.mcp import MCPServerConfig, MCPToolExecutor, SyncMCPToolExecutor
from tooluse.execution.sandbox import PythonSandbox, SandboxLimits, run_python
from tooluse.loop.telemetry import uninstrument

DEMO = str(Path(__file__).parent / "execution" / "mcp_servers" / "demo_server.py")
CONFIG = MCPServerConfig(command=sys.executable, args=(DEMO,), tool_prefix="demo_", name="demo")
FAST = SandboxLimits(timeout=5.0, memory_mb=256)


@pytest.fixture
def spans():
    """Every run traced (``tooluse.instrument``) into an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tooluse.instrument(provider)
    yield exporter
    uninstrument()


def named(exporter, name):
    found = [span for span in exporter.get_finished_spans() if span.name == name]
    assert found, f"no span {name!r} in {[s.name for s in exporter.get_finished_spans()]}"
    return found


def child_of(span, parent) -> bool:
    return span.parent is not None and span.parent.span_id == parent.context.span_id


# -- MCP ---------------------------------------------------------------------------------------


def mcp_round() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [
                ToolCall(id="a", name="demo_add", arguments={"a": 40, "b": 2}),
                ToolCall(id="f", name="demo_fail", arguments={"reason": "not today"}),
            ],
            "42",
        ]
    )


def check_mcp_run(exporter) -> None:
    """The run's execute_tool spans carry the MCP attributes; no second span per call."""
    (root,) = named(exporter, "invoke_agent tooluse")
    (added,) = named(exporter, "execute_tool demo_add")
    (failed,) = named(exporter, "execute_tool demo_fail")
    for span in (added, failed):
        assert child_of(span, root)
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert span.attributes["network.transport"] == "pipe"
        assert span.attributes["tooluse.mcp.server.name"] == "demo"
        assert span.attributes["mcp.protocol.version"]
    assert added.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "tool_error"
    assert not [s for s in exporter.get_finished_spans() if s.name.startswith("tools/call")]


async def test_mcp_tools_in_an_async_run(spans):
    async with MCPToolExecutor(CONFIG) as mcp:
        result = await tooluse.arun(mcp_round(), "add", tools=await mcp.list_tools())
    assert result.final_text == "42"
    check_mcp_run(spans)


def test_mcp_toolset_tools_in_a_blocking_run_called_from_worker_threads(spans):
    with SyncMCPToolExecutor([CONFIG]) as mcp:  # a sequence of configs: an MCPToolset
        result = run(mcp_round(), "add", tools=mcp.list_tools())
    assert result.final_text == "42"
    check_mcp_run(spans)


def test_an_mcp_call_that_outlives_its_run_step_leaves_the_span_alone(spans, caplog):
    backend = ScriptedBackend(
        [[ToolCall(id="s", name="demo_slow", arguments={"seconds": 30})], "gave up"]
    )
    caplog.set_level(logging.WARNING)
    with SyncMCPToolExecutor(CONFIG) as mcp:
        result = run(backend, "wait", tools=mcp.list_tools(), tool_timeout=0.5)
    # closing the server ended the abandoned call after its span had ended
    assert result.final_text == "gave up"
    (span,) = named(spans, "execute_tool demo_slow")
    assert span.status.status_code is StatusCode.ERROR
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]


async def test_the_mcp_client_as_the_runs_executor_with_a_tracer_of_its_own():
    from tooluse.loop import build_setup, drive_async, initial_history

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    backend = mcp_round()
    async with MCPToolExecutor(CONFIG) as mcp:
        await mcp.list_tools()
        setup = build_setup(backend, executor=mcp, tracer=provider.get_tracer("t"))
        async for _event in drive_async(backend, setup, initial_history("add", None)):
            pass
    check_mcp_run(exporter)


def test_an_mcp_call_outside_a_run_is_a_client_span_and_carries_the_trace_to_the_server(spans):
    from opentelemetry import trace

    tracer = trace.get_tracer("app", tracer_provider=spans_provider(spans))
    config = MCPServerConfig(command=sys.executable, args=(DEMO,), tool_prefix="demo_", timeout=1)
    with SyncMCPToolExecutor(config) as mcp, tracer.start_as_current_span("app work") as work:
        sent = mcp.call_tool("demo_traceparent")
        late = mcp.call_tool("demo_slow", {"seconds": 30})
        crashed = mcp.call_tool("demo_crash")
    (span,) = named(spans, "tools/call traceparent")
    assert span.kind is SpanKind.CLIENT
    assert span.parent.span_id == work.get_span_context().span_id
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert span.attributes["gen_ai.tool.name"] == "traceparent"
    assert span.attributes["network.transport"] == "pipe"
    # the server received this span as the parent of its work (W3C trace context in _meta)
    _version, trace_id, span_id, _flags = sent.output.split("-")
    assert int(trace_id, 16) == span.context.trace_id
    assert int(span_id, 16) == span.context.span_id
    (timed_out,) = named(spans, "tools/call slow")
    assert late.is_error and late.metadata["error_code"] == -32001
    assert timed_out.status.status_code is StatusCode.ERROR
    assert timed_out.attributes["error.type"] == "-32001"
    assert timed_out.attributes["rpc.response.status_code"] == "-32001"
    (lost,) = named(spans, "tools/call crash")
    assert crashed.is_error and lost.status.status_code is StatusCode.ERROR
    assert lost.attributes["error.type"] == str(crashed.metadata["error_code"]) == "-32000"


def spans_provider(exporter):
    """A provider of its own writing to ``exporter`` (for spans of the program around)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


# -- sandbox -----------------------------------------------------------------------------------


def test_sandbox_runs_are_spans_with_their_exit_reason(spans):
    assert run_python("print(6 * 7)", FAST).output == "42"
    assert run_python("import time\ntime.sleep(60)", SandboxLimits(timeout=1.0)).timed_out
    assert run_python("blocks = [bytearray(50 * 1024 * 1024) for _ in range(100)]", FAST).error
    assert run_python("raise ValueError('no')", FAST).exit_code == 1
    ok, timeout, memory, error = named(spans, "python sandbox")
    assert ok.attributes["tooluse.sandbox.mode"] == "one-shot"
    assert ok.attributes["tooluse.sandbox.exit_reason"] == "ok"
    assert ok.attributes["process.exit.code"] == 0
    assert ok.attributes["tooluse.sandbox.duration"] > 0
    assert ok.attributes["tooluse.sandbox.memory_mb"] == 256
    assert ok.status.status_code is StatusCode.UNSET
    for span, reason in ((timeout, "timeout"), (memory, "memory"), (error, "error")):
        assert span.attributes["tooluse.sandbox.exit_reason"] == reason
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == reason


def test_a_sandbox_session_in_a_run_nests_under_the_call(spans):
    tool, session = PythonSandbox(timeout=5.0, memory_mb=256).session_tool()
    backend = ScriptedBackend(
        [
            [ToolCall(id="p1", name="python", arguments={"code": "x = 6"})],
            [ToolCall(id="p2", name="python", arguments={"code": "print(x * 7)"})],
            "42",
        ]
    )
    with session:
        result = run(backend, "6 * 7?", tools=[tool])
    assert result.final_text == "42"
    calls = named(spans, "execute_tool python")
    runs = named(spans, "python sandbox")
    assert len(runs) == 2
    assert all(span.attributes["tooluse.sandbox.mode"] == "session" for span in runs)
    assert {call.context.span_id for call in calls} == {span.parent.span_id for span in runs}


# -- evaluation --------------------------------------------------------------------------------


def test_evaluation_items_are_spans_holding_their_runs(spans, tmp_path):
    # Items run one after another: task 0 computes in python and answers right, task 1 wrong.
    backend = ScriptedBackend(
        [
            [ToolCall(id="p", name="python", arguments={"code": "print(0.15 * 80)"})],
            [ToolCall(id="s0", name="submit_answer", arguments={"answer": "12"})],
            [ToolCall(id="s1", name="submit_answer", arguments={"answer": "-1"})],
        ]
    )
    environment = ArithmeticEnvironment(python_timeout=5.0)
    runner = TrajectoryRunner(environment=environment, backend=backend)
    result = runner.run_evaluation(task_indices=[0, 1], out=tmp_path, progress=False)
    assert [r["success"] for r in result.records] == [True, False]
    items = named(spans, f"evaluate {environment.name}")
    by_task = {span.attributes["tooluse.eval.task_index"]: span for span in items}
    right, wrong = by_task[0], by_task[1]
    assert right.attributes["tooluse.eval.task_id"] == "tip"
    assert right.attributes["tooluse.eval.sample"] == 0
    assert right.attributes["tooluse.eval.success"] is True
    assert right.attributes["tooluse.eval.reward"] == result.records[0]["total_reward"] > 0
    assert right.attributes["tooluse.eval.tool_calls"] == 2
    assert wrong.attributes["tooluse.eval.success"] is False
    runs = named(spans, "invoke_agent tooluse")
    assert {run.parent.span_id for run in runs} == {right.context.span_id, wrong.context.span_id}
    (python_call,) = named(spans, "execute_tool python")
    (sandboxed,) = named(spans, "python sandbox")
    assert child_of(sandboxed, python_call)
    assert python_call.context.trace_id == right.context.trace_id


# -- a collector that is down ------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends


def test_an_unreachable_collector_costs_one_warning_and_no_run(caplog):
    endpoint = f"http://127.0.0.1:{closed_port()}/v1/traces"
    caplog.set_level(logging.DEBUG)
    tracer = tooluse.instrument(otlp_endpoint=endpoint, otlp_timeout=0.5)
    try:
        for turn in range(3):  # three runs, three batches, three failed exports
            result = run(ScriptedBackend([f"answer {turn}"]), "q")
            assert result.final_text == f"answer {turn}"
            assert tracer.provider.force_flush()
    finally:
        uninstrument()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].name == "tooluse.telemetry"  # the logger keeps its name
    assert endpoint in warnings[0].getMessage()


def test_the_otlp_wiring_delivers_to_a_collector_that_is_up(caplog):
    received: list[ExportTraceServiceRequest] = []

    class Collector(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            request = ExportTraceServiceRequest()
            request.ParseFromString(self.rfile.read(int(self.headers["content-length"])))
            received.append(request)
            self.send_response(200)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    caplog.set_level(logging.WARNING)
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        tracer = tooluse.instrument(otlp_endpoint=endpoint)
        run(ScriptedBackend(["hi"]), "q")
        assert tracer.provider.force_flush()
    finally:
        uninstrument()
        server.shutdown()
    names = {
        span.name
        for request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    }
    assert "invoke_agent tooluse" in names
    resource = received[0].resource_spans[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes}["service.name"] == "tooluse"
    assert not caplog.records


def test_the_sdk_exporter_alone_logs_every_failed_batch(caplog):
    """Why tooluse's wiring exists: the bare exporter logs each batch it could not send."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    endpoint = f"http://127.0.0.1:{closed_port()}/v1/traces"
    caplog.set_level(logging.WARNING)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint, timeout=0.5)))
    for _ in range(3):
        run(ScriptedBackend(["hi"]), "q", tracer=provider.get_tracer("t"))
    failures = [r for r in caplog.records if r.name.startswith("opentelemetry.exporter")]
    assert len(failures) >= 3 * 2  # two spans per run (the run, its model turn), one export each


# -- no tracer, no cost ------------------------------------------------------------------------


def test_untraced_parts_never_load_opentelemetry(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        from tooluse import ScriptedBackend, ToolCall, run
        from tooluse.envs import ArithmeticEnvironment, TrajectoryRunner
        from tooluse.execution.sandbox import python_tool

        backend = ScriptedBackend(
            [
                [ToolCall(id="p", name="python", arguments={{"code": "print(12)"}})],
                "12",
                [ToolCall(id="s", name="submit_answer", arguments={{"answer": "12"}})],
            ]
        )
        assert run(backend, "q", tools=[python_tool(timeout=5)]).final_text == "12"
        runner = TrajectoryRunner(environment=ArithmeticEnvironment(tool_types=()), backend=backend)
        runner.run_evaluation(task_indices=[0], out={str(tmp_path)!r}, progress=False)
        loaded = ("opentelemetry", "tooluse.loop.telemetry")
        print(sorted(m for m in sys.modules if m.startswith(loaded)))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
