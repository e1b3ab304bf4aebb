"""OpenTelemetry traces of tool-loop runs, in the GenAI semantic conventions.

``tooluse.instrument()`` (or ``run(..., tracer=...)``) makes every run a trace::

    evaluate {environment}            an evaluation item: tooluse.eval.task_id, .sample,
                                      .reward, .success (the item's runs are its children)
      invoke_agent tooluse            gen_ai.operation.name=invoke_agent
        chat {model}                  gen_ai.request.model, gen_ai.usage.input_tokens/output_tokens,
                                      gen_ai.response.finish_reasons, gen_ai.provider.name
        execute_tool {name}           gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.type;
                                      an MCP tool adds mcp.method.name, network.transport,
                                      server.address/port, mcp.protocol.version
          python sandbox              tooluse.sandbox.mode, .exit_reason, .duration

While a call runs, its ``execute_tool`` span is the current span (in worker threads too), so
what the tool traces nests under it. An MCP call outside a run is a ``tools/call {tool}``
client span of its own (the MCP conventions: inside a run, the call's ``execute_tool`` span
gets the MCP attributes instead of a second span). Errors set the span status (``ERROR``) and
``error.type``. Message content (prompts, replies, tool arguments and results) is recorded only
with ``capture_content=True``. This is the one module that imports ``opentelemetry``
(``pip install 'tooluse[otel]'``); the other modules look it up in ``sys.modules``, so a
program that never traces never loads it and pays one dictionary lookup per call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from tooluse.errors import MissingDependencyError
from tooluse.messages import ChatMessage, ToolCall, ToolResult

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - the otel extra is part of `all`
    raise MissingDependencyError("opentelemetry-sdk", "otel") from exc

__all__ = [
    "ProgramCalls",
    "RunTracer",
    "evaluation_item",
    "instrument",
    "mcp_tool_call",
    "program_calls",
    "running_call",
    "sandbox_run",
    "served_request",
    "uninstrument",
]

T = TypeVar("T")

logger = logging.getLogger("tooluse.telemetry")

_GLOBAL: RunTracer | None = None
# Context keys: the traced run whose calls are running here, and the call running here.
_RUN = otel_context.create_key("tooluse-run")
_CALL = otel_context.create_key("tooluse-tool-call")
_UNTRACED = contextlib.nullcontext()

# gen_ai.provider.name values of the semantic conventions, by the prefix of a model spec.
_PROVIDERS = {
    "openai": "openai",
    "openai-responses": "openai",
    "openai-compatible": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "bedrock": "aws.bedrock",
    "local": "llama.cpp",
    "llama-cpp": "llama.cpp",
}


def instrument(
    tracer_provider: Any = None,
    *,
    capture_content: bool = False,
    otlp_endpoint: str | None = None,
    otlp_timeout: float = 10.0,
) -> RunTracer:
    """Trace every run from now on (``tracer_provider``: the global one by default).

    ``otlp_endpoint`` (``http://host:4318/v1/traces``) makes a provider of tooluse's own that
    sends spans there over OTLP/HTTP in a background thread (``otlp_timeout`` seconds per
    export); a collector that cannot be reached costs one warning (not one per batch) and
    never stops a run. :func:`uninstrument` sends what is left and stops it.
    """
    global _GLOBAL
    provider = None
    if otlp_endpoint is not None:
        if tracer_provider is not None:
            raise ValueError("pass tracer_provider or otlp_endpoint, not both")
        provider = tracer_provider = _otlp_provider(otlp_endpoint, otlp_timeout)
    uninstrument()
    tracer = trace.get_tracer("tooluse", tracer_provider=tracer_provider)
    _GLOBAL = RunTracer(tracer, capture_content=capture_content, provider=provider)
    return _GLOBAL


def uninstrument() -> None:
    """Stop tracing runs that were not given a ``tracer`` (a provider :func:`instrument` made
    sends what it holds and stops)."""
    global _GLOBAL
    previous, _GLOBAL = _GLOBAL, None
    if previous is not None and previous.provider is not None:
        previous.provider.shutdown()


def current() -> RunTracer | None:
    """The tracer :func:`instrument` set, if any."""
    return _GLOBAL


def _model_and_provider(backend: object) -> tuple[str, str]:
    spec = str(getattr(backend, "model_spec", "") or "")
    model = str(getattr(backend, "model", "") or getattr(backend, "name", "") or spec)
    prefix = spec.split(":", 1)[0] if spec else type(backend).__name__
    return model or type(backend).__name__, _PROVIDERS.get(prefix, prefix)


def _content(messages: Sequence[ChatMessage]) -> str:
    return json.dumps(
        [{"role": m.role, "content": m.content} for m in messages], ensure_ascii=False
    )


class RunTracer:
    """Makes the spans of runs with one OpenTelemetry tracer (``provider``: the one
    :func:`instrument` made for an ``otlp_endpoint``, else ``None``)."""

    def __init__(self, tracer: Any, *, capture_content: bool = False, provider: Any = None) -> None:
        self.tracer = tracer
        self.capture_content = capture_content
        self.provider = provider

    def start_run(self, backend: object) -> RunTrace:
        return RunTrace(self, backend)


class _CallSpan:
    """The ``execute_tool`` span of one running call, and the error type its executor found."""

    __slots__ = ("error_type", "name", "span")

    def __init__(self, span: Any, name: str) -> None:
        self.span = span
        self.name = name
        self.error_type: str | None = None


class RunTrace:
    """The spans of one run: the run's own, one per model turn, one per tool call."""

    def __init__(self, owner: RunTracer, backend: object) -> None:
        self.owner = owner
        self.model, self.provider = _model_and_provider(backend)
        self.span = owner.tracer.start_span(
            "invoke_agent tooluse",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "tooluse",
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": self.model,
            },
        )
        self.context = trace.set_span_in_context(self.span)
        self.turn: Any = None
        self.calls: dict[str, _CallSpan] = {}

    def chat_started(self, messages: Sequence[ChatMessage]) -> None:
        self.turn = self.owner.tracer.start_span(
            f"chat {self.model}",
            context=self.context,
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": self.model,
            },
        )
        if self.owner.capture_content:
            self.turn.set_attribute("gen_ai.input.messages", _content(messages))

    def chat_finished(self, result: Any) -> None:
        turn, self.turn = self.turn, None
        if turn is None:
            return
        turn.set_attribute("gen_ai.usage.input_tokens", result.usage.input_tokens)
        turn.set_attribute("gen_ai.usage.output_tokens", result.usage.output_tokens)
        turn.set_attribute("gen_ai.response.finish_reasons", [result.finish_reason])
        if self.owner.capture_content:
            turn.set_attribute("gen_ai.output.messages", _content([result.to_message()]))
        turn.end()

    def chat_failed(self, exc: BaseException) -> None:
        turn, self.turn = self.turn, None
        if turn is not None:
            _failed(turn, exc)
            turn.end()

    def tool_started(self, call: ToolCall, parent: Any = None) -> None:
        """A call's ``execute_tool`` span starts: a child of the run, or of ``parent`` (the
        span of the program that made the call; ``tooluse.tool.caller`` names it)."""
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if call.caller is not None:
            attributes["tooluse.tool.caller"] = call.caller
        span = self.owner.tracer.start_span(
            f"execute_tool {call.name}",
            context=self.context if parent is None else trace.set_span_in_context(parent),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        if self.owner.capture_content:
            span.set_attribute("gen_ai.tool.call.arguments", call.arguments_json())
        self.calls[call.id] = _CallSpan(span, call.name)

    @contextlib.contextmanager
    def executing(self, calls: Sequence[ToolCall]) -> Iterator[None]:
        """Around the executor's work on a round: this run (and the call, when it is the only
        one) is the current context, which tasks and worker threads inherit."""
        only = self.calls.get(calls[0].id) if len(calls) == 1 else None
        context = otel_context.set_value(_RUN, self, self.context)
        if only is not None:
            context = trace.set_span_in_context(
                only.span, otel_context.set_value(_CALL, only, context)
            )
        token = otel_context.attach(context)
        try:
            yield
        finally:
            otel_context.detach(token)

    def tool_finished(self, call: ToolCall, result: ToolResult) -> None:
        traced = self.calls.pop(call.id, None)
        if traced is None:
            return
        span = traced.span
        if result.is_error:
            span.set_status(Status(StatusCode.ERROR, result.output[:200]))
            span.set_attribute("error.type", traced.error_type or "tool_error")
        if self.owner.capture_content:
            span.set_attribute("gen_ai.tool.call.result", result.output)
        span.end()

    def finished(self, result: Any) -> None:
        self.span.set_attribute("gen_ai.usage.input_tokens", result.usage.input_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", result.usage.output_tokens)
        self.span.set_attribute("tooluse.stop_reason", result.stop_reason.value)
        self._close()

    def failed(self, exc: BaseException) -> None:
        _failed(self.span, exc)
        self._close()

    def _close(self) -> None:
        now = time.time_ns()
        for traced in self.calls.values():  # calls a stopped run left running
            traced.span.set_status(Status(StatusCode.ERROR, "the run ended before the call"))
            traced.span.end(end_time=now)
        self.calls.clear()
        if self.turn is not None:
            self.turn.end(end_time=now)
            self.turn = None
        self.span.end(end_time=now)


@contextlib.contextmanager
def served_request(model: str, *, stream: bool) -> Iterator[Any]:
    """A ``chat {model}`` server span around one request to ``tooluse serve`` (when
    :func:`instrument` was called; else nothing). Yields the span (or ``None``)."""
    if _GLOBAL is None:
        yield None
        return
    span = _GLOBAL.tracer.start_span(
        f"chat {model}",
        kind=SpanKind.SERVER,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "tooluse.stream": stream,
        },
    )
    try:
        yield span
    except BaseException as exc:
        _failed(span, exc)
        raise
    finally:
        span.end()


def record_usage(span: Any, result: Any) -> None:
    """Put a turn's usage and finish reason on ``span`` (a no-op for ``None``)."""
    if span is None:
        return
    span.set_attribute("gen_ai.usage.input_tokens", result.usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", result.usage.output_tokens)
    span.set_attribute("gen_ai.response.finish_reasons", [result.finish_reason])


def _failed(span: Any, exc: BaseException) -> None:
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:300]))
    span.set_attribute("error.type", type(exc).__qualname__)
    span.record_exception(exc)


