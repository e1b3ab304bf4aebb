"""Provider layer costs, each against a baseline measured in the same run.

1. History repair (close unanswered calls) of a 40-turn conversation with 3 parallel calls per
   turn: ``validate_history(repair=True)`` vs pydantic-ai's ``_repair_dangling_tool_calls`` on the
   same conversation in its own message types (skipped when pydantic-ai is not installed).
2. Encoding that conversation per wire API (validation + id mapping + translation) vs
   ``json.dumps`` of the resulting body, the floor every client pays.
3. A real HTTP round trip on 127.0.0.1: ``OpenAIBackend.generate_with_tools`` vs a bare
   ``httpx.Client.post`` + ``json.loads`` of the same body and reply.
4. A 400-chunk SSE stream on 127.0.0.1: ``OpenAIBackend.stream_with_tools`` (events and the
   assembled turn) vs bare ``httpx`` line iteration + ``json.loads`` per chunk.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from tooluse import (
    ChatMessage,
    OpenAIBackend,
    ToolCall,
    ToolDefinition,
    ToolParameter,
    ToolResult,
    validate_history,
)
from tooluse.providers import RetryPolicy, anthropic, bedrock, gemini, openai_chat, openai_responses

TURNS = 40
TOOLS = [
    ToolDefinition(name="get_weather", description="Weather", parameters=(ToolParameter("city"),)),
    ToolDefinition(name="get_time", description="Time"),
]


def best_of(fn: Callable[[], Any], number: int, repeat: int = 5) -> float:
    """Best mean seconds per call over ``repeat`` runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def conversation(dangling: bool) -> list[ChatMessage]:
    messages = [ChatMessage.system("Be brief."), ChatMessage.user("start")]
    for turn in range(TURNS):
        calls = [
            ToolCall(id=f"call_{turn}_{i}", name="get_weather", arguments={"city": f"c{i}"})
            for i in range(3)
        ]
        messages.append(ChatMessage.assistant(f"turn {turn}", calls))
        answered = calls[:1] if dangling and turn == TURNS - 1 else calls
        messages += [
            ChatMessage.tool_result(ToolResult.success(c.id, c.name, "sunny")) for c in answered
        ]
        messages.append(ChatMessage.user(f"next {turn}"))
    return messages


def pydantic_ai_conversation() -> list[Any] | None:
    try:
        from pydantic_ai import messages as pm
    except ImportError:
        return None
    out: list[Any] = [
        pm.ModelRequest(parts=[pm.SystemPromptPart("Be brief."), pm.UserPromptPart("start")])
    ]
    for turn in range(TURNS):
        calls = [
            pm.ToolCallPart(
                tool_name="get_weather", args={"city": f"c{i}"}, tool_call_id=f"call_{turn}_{i}"
            )
            for i in range(3)
        ]
        out.append(pm.ModelResponse(parts=[pm.TextPart(f"turn {turn}"), *calls]))
        answered = calls[:1] if turn == TURNS - 1 else calls
        returns = [
            pm.ToolReturnPart(tool_name=c.tool_name, content="sunny", tool_call_id=c.tool_call_id)
            for c in answered
        ]
        out.append(pm.ModelRequest(parts=[*returns, pm.UserPromptPart(f"next {turn}")]))
    return out


def bench_repair(rows: list[tuple[str, float, float | None]]) -> dict[str, Any]:
    ours_history = conversation(dangling=True)
    repaired = validate_history(ours_history, repair=True)
    assert len(repaired) == len(ours_history) + 2
    ours = best_of(lambda: validate_history(ours_history, repair=True), 200)
    theirs_history = pydantic_ai_conversation()
    theirs = None
    if theirs_history is not None:
        from pydantic_ai.messages import _repair_dangling_tool_calls

        fixed = _repair_dangling_tool_calls(theirs_history, repair_last_response=True)
        assert sum(len(m.parts) for m in fixed) == sum(len(m.parts) for m in theirs_history) + 2
        theirs = best_of(
            lambda: _repair_dangling_tool_calls(theirs_history, repair_last_response=True), 200
        )
    rows.append(("repair 40-turn history (pydantic-ai baseline)", ours, theirs))
    return {"repair_us": ours * 1e6, "pydantic_ai_repair_us": theirs * 1e6 if theirs else None}


