"""The loop end to end over real HTTP: ``OpenAIBackend`` talking to an OpenAI-compatible
model server on 127.0.0.1 that asks for two tools, then answers from their results."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tooluse import OpenAIBackend, StopReason, TextDelta, arun, run, validate_history


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


def get_time(tz: str) -> str:
    """Get the local time.

    Args:
        tz: IANA timezone name.
    """
    if "/" not in tz:
        raise ValueError(f"unknown timezone {tz}")
    return f"14:05 in {tz}"


def model_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model's message: tool calls for a question, a summary after tool results."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        results = [m["content"] for m in messages if m["role"] == "tool"]
        return {"role": "assistant", "content": "Results: " + " | ".join(results)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_w",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
            },
            {
                "id": "call_t",
                "type": "function",
                "function": {"name": "get_time", "arguments": json.dumps({"tz": "Paris"})},
            },
        ],
    }


class ModelServer:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.bodies.append(body)
                message = model_reply(body)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
                if body.get("stream"):
                    payload = "".join(
                        f"data: {json.dumps(c)}\n\n" for c in _chunks(message, finish, usage)
                    )
                    payload += "data: [DONE]\n\n"
                    self._send(payload.encode(), "text/event-stream")
                else:
                    answer = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": usage,
                    }
                    self._send(json.dumps(answer).encode(), "application/json")

            def _send(self, payload: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _chunks(
    message: dict[str, Any], finish: str, usage: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    if message.get("content"):
        words = message["content"].split(" ")
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            yield {**base, "choices": [{"index": 0, "delta": {"content": piece}}]}
    for index, call in enumerate(message.get("tool_calls") or []):
        delta = {"tool_calls": [{"index": index, **call}]}
        yield {**base, "choices": [{"index": 0, "delta": delta}]}
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    yield {**base, "choices": [], "usage": usage}


@pytest.fixture
def server():
    s = ModelServer()
    yield s
    s.close()


def check(result, server: ModelServer) -> None:
    assert result.stop_reason is StopReason.FINAL_TEXT
    assert result.final_text == (
        "Results: sunny in Paris | error: ValueError: unknown timezone Paris"
    )
    assert [t.name for t in result.trail] == ["get_weather", "get_time"]
    assert result.usage.input_tokens == 22 and result.usage.requests >= 2
    second = server.bodies[1]
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_w", "call_t"]
    assert {t["function"]["name"] for t in second["tools"]} == {"get_weather", "get_time"}
    validate_history(list(result.messages))


@pytest.mark.slow
def test_run_over_real_http(server):
    backend = OpenAIBackend("test-model", base_url=server.url, api_key="local", max_retries=0)
    result = run(backend, "Weather and time in Paris?", tools=[get_weather, get_time])
    check(result, server)


@pytest.mark.slow
async def test_arun_over_real_http(server):
    backend = OpenAIBackend("test-model", base_url=server.url, api_key="local", max_retries=0)
    result = await arun(backend, "Weather and time in Paris?", tools=[get_weather, get_time])
    check(result, server)


@pytest.mark.slow
def test_streamed_run_over_real_http_forwards_text_deltas(server):
    backend = OpenAIBackend("test-model", base_url=server.url, api_key="local", max_retries=0)
    events: list[Any] = []
    result = run(
        backend,
        "Weather and time in Paris?",
        tools=[get_weather, get_time],
        stream=True,
        on_event=events.append,
    )
    check(result, server)
    assert server.bodies[0]["stream"] is True
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == result.final_text
