"""OpenTelemetry traces of runs in the GenAI semantic conventions: spans and attributes read
back from the SDK's in-memory exporter, errors as span status, content only when asked, and a
real OTLP/HTTP export to a receiver on 127.0.0.1 that decodes the protobuf."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import tooluse
from tooluse import GenerationResult, ScriptedBackend, ToolCall, Usage, run
from tooluse.errors import BackendHTTPError


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def spans_of(capture: bool = False, backend=None, **options):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    if capture:
        from tooluse.loop.telemetry import RunTracer

        tracer = RunTracer(tracer, capture_content=True)
    backend = backend or ScriptedBackend(
        [
            GenerationResult(
                tool_calls=(ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3}),),
                usage=Usage(input_tokens=11, output_tokens=4, requests=1),
                finish_reason="tool_calls",
            ),
            GenerationResult(text="5", usage=Usage(input_tokens=20, output_tokens=1, requests=1)),
        ]
    )
    result = run(backend, "2+3?", tools=[add], tracer=tracer, **options)
    return result, exporter.get_finished_spans()


def test_a_run_is_an_invoke_agent_span_with_chat_and_execute_tool_children():
    result, spans = spans_of()
    assert result.final_text == "5"
    by_name = {s.name: s for s in spans}
    root = by_name["invoke_agent tooluse"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    tool_span = by_name["execute_tool add"]
    assert len(chats) == 2 and all(s.parent.span_id == root.context.span_id for s in chats)
    assert tool_span.parent.span_id == root.context.span_id
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    first = min(chats, key=lambda s: s.start_time)
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.usage.input_tokens"] == 11
    assert first.attributes["gen_ai.usage.output_tokens"] == 4
    assert tuple(first.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    assert tool_span.attributes["gen_ai.tool.name"] == "add"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "c1"
    assert root.attributes["gen_ai.usage.input_tokens"] == 31
    # no message content unless asked
    assert not any("gen_ai.input.messages" in s.attributes for s in spans)
    assert not any("gen_ai.tool.call.arguments" in s.attributes for s in spans)


def test_content_is_recorded_only_when_asked():
    _, spans = spans_of(capture=True)
    tool_span = next(s for s in spans if s.name == "execute_tool add")
    assert tool_span.attributes["gen_ai.tool.call.arguments"] == '{"a":2,"b":3}'
    assert tool_span.attributes["gen_ai.tool.call.result"] == "5"
    chat = next(s for s in spans if s.name.startswith("chat "))
    assert "2+3?" in chat.attributes["gen_ai.input.messages"]


def test_errors_set_the_span_status():
    class Failing(ScriptedBackend):
        def generate(self, *args, **kwargs):
            raise BackendHTTPError("server exploded", status_code=500, body="")

    def broken(a: int) -> int:
        """Always fails."""
        raise ValueError("no")

    with pytest.raises(BackendHTTPError):
        spans_of(backend=Failing([]))
    # a failing model: its chat span and the run's span are errors
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with pytest.raises(BackendHTTPError):
        run(Failing([]), "q", tracer=provider.get_tracer("t"))
    spans = exporter.get_finished_spans()
    assert {s.name.split()[0] for s in spans} == {"invoke_agent", "chat"}
    assert all(s.status.status_code is StatusCode.ERROR for s in spans)
    assert all(s.attributes["error.type"] == "BackendHTTPError" for s in spans)
    # a failing tool: its span is an error, the run goes on
    exporter.clear()
    backend = ScriptedBackend([[ToolCall(id="b", name="broken", arguments={"a": 1})], "sorry"])
    run(backend, "q", tools=[broken], tracer=provider.get_tracer("t"))
    tool_span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool broken")
    assert tool_span.status.status_code is StatusCode.ERROR


def test_instrument_traces_every_run_until_undone():
    from tooluse.loop.telemetry import uninstrument

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tooluse.instrument(provider)
    try:
        run(ScriptedBackend(["hi"]), "q")
    finally:
        uninstrument()
    run(ScriptedBackend(["hi"]), "q")
    assert [s.name for s in exporter.get_finished_spans()].count("invoke_agent tooluse") == 1


class Receiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)  # a real OTLP/protobuf payload, or this raises
        Receiver.received.append(request)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()


def test_spans_reach_an_otlp_http_receiver():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        backend = ScriptedBackend(
            [[ToolCall(id="c1", name="add", arguments={"a": 1, "b": 1})], "2"]
        )
        run(backend, "1+1?", tools=[add], tracer=provider.get_tracer("t"))
        provider.shutdown()
    finally:
        server.shutdown()
    names = {
        span.name
        for request in Receiver.received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    }
    assert {"invoke_agent tooluse", "execute_tool add"} <= names
    assert any(n.startswith("chat ") for n in names)


def test_an_exporter_that_is_down_does_not_stop_the_run():
    provider = TracerProvider()
    dead = OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces", timeout=1)
    provider.add_span_processor(SimpleSpanProcessor(dead))
    result = run(ScriptedBackend(["still answered"]), "q", tracer=provider.get_tracer("t"))
    assert result.final_text == "still answered"


def test_a_served_request_is_a_server_span():
    import time

    import httpx
    import uvicorn

    from tooluse.loop.telemetry import uninstrument
    from tooluse.serve import ServedModel, create_app

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tooluse.instrument(provider)
    backend = ScriptedBackend(
        [GenerationResult(text="hi", usage=Usage(input_tokens=7, output_tokens=2))]
    )
    config = uvicorn.Config(
        create_app([ServedModel(id="m", backend=backend)]),
        host="127.0.0.1",
        port=0,
        log_level="warning",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=30)
        assert reply.status_code == 200
    finally:
        uninstrument()
        server.should_exit = True
        thread.join(10)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "chat m"]
    assert span.kind.name == "SERVER"
    assert span.attributes["gen_ai.usage.input_tokens"] == 7
