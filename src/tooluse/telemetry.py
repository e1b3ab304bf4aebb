"""OpenTelemetry traces of tool-loop runs, in the GenAI semantic conventions.

``tooluse.instrument()`` (or ``run(..., tracer=...)``) makes every run a trace::

    invoke_agent tooluse              gen_ai.operation.name=invoke_agent
      chat {model}                    gen_ai.request.model, gen_ai.usage.input_tokens/output_tokens,
                                      gen_ai.response.finish_reasons, gen_ai.provider.name
      execute_tool {name}             gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.type

Errors set the span status (``ERROR``) and ``error.type``. Message content (prompts, replies,
tool arguments and results) is recorded only with ``capture_content=True``. This is the one
module that imports ``opentelemetry`` (``pip install 'tooluse[otel]'``).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from tooluse.errors import MissingDependencyError
from tooluse.messages import ChatMessage, ToolCall, ToolResult

try:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - the otel extra is part of `all`
    raise MissingDependencyError("opentelemetry-sdk", "otel") from exc

__all__ = ["RunTracer", "instrument", "served_request", "uninstrument"]

_GLOBAL: RunTracer | None = None

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


def instrument(tracer_provider: Any = None, *, capture_content: bool = False) -> RunTracer:
    """Trace every run from now on (``tracer_provider``: the global one by default)."""
    global _GLOBAL
    tracer = trace.get_tracer("tooluse", tracer_provider=tracer_provider)
    _GLOBAL = RunTracer(tracer, capture_content=capture_content)
    return _GLOBAL


def uninstrument() -> None:
    """Stop tracing runs that were not given a ``tracer``."""
    global _GLOBAL
    _GLOBAL = None


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
    """Makes the spans of runs with one OpenTelemetry tracer."""

    def __init__(self, tracer: Any, *, capture_content: bool = False) -> None:
        self.tracer = tracer
        self.capture_content = capture_content

    def start_run(self, backend: object) -> RunTrace:
        return RunTrace(self, backend)


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
        self.calls: dict[str, Any] = {}

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

    def tool_started(self, call: ToolCall) -> None:
        span = self.owner.tracer.start_span(
            f"execute_tool {call.name}",
            context=self.context,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
        )
        if self.owner.capture_content:
            span.set_attribute("gen_ai.tool.call.arguments", call.arguments_json())
        self.calls[call.id] = span

    def tool_finished(self, call: ToolCall, result: ToolResult) -> None:
        span = self.calls.pop(call.id, None)
        if span is None:
            return
        if result.is_error:
            span.set_status(Status(StatusCode.ERROR, result.output[:200]))
            span.set_attribute("error.type", "tool_error")
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
        for span in self.calls.values():  # calls a stopped run left running
            span.set_status(Status(StatusCode.ERROR, "the run ended before the call"))
            span.end(end_time=now)
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
