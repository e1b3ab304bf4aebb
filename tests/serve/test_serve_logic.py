"""Server logic on a real uvicorn server on 127.0.0.1 with scripted models: API keys, the bounded
queue, invalid calls regenerated, structured output, and tool calls added to a text-only
upstream server with ``--format``."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import starlette  # noqa: F401  (installed by make install; absent is a failure)
import uvicorn

from tooluse.messages import ToolCall
from tooluse.providers.scripted import ScriptedBackend
from tooluse.serve import ServedModel, create_app  # noqa: E402

from .conftest import free_port, start_server, stop

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


class Server:
    """uvicorn serving an app on a free port in a thread."""

    def __init__(self, app) -> None:
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def ask(base: str, body: dict, **kwargs) -> httpx.Response:
    return httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30, **kwargs)


HELLO = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_api_key_is_required_when_set():
    app = create_app([ServedModel(id="m", backend=ScriptedBackend(["hello"]))], api_key="s3cret")
    with Server(app) as base:
        assert ask(base, HELLO).status_code == 401
        assert ask(base, HELLO, headers={"authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{base}/v1/models").status_code == 401
        ok = ask(base, HELLO, headers={"authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert ok.json()["choices"][0]["message"]["content"] == "hello"
        # liveness for anyone; the models' load only with the key
        assert httpx.get(f"{base}/health").json() == {"status": "ok", "models": ["m"]}
        keyed = httpx.get(f"{base}/health", headers={"authorization": "Bearer s3cret"})
        assert keyed.json()["load"] == {"m": {"running": 0, "waiting": 0}}


class BlockingBackend(ScriptedBackend):
    """Answers only once ``release`` is set: keeps the model busy on purpose."""

    def __init__(self, count: int) -> None:
        super().__init__(["done"] * count)
        self.release = threading.Event()
        self.started = threading.Event()

    def generate_with_tools(self, *args, **kwargs):
        self.started.set()
        self.release.wait(20)
        return super().generate_with_tools(*args, **kwargs)


def test_full_queue_gives_503_with_retry_after():
    backend = BlockingBackend(3)
    app = create_app([ServedModel(id="m", backend=backend, max_concurrent=1, max_queue=1)])
    with Server(app) as base:
        results: list[int] = []
        first = threading.Thread(target=lambda: results.append(ask(base, HELLO).status_code))
        first.start()
        assert backend.started.wait(10)
        second = threading.Thread(target=lambda: results.append(ask(base, HELLO).status_code))
        second.start()
        time.sleep(0.5)  # the second request is now waiting in the queue
        load = httpx.get(f"{base}/health").json()["load"]["m"]
        assert load == {"running": 1, "waiting": 1}  # a scripted model has no engine counters
        third = ask(base, HELLO)
        assert third.status_code == 503
        assert third.headers["retry-after"] == "1"
        assert third.json()["error"]["code"] == "overloaded"
        backend.release.set()
        first.join(20)
        second.join(20)
        assert sorted(results) == [200, 200]


def test_invalid_call_is_regenerated_and_arguments_coerced():
    backend = ScriptedBackend(
        [
            [ToolCall(id="c1", name="add", arguments={"a": "one"})],
            [ToolCall(id="c2", name="add", arguments={"a": "1", "b": 2})],
        ]
    )
    app = create_app([ServedModel(id="m", backend=backend)])
    with Server(app) as base:
        reply = ask(base, {**HELLO, "tools": [ADD]})
    assert reply.status_code == 200
    call = reply.json()["choices"][0]["message"]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"a": 1, "b": 2}  # "1" -> 1
    assert "x-tooluse-warning" not in reply.headers
    assert len(backend.requests) == 2


def test_call_still_invalid_after_the_retry_is_returned_with_a_warning():
    bad = [ToolCall(id="c1", name="add", arguments={"a": 1})]
    backend = ScriptedBackend([bad, bad])
    app = create_app([ServedModel(id="m", backend=backend)])
    with Server(app) as base:
        reply = ask(base, {**HELLO, "tools": [ADD]})
    assert reply.status_code == 200
    assert "b" in reply.headers["x-tooluse-warning"]


def test_structured_output_is_the_forced_call_as_content():
    backend = ScriptedBackend([[ToolCall(id="c1", name="point", arguments={"x": 1, "y": 2})]])
    app = create_app([ServedModel(id="m", backend=backend)])
    schema = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}
    body = {
        **HELLO,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "point", "schema": schema},
        },
    }
    with Server(app) as base:
        reply = ask(base, body)
    message = reply.json()["choices"][0]["message"]
    assert json.loads(message["content"]) == {"x": 1, "y": 2}
    assert "tool_calls" not in message
    assert backend.requests[0].tool_choice == "point"


@pytest.mark.parametrize(
    ("wire_choice", "seen"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"type": "function", "function": {"name": "add"}}, "add"),
    ],
)
def test_the_requests_tool_choice_reaches_the_backend(wire_choice, seen):
    streamed = ScriptedBackend([[ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})]] * 2)
    app = create_app([ServedModel(id="m", backend=streamed)])
    body = {**HELLO, "tools": [ADD], "tool_choice": wire_choice}
    with Server(app) as base:
        assert ask(base, body).status_code == 200
        with httpx.stream(
            "POST", f"{base}/v1/chat/completions", json={**body, "stream": True}, timeout=30
        ) as reply:
            assert reply.status_code == 200
            reply.read()
    assert [r.tool_choice for r in streamed.requests] == [seen, seen]
    assert [t.name for t in streamed.requests[0].tools] == ["add"]


# -- tool calls added to a text-only upstream ------------------------------------------------------

HERMES_REPLY = (
    'Let me add them.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
)


def upstream_app():
    """A text-only OpenAI-compatible upstream: it answers every request with the Hermes text
    above (streamed in small pieces when asked) and records what it was sent."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    seen: list[dict] = []

    async def completions(request):
        body = await request.json()
        seen.append(body)
        if body.get("stream"):

            async def pieces():
                for i in range(0, len(HERMES_REPLY), 7):
                    delta = {"content": HERMES_REPLY[i : i + 7]}
                    yield (
                        "data: "
                        + json.dumps(
                            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                        )
                        + "\n\n"
                    )
                yield (
                    "data: "
                    + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                    + "\n\n"
                )
                yield "data: [DONE]\n\n"

            return StreamingResponse(pieces(), media_type="text/event-stream")
        message = {"role": "assistant", "content": HERMES_REPLY}
        return JSONResponse(
            {
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])]), seen


