"""OpenAIBackend against a real HTTP server on 127.0.0.1: requests, streaming, retries, timeouts."""

from __future__ import annotations

import asyncio

import pytest

from tooluse import (
    ArgumentsDelta,
    BackendHTTPError,
    BackendTimeoutError,
    ChatMessage,
    ContextLengthError,
    GenerationDone,
    OpenAIBackend,
    SamplingParams,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolDefinition,
    ToolParameter,
    ToolResult,
    load_model,
)
from tooluse.errors import BackendError, HistoryError
from tooluse.providers import RetryPolicy

from .conftest import Reply

WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city",
    parameters=(ToolParameter("city", description="City name"),),
)
FAST = RetryPolicy(max_retries=2, backoff=0.01, max_backoff=0.02)


def completion(message: dict, finish: str = "stop", usage: dict | None = None) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        "usage": usage or {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def backend(server, **kw) -> OpenAIBackend:
    kw.setdefault("retry", FAST)
    return OpenAIBackend("test-model", base_url=server.url + "/v1", api_key="sk-test", **kw)


def test_tool_call_round_trip_over_http(server):
    server.replies += [
        Reply(
            json=completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        },
                    ],
                },
                finish="tool_calls",
            )
        ),
        Reply(json=completion({"content": "Sunny in Paris."})),
    ]
    b = backend(server)
    messages = [ChatMessage(role="user", content="Weather in Paris?")]
    result = b.generate_with_tools(
        messages, [WEATHER], params=SamplingParams(temperature=0.0), tool_choice="auto"
    )
    assert result.has_tool_calls and result.finish_reason == "tool_calls"
    assert [c.id for c in result.tool_calls] == ["call_a", "call_b"]
    assert result.tool_calls[0].arguments == {"city": "Paris"}
    assert result.tool_calls[1].arguments == {} and result.tool_calls[1].raw_arguments is None
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.requests) == (
        11,
        7,
        1,
    )

    first = server.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.body["model"] == "test-model" and first.body["temperature"] == 0.0
    assert first.body["tool_choice"] == "auto"
    assert first.body["tools"][0]["function"]["name"] == "get_weather"

    messages += [
        result.to_message(),
        ChatMessage.tool_result(ToolResult.success("call_a", "get_weather", "sunny")),
        ChatMessage.tool_result(ToolResult.failure("call_b", "get_weather", "city is required")),
    ]
    final = b.generate_with_tools(messages, [WEATHER])
    assert final.text == "Sunny in Paris." and not final.has_tool_calls
    sent = server.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert sent[1]["tool_calls"][1]["function"]["arguments"] == "{}"
    assert sent[2] == {"role": "tool", "tool_call_id": "call_a", "content": "sunny"}
    assert sent[3]["tool_call_id"] == "call_b" and sent[3]["content"].startswith("error:")


def test_unanswered_call_is_refused_before_any_request(server):
    b = backend(server)
    messages = [
        ChatMessage.user("hi"),
        ChatMessage.assistant(tool_calls=[ToolCall(id="call_x", name="get_weather")]),
        ChatMessage.user("and?"),
    ]
    with pytest.raises(HistoryError) as info:
        b.generate_with_tools(messages, [WEATHER])
    assert info.value.call_ids == ("call_x",)
    assert server.requests == []


def stream_chunks() -> list[dict]:
    def chunk(delta: dict, finish=None) -> dict:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    return [
        chunk({"role": "assistant", "content": "Let me "}),
        chunk({"content": "check."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city"'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "Rome"}'}}]}),
        chunk({}, finish="tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9}},
    ]


def test_streaming_over_sse_assembles_interleaved_calls(server):
    server.replies.append(Reply(sse=stream_chunks()))
    events = list(backend(server).stream_with_tools([ChatMessage.user("x")], [WEATHER]))
    assert server.requests[0].body["stream"] is True
    assert server.requests[0].body["stream_options"] == {"include_usage": True}
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Let me check."
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.index, e.id) for e in started] == [(0, "call_1"), (1, "call_2")]
    args0 = "".join(e.text for e in events if isinstance(e, ArgumentsDelta) and e.index == 0)
    assert args0 == '{"city": "Oslo"}'
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.call.arguments for e in finished] == [{"city": "Oslo"}, {"city": "Rome"}]
    assert isinstance(events[-1], GenerationDone)
    result = events[-1].result
    assert result.text == "Let me check." and result.finish_reason == "tool_calls"
    assert [c.id for c in result.tool_calls] == ["call_1", "call_2"]
    assert result.usage.input_tokens == 20 and result.usage.output_tokens == 9


async def test_async_generate_and_stream(server):
    server.replies += [Reply(json=completion({"content": "hello"})), Reply(sse=stream_chunks())]
    b = backend(server)
    result = await b.agenerate_with_tools([ChatMessage.user("hi")])
    assert result.text == "hello"
    events = [e async for e in b.astream_with_tools([ChatMessage.user("x")], [WEATHER])]
    assert [c.arguments["city"] for c in events[-1].result.tool_calls] == ["Oslo", "Rome"]
    await b.aclose()