# -- spans of the parts a run uses (looked up through sys.modules by their modules) -----------


@contextlib.contextmanager
def _current(span: Any, context: Any = None) -> Iterator[None]:
    token = otel_context.attach(trace.set_span_in_context(span, context))
    try:
        yield
    finally:
        otel_context.detach(token)


def _running_run() -> RunTrace | None:
    run = otel_context.get_value(_RUN)
    return run if isinstance(run, RunTrace) else None


def _tracer_here() -> RunTracer | None:
    """The tracer for a span made here: the running run's, else the one instrument() set."""
    run = _running_run()
    return run.owner if run is not None else _GLOBAL


def running_call(call_id: str) -> contextlib.AbstractContextManager[Any]:
    """Around the body of call ``call_id`` (in the thread or task running it): its
    ``execute_tool`` span is the current span, when a traced run is executing it."""
    run = _running_run()
    traced = run.calls.get(call_id) if run is not None else None
    if traced is None:
        return _UNTRACED
    return _current(traced.span, otel_context.set_value(_CALL, traced))


class ProgramCalls:
    """The spans of the calls one program makes: children of the program's own span."""

    def __init__(self, run: RunTrace, program: _CallSpan) -> None:
        self.run = run
        self.program = program

    @contextlib.contextmanager
    def inner_call(self, call: ToolCall) -> Iterator[ProgramCalls]:
        """Around one call the program made (in the thread running it): its span is current
        there, so what the tool traces nests under it. :meth:`finished` ends it."""
        self.run.tool_started(call, parent=self.program.span)
        traced = self.run.calls[call.id]
        context = otel_context.set_value(_RUN, self.run, self.run.context)
        context = trace.set_span_in_context(
            traced.span, otel_context.set_value(_CALL, traced, context)
        )
        token = otel_context.attach(context)
        try:
            yield self
        finally:
            otel_context.detach(token)
            if call.id in self.run.calls:  # it raised before its result: still ended
                self.run.tool_finished(call, ToolResult.failure(call.id, call.name, "no result"))

    def finished(self, call: ToolCall, result: ToolResult) -> None:
        self.run.tool_finished(call, result)