def bench_encode(rows: list[tuple[str, float, float | None]]) -> dict[str, Any]:
    history = conversation(dangling=False)
    figures: dict[str, Any] = {}
    for name, encode in [
        ("openai_chat", openai_chat.encode_request),
        ("openai_responses", openai_responses.encode_request),
        ("anthropic", anthropic.encode_request),
        ("gemini", gemini.encode_request),
        ("bedrock", bedrock.encode_request),
    ]:
        body = encode(history, TOOLS, model="m")
        ours = best_of(lambda encode=encode: encode(history, TOOLS, model="m"), 50)
        floor = best_of(lambda body=body: json.dumps(body), 50)
        rows.append((f"encode {name} (json.dumps baseline)", ours, floor))
        figures[f"encode_{name}_us"] = ours * 1e6
        figures[f"json_dumps_{name}_us"] = floor * 1e6
    return figures


class _Server:
    def __init__(self) -> None:
        reply = {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
        chunks = [{"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]} for i in range(400)]
        stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        payloads = {"json": json.dumps(reply).encode(), "sse": stream.encode()}

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                kind = "sse" if body.get("stream") else "json"
                self.send_response(200)
                self.send_header(
                    "content-type", "text/event-stream" if kind == "sse" else "application/json"
                )
                self.send_header("content-length", str(len(payloads[kind])))
                self.end_headers()
                self.wfile.write(payloads[kind])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def bench_http(rows: list[tuple[str, float, float | None]]) -> dict[str, Any]:
    server = _Server()
    try:
        backend = OpenAIBackend(
            "m", base_url=server.url, api_key="", retry=RetryPolicy(max_retries=0)
        )
        messages = [ChatMessage.user("weather in Oslo?")]
        client = httpx.Client()
        body = openai_chat.encode_request(messages, TOOLS, model="m")

        def bare() -> None:
            json.loads(client.post(server.url + "/chat/completions", content=json.dumps(body)).text)

        def ours() -> None:
            backend.generate_with_tools(messages, TOOLS)

        assert backend.generate_with_tools(messages, TOOLS).tool_calls[0].arguments == {
            "city": "Oslo"
        }
        ours_s, bare_s = best_of(ours, 100, 3), best_of(bare, 100, 3)
        rows.append(("HTTP round trip on loopback (bare httpx baseline)", ours_s, bare_s))

        stream_body = dict(body, stream=True)

        def bare_stream() -> None:
            with client.stream(
                "POST", server.url + "/chat/completions", content=json.dumps(stream_body)
            ) as r:
                for line in r.iter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        json.loads(line[6:])

        def ours_stream() -> None:
            for _ in backend.stream_with_tools(messages, TOOLS):
                pass

        last = list(backend.stream_with_tools(messages, TOOLS))[-1]
        assert last.result.text.count("w") == 400
        s_ours, s_bare = best_of(ours_stream, 20, 3), best_of(bare_stream, 20, 3)
        rows.append(("400-chunk SSE stream on loopback (bare httpx baseline)", s_ours, s_bare))
        client.close()
        backend.close()
        return {
            "http_roundtrip_ms": ours_s * 1e3,
            "bare_httpx_roundtrip_ms": bare_s * 1e3,
            "sse_stream_ms": s_ours * 1e3,
            "bare_httpx_sse_ms": s_bare * 1e3,
        }
    finally:
        server.close()


def main() -> dict:
    rows: list[tuple[str, float, float | None]] = []
    figures: dict[str, Any] = {}
    figures.update(bench_repair(rows))
    figures.update(bench_encode(rows))
    figures.update(bench_http(rows))
    print(f"{'measurement':58} {'tooluse':>12} {'baseline':>12} {'ratio':>7}")
    for name, ours, base in rows:
        base_text = f"{base * 1e6:10.1f}us" if base else "       n/a  "
        ratio = f"{ours / base:6.2f}x" if base else "   n/a"
        print(f"{name:58} {ours * 1e6:10.1f}us {base_text} {ratio}")
        figures.setdefault("ratios", {})[name] = round(ours / base, 3) if base else None
    return figures


if __name__ == "__main__":
    main()