def test_retries_on_429_then_succeeds(server):
    server.replies += [
        Reply(status=429, json={"error": {"message": "slow down"}}, headers={"retry-after": "0"}),
        Reply(status=503, json={"error": {"message": "busy"}}),
        Reply(json=completion({"content": "ok"})),
    ]
    assert backend(server).generate([ChatMessage.user("hi")]).text == "ok"
    assert len(server.requests) == 3


def test_stream_retries_before_first_byte(server):
    server.replies += [Reply(status=500, json={"error": "boom"}), Reply(sse=stream_chunks())]
    events = list(backend(server).stream_with_tools([ChatMessage.user("x")], [WEATHER]))
    assert len(events[-1].result.tool_calls) == 2 and len(server.requests) == 2


def test_persistent_500_raises_typed_error_after_retries(server):
    server.replies += [Reply(status=500, json={"error": "boom"}) for _ in range(3)]
    with pytest.raises(BackendHTTPError) as info:
        backend(server).generate([ChatMessage.user("hi")])
    assert info.value.status_code == 500 and "boom" in info.value.body
    assert len(server.requests) == 3


def test_400_is_not_retried(server):
    server.replies += [Reply(status=400, json={"error": {"message": "bad tool schema"}})]
    with pytest.raises(BackendHTTPError) as info:
        backend(server).generate([ChatMessage.user("hi")])
    assert info.value.status_code == 400 and len(server.requests) == 1


def test_context_length_error_is_typed(server):
    server.replies += [
        Reply(
            status=400, json={"error": {"code": "context_length_exceeded", "message": "too long"}}
        )
    ]
    with pytest.raises(ContextLengthError):
        backend(server).generate([ChatMessage.user("hi")])


def test_timeout_against_a_sleeping_server(server):
    server.replies += [Reply(sleep=1.5, json=completion({"content": "late"}))]
    b = backend(server, timeout=0.2, retry=RetryPolicy(max_retries=0))
    with pytest.raises(BackendTimeoutError):
        b.generate([ChatMessage.user("hi")])


def test_timeout_is_retried_then_succeeds(server):
    server.replies += [
        Reply(sleep=1.0, json=completion({"content": "late"})),
        Reply(json=completion({"content": "on time"})),
    ]
    b = backend(server, timeout=0.3)
    assert b.generate([ChatMessage.user("hi")]).text == "on time"


def test_invalid_json_body_is_a_backend_error(server):
    server.replies += [Reply(raw=b"<html>gateway</html>", content_type="text/html")]
    with pytest.raises(BackendError, match="invalid JSON"):
        backend(server).generate([ChatMessage.user("hi")])


def test_connection_refused_is_a_backend_error():
    b = OpenAIBackend(
        "m", base_url="http://127.0.0.1:9/v1", api_key="", retry=RetryPolicy(max_retries=0)
    )
    with pytest.raises(BackendError):
        b.generate([ChatMessage.user("hi")])


def test_load_model_openai_compatible_talks_to_the_server(server):
    server.replies += [Reply(json=completion({"content": "from compat"}))]
    b = load_model(f"openai-compatible:{server.url}/v1#smol", retry=FAST)
    assert b.generate([ChatMessage.user("hi")]).text == "from compat"
    assert server.requests[0].body["model"] == "smol"
    assert "authorization" not in server.requests[0].headers


def test_async_run_in_two_event_loops_reuses_backend(server):
    server.replies += [
        Reply(json=completion({"content": "a"})),
        Reply(json=completion({"content": "b"})),
    ]
    b = backend(server)
    assert asyncio.run(b.agenerate([ChatMessage.user("1")])).text == "a"
    assert asyncio.run(b.agenerate([ChatMessage.user("2")])).text == "b"


async def test_async_retry_then_success_and_async_timeout(server):
    server.replies += [
        Reply(status=502, json={"error": "bad gateway"}),
        Reply(json=completion({"content": "recovered"})),
        Reply(sleep=1.0, json=completion({"content": "late"})),
    ]
    b = backend(server)
    assert (await b.agenerate([ChatMessage.user("hi")])).text == "recovered"
    slow = backend(server, timeout=0.2, retry=RetryPolicy(max_retries=0))
    with pytest.raises(BackendTimeoutError):
        await slow.agenerate([ChatMessage.user("hi")])
    await b.aclose()
    await slow.aclose()


def test_retry_after_header_is_honoured_within_its_cap():
    policy = RetryPolicy(backoff=0.5, max_backoff=4.0, max_retry_after=10.0)
    assert policy.delay(0, "3") == 3.0
    assert policy.delay(0, "120") == 10.0
    assert 0.25 <= policy.delay(1, "Wed, 21 Oct 2015 07:28:00 GMT") <= 1.0
    assert policy.delay(10) <= 4.0


def test_missing_openai_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        OpenAIBackend("gpt-4o")