def program_calls(call_id: str) -> ProgramCalls | None:
    """The spans for the calls of program call ``call_id`` (called where that call's span
    is current), or ``None`` when the run is not traced."""
    run = _running_run()
    traced = run.calls.get(call_id) if run is not None else None
    return ProgramCalls(run, traced) if run is not None and traced is not None else None


def _traced_call(call: ToolCall) -> _CallSpan | None:
    """The run's span of this call, when the loop traces it: found by id (the MCP client is
    the run's executor) or as the call running here (an MCP tool run by the local executor,
    which calls the server under the same name)."""
    run = _running_run()
    if run is None:
        return None
    traced = run.calls.get(call.id)
    if traced is not None:
        return traced
    here = otel_context.get_value(_CALL)
    return here if isinstance(here, _CallSpan) and here.name == call.name else None


def _mcp_error(span: Any, result: ToolResult) -> str | None:
    """Mark a failed MCP call on ``span``; the error type (the JSON-RPC code, if any)."""
    if not result.is_error:
        return None
    code = result.metadata.get("error_code")
    error_type = "tool_error" if code is None else str(code)
    if code is not None:
        span.set_attribute("rpc.response.status_code", str(code))
    span.set_status(Status(StatusCode.ERROR, result.output[:200]))
    span.set_attribute("error.type", error_type)
    return error_type