@pytest.fixture
def text_upstream(tmp_path) -> Iterator[tuple[str, list[dict]]]:
    app, seen = upstream_app()
    with Server(app) as base:
        yield base, seen


def test_format_adds_tool_calls_to_a_text_only_server(text_upstream, tmp_path):
    upstream, seen = text_upstream
    process, base = start_server(
        ["--model", f"openai-compatible:{upstream}/v1#plain", "--format", "hermes"],
        tmp_path / "serve.log",
        timeout=60,
    )
    try:
        body = {
            "model": f"openai-compatible:{upstream}/v1#plain",
            "messages": [{"role": "user", "content": "2+3?"}],
            "tools": [ADD],
        }
        reply = ask(base, body)
        assert reply.status_code == 200, reply.text
        message = reply.json()["choices"][0]["message"]
        assert message["content"] == "Let me add them."
        assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
        assert reply.json()["choices"][0]["finish_reason"] == "tool_calls"
        # the upstream got the tools in its prompt, not as native tools
        assert "tools" not in seen[-1]
        assert "add" in seen[-1]["messages"][0]["content"]
        with httpx.stream(
            "POST", f"{base}/v1/chat/completions", json={**body, "stream": True}, timeout=30
        ) as r:
            lines = [json.loads(x[6:]) for x in r.iter_lines() if x.startswith("data: {")]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in lines if c["choices"])
        args = "".join(
            d["function"]["arguments"]
            for c in lines
            if c["choices"]
            for d in c["choices"][0]["delta"].get("tool_calls", [])
        )
        assert text.strip() == "Let me add them."
        assert json.loads(args) == {"a": 2, "b": 3}
    finally:
        stop(process)


def test_port_out_of_range_is_a_one_line_error():
    from .conftest import tooluse_command

    done = subprocess.run(
        [*tooluse_command(), "serve", "--port", "70000"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