async def mcp_tool_call(
    call: ToolCall,
    tool_name: str,
    attributes: Callable[[], Mapping[str, Any]],
    answer: Callable[[], Awaitable[ToolResult]],
) -> ToolResult:
    """``answer()`` (the MCP ``tools/call`` of ``call``) traced: inside a run, the call's
    ``execute_tool`` span gets the MCP attributes; else a ``tools/call {tool_name}`` client
    span, when there is a tracer. ``attributes()`` describes the server, read after the call."""
    traced = _traced_call(call)
    if traced is not None:
        with _current(traced.span, otel_context.set_value(_CALL, traced)):
            result = await answer()
        if traced.span.is_recording():  # else the run answered the call already (a timeout)
            traced.span.set_attributes({"mcp.method.name": "tools/call", **attributes()})
            traced.error_type = _mcp_error(traced.span, result)
        return result
    owner = _tracer_here()
    if owner is None:
        return await answer()
    span = owner.tracer.start_span(
        f"tools/call {tool_name}",
        kind=SpanKind.CLIENT,
        attributes={
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "gen_ai.tool.call.id": call.id,
        },
    )
    if owner.capture_content:
        span.set_attribute("gen_ai.tool.call.arguments", call.arguments_json())
    try:
        with _current(span):
            result = await answer()
        span.set_attributes(dict(attributes()))
        if _mcp_error(span, result) is None and owner.capture_content:
            span.set_attribute("gen_ai.tool.call.result", result.output)
    except BaseException as exc:  # cancelled: the call ends without a result
        _failed(span, exc)
        raise
    finally:
        span.end()
    return result


def _spanned(
    name: str,
    attributes: Mapping[str, Any],
    work: Callable[[], T],
    outcome: Callable[[Any, T], None],
) -> T:
    """``work()`` inside a current span ``name`` (when there is a tracer); ``outcome(span,
    value)`` records what it gave."""
    owner = _tracer_here()
    if owner is None:
        return work()
    with owner.tracer.start_as_current_span(
        name, attributes=dict(attributes), record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            value = work()
        except BaseException as exc:
            _failed(span, exc)
            raise
        outcome(span, value)
        return value


def sandbox_run(mode: str, limits: Any, run: Callable[[], T]) -> T:
    """A ``python sandbox`` span around one sandboxed run (``run()`` gives its SandboxResult):
    the mode (``one-shot``, ``session``), the limits, the exit reason and the duration."""

    def outcome(span: Any, result: Any) -> None:
        reason = result.exit_reason
        span.set_attribute("tooluse.sandbox.exit_reason", reason)
        span.set_attribute("tooluse.sandbox.duration", round(result.duration, 6))
        if result.exit_code is not None:
            span.set_attribute("process.exit.code", result.exit_code)
        if result.truncated_chars:
            span.set_attribute("tooluse.sandbox.truncated_chars", result.truncated_chars)
        if reason != "ok":
            span.set_status(Status(StatusCode.ERROR, result.error[:200]))
            span.set_attribute("error.type", reason)

    attributes = {
        "tooluse.sandbox.mode": mode,
        "tooluse.sandbox.isolated": bool(limits.isolate),
        "tooluse.sandbox.timeout": float(limits.timeout),
    }
    if limits.memory_mb is not None:
        attributes["tooluse.sandbox.memory_mb"] = int(limits.memory_mb)
    return _spanned("python sandbox", attributes, run, outcome)


def evaluation_item(
    environment: str, task_index: int, sample: int, play: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """An ``evaluate {environment}`` span around one evaluation item (``play()`` gives its
    trajectory record); the item's runs are its children."""

    def outcome(span: Any, record: dict[str, Any]) -> None:
        span.set_attribute("tooluse.eval.task_id", str(record.get("task_id", "")))
        span.set_attribute("tooluse.eval.reward", float(record.get("total_reward", 0.0)))
        span.set_attribute("tooluse.eval.success", bool(record.get("success")))
        span.set_attribute("tooluse.eval.stop_reason", str(record.get("stop_reason", "")))
        calls = sum(len(step.get("calls", ())) for step in record.get("steps", ()))
        span.set_attribute("tooluse.eval.tool_calls", calls)

    attributes = {
        "tooluse.eval.environment": environment,
        "tooluse.eval.task_index": task_index,
        "tooluse.eval.sample": sample,
    }
    return _spanned(f"evaluate {environment}", attributes, play, outcome)


# -- export ------------------------------------------------------------------------------------

_EXPORTING = threading.local()


class _DuringExport(logging.Filter):
    """Drops the exporter's own log records while tooluse's exporter is exporting (in this
    thread): it logs every failed batch, and one warning of ours stands for all of them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_EXPORTING, "active", False)


_QUIET = _DuringExport()


def _otlp_provider(endpoint: str, timeout: float) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    for name in (type(exporter).__module__, "opentelemetry.exporter.otlp.common.http"):
        source = logging.getLogger(name)
        if _QUIET not in source.filters:
            source.addFilter(_QUIET)
    resource = Resource.create()  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, if set
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "tooluse"}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(_ReportingExporter(exporter, endpoint)))
    return provider


def _export_failed(endpoint: str, reason: str) -> None:
    logger.warning(
        "OpenTelemetry: spans could not be sent to %s (%s); runs go on, and further failures "
        "are not reported until an export succeeds",
        endpoint,
        reason,
    )


class _ReportingExporter(SpanExporter):
    """An exporter that reports an outage once: the first failed export is one warning, the
    next ones are silent until an export succeeds again."""

    def __init__(self, inner: Any, endpoint: str) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.down = False

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        _EXPORTING.active = True
        reason = "the collector refused them or did not answer"
        try:
            outcome = self.inner.export(spans)
        except Exception as exc:  # an exporter bug must not reach the span processor's thread
            outcome, reason = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        finally:
            _EXPORTING.active = False
        if outcome is SpanExportResult.SUCCESS:
            self.down = False
        elif not self.down:
            self.down = True
            _export_failed(self.endpoint, reason)
        return outcome

    def shutdown(self) -> None:
        _EXPORTING.active = True
        try:
            self.inner.shutdown()
        finally:
            _EXPORTING.active = False

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))
