"""A stream that ends before its terminal event is an error carrying the partial turn.

Each provider's stream is served by a real HTTP server on 127.0.0.1 that stops early: no
``[DONE]``, no ``message_stop``, no ``response.completed``, no Gemini finish reason, no Bedrock
``messageStop``, a connection closed mid-body, a last event cut mid-JSON. None of these may come
back as a complete turn holding half-written arguments.
"""

from __future__ import annotations

import json

import pytest

from tooluse import (
    AnthropicBackend,
    BedrockBackend,
    ChatMessage,
    GeminiBackend,
    GenerationDone,
    OpenAIBackend,
    ToolCallFinished,
)
from tooluse.errors import BackendError, IncompleteStreamError
from tooluse.providers import RetryPolicy

from .conftest import Reply
from .conversation import WEATHER
from .test_hosted_backends_http import eventstream_frame

FAST = RetryPolicy(max_retries=0)
USER = [ChatMessage.user("Weather in Paris?")]


def chat_chunk(delta, finish=None):
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


CHAT_CALL_START = chat_chunk(
    {
        "role": "assistant",
        "tool_calls": [
            {
                "index": 0,
                "id": "call_w",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ],
    }
)
CHAT_HALF_ARGS = chat_chunk(
    {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Par'}}]}
)
CHAT_REST_ARGS = chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'is"}'}}]})


def openai(server) -> OpenAIBackend:
    return OpenAIBackend("m", base_url=server.url, api_key="k", retry=FAST)


def assert_cut_short(exc: IncompleteStreamError, terminal: str, raw_arguments: str) -> None:
    assert isinstance(exc, BackendError)
    assert terminal in str(exc)
    partial = exc.partial
    assert partial is not None and len(partial.tool_calls) == 1
    call = partial.tool_calls[0]
    # The half-written arguments are kept as they came, never passed off as a complete call.
    assert call.name == "get_weather" and call.arguments == {}
    assert call.raw_arguments == raw_arguments


def test_chat_stream_without_done_is_an_error_with_the_partial_turn(server):
    server.replies.append(Reply(sse=[CHAT_CALL_START, CHAT_HALF_ARGS], done_marker=False))
    events = []
    with pytest.raises(IncompleteStreamError) as info:
        for event in openai(server).stream_with_tools(USER, [WEATHER]):
            events.append(event)
    assert_cut_short(info.value, "[DONE]", '{"city": "Par')
    assert not any(isinstance(e, (ToolCallFinished, GenerationDone)) for e in events)


def test_chat_stream_with_done_is_complete(server):
    finish = chat_chunk({}, "tool_calls")
    server.replies.append(Reply(sse=[CHAT_CALL_START, CHAT_HALF_ARGS, CHAT_REST_ARGS, finish]))
    done = list(openai(server).stream_with_tools(USER, [WEATHER]))[-1]
    assert isinstance(done, GenerationDone)
    assert done.result.tool_calls[0].arguments == {"city": "Paris"}


def test_chat_stream_with_finish_reason_but_no_done_is_still_cut_short(server):
    finish = chat_chunk({}, "tool_calls")
    server.replies.append(
        Reply(sse=[CHAT_CALL_START, CHAT_HALF_ARGS, CHAT_REST_ARGS, finish], done_marker=False)
    )
    with pytest.raises(IncompleteStreamError):
        list(openai(server).stream_with_tools(USER, [WEATHER]))


async def test_chat_async_stream_closed_mid_body_is_an_error(server):
    payload = "".join(f"data: {json.dumps(c)}\n\n" for c in [CHAT_CALL_START, CHAT_HALF_ARGS])
    full = (payload + f"data: {json.dumps(CHAT_REST_ARGS)}\n\ndata: [DONE]\n\n").encode()
    server.replies.append(
        Reply(raw=full, content_type="text/event-stream", cut_after=len(payload.encode()))
    )
    backend = openai(server)
    with pytest.raises(IncompleteStreamError) as info:
        async for _ in backend.astream_with_tools(USER, [WEATHER]):
            pass
    assert_cut_short(info.value, "[DONE]", '{"city": "Par')
    assert info.value.__cause__ is not None  # the broken connection, kept as the cause
    await backend.aclose()


def test_chat_last_event_cut_mid_json_is_an_error_not_a_parse_failure(server):
    payload = f"data: {json.dumps(CHAT_CALL_START)}\n\ndata: {json.dumps(CHAT_HALF_ARGS)}\n\n"
    payload += 'data: {"id": "c1", "choices": [{"index": 0, "delta": {"tool_ca'
    server.replies.append(Reply(raw=payload.encode(), content_type="text/event-stream"))
    with pytest.raises(IncompleteStreamError) as info:
        list(openai(server).stream_with_tools(USER, [WEATHER]))
    assert_cut_short(info.value, "[DONE]", '{"city": "Par')
    assert "not JSON" in str(info.value)


ANTHROPIC_EVENTS = [
    ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 9}}}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather"},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Par'},
        },
    ),
]


def test_anthropic_stream_without_message_stop_is_an_error(server):
    server.replies.append(Reply(sse_events=ANTHROPIC_EVENTS))
    backend = AnthropicBackend("claude-haiku-4-5", base_url=server.url, api_key="k", retry=FAST)
    with pytest.raises(IncompleteStreamError) as info:
        list(backend.stream_with_tools(USER, [WEATHER]))
    assert_cut_short(info.value, "message_stop", '{"city": "Par')
    assert info.value.partial.usage.input_tokens == 9


def test_anthropic_stream_with_message_stop_is_complete(server):
    rest = [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": 'is"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    server.replies.append(Reply(sse_events=ANTHROPIC_EVENTS + rest))
    backend = AnthropicBackend("claude-haiku-4-5", base_url=server.url, api_key="k", retry=FAST)
    done = list(backend.stream_with_tools(USER, [WEATHER]))[-1]
    assert done.result.tool_calls[0].arguments == {"city": "Paris"}


def test_responses_stream_without_completed_is_an_error(server):
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": "",
    }
    events = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"city": "Par',
        },
    ]
    server.replies.append(Reply(sse=events, done_marker=False))
    backend = OpenAIBackend(
        "o4-mini", base_url=server.url, api_key="k", api="responses", retry=FAST
    )
    with pytest.raises(IncompleteStreamError) as info:
        list(backend.stream_with_tools(USER, [WEATHER]))
    assert_cut_short(info.value, "response.completed", '{"city": "Par')


def test_gemini_stream_without_finish_reason_is_an_error(server):
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me check."}]}}]},
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "X"}}}],
                    }
                }
            ]
        },
    ]
    server.replies.append(Reply(sse=chunks, done_marker=False))
    backend = GeminiBackend("gemini-2.5-flash", base_url=server.url, api_key="k", retry=FAST)
    with pytest.raises(IncompleteStreamError) as info:
        list(backend.stream_with_tools(USER, [WEATHER]))
    assert "finishReason" in str(info.value)
    assert info.value.partial.text == "Let me check."
    # With the finish reason, the same chunks are a whole turn.
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    server.replies.append(Reply(sse=chunks, done_marker=False))
    done = list(backend.stream_with_tools(USER, [WEATHER]))[-1]
    assert done.result.tool_calls[0].arguments == {"city": "X"}


def test_gemini_blocked_prompt_stream_is_complete(server):
    server.replies.append(
        Reply(sse=[{"promptFeedback": {"blockReason": "SAFETY"}}], done_marker=False)
    )
    backend = GeminiBackend("gemini-2.5-flash", base_url=server.url, api_key="k", retry=FAST)
    done = list(backend.stream_with_tools(USER, [WEATHER]))[-1]
    assert done.result.finish_reason == "content_filter" and not done.result.tool_calls


def test_bedrock_stream_without_message_stop_is_an_error(server):
    import botocore  # noqa: F401  (installed by make install; absent is a failure)

    frames = b"".join(
        [
            eventstream_frame("messageStart", {"role": "assistant"}),
            eventstream_frame(
                "contentBlockStart",
                {
                    "contentBlockIndex": 0,
                    "start": {"toolUse": {"toolUseId": "tu_1", "name": "get_weather"}},
                },
            ),
            eventstream_frame(
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"city": "Par'}}},
            ),
        ]
    )
    server.replies.append(Reply(raw=frames, content_type="application/vnd.amazon.eventstream"))
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    backend = BedrockBackend(model, base_url=server.url, api_key="k", retry=FAST)
    with pytest.raises(IncompleteStreamError) as info:
        list(backend.stream_with_tools(USER, [WEATHER]))
    assert_cut_short(info.value, "messageStop", '{"city": "Par')


def test_chat_stream_that_finished_every_choice_without_done_is_complete(server):
    # Some OpenAI-compatible servers never send [DONE]; the turn is whole once every choice has
    # its finish_reason and the usage chunk that was asked for has come.
    usage = {"id": "c1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}
    finished = chat_chunk({}, finish="tool_calls")
    server.replies.append(
        Reply(
            sse=[CHAT_CALL_START, CHAT_HALF_ARGS, CHAT_REST_ARGS, finished, usage],
            done_marker=False,
        )
    )
    events = list(openai(server).stream(USER, [WEATHER]))
    result = events[-1].result
    assert result.tool_calls[0].arguments == {"city": "Paris"}
    assert result.usage.input_tokens == 5


def test_chat_stream_that_finished_but_lost_its_usage_chunk_is_incomplete(server):
    finished = chat_chunk({}, finish="tool_calls")
    server.replies.append(
        Reply(sse=[CHAT_CALL_START, CHAT_HALF_ARGS, CHAT_REST_ARGS, finished], done_marker=False)
    )
    with pytest.raises(IncompleteStreamError, match="usage"):
        list(openai(server).stream(USER, [WEATHER]))


def test_chat_stream_without_usage_asked_is_complete_at_the_last_finish_reason(server):
    finished = chat_chunk({"content": "Sunny."}, finish="stop")
    server.replies.append(Reply(sse=[finished], done_marker=False))
    backend = OpenAIBackend("m", base_url=server.url, api_key="k", retry=FAST, stream_usage=False)
    assert list(backend.stream(USER))[-1].result.text == "Sunny."


def _anthropic_body() -> bytes:
    return "".join(
        f"event: {name}\ndata: {json.dumps(item)}\n\n" for name, item in ANTHROPIC_EVENTS
    ).encode()


@pytest.mark.parametrize("streaming", ["sync", "async"])
def test_a_stream_that_stalls_past_the_read_timeout_is_a_timeout_with_the_partial_turn(
    server, streaming
):
    from tooluse.errors import BackendTimeoutError, StreamTimeoutError

    body = _anthropic_body()
    # Everything but the end is sent, then the server goes quiet for longer than the timeout.
    server.replies.append(
        Reply(raw=body + b"\n" * 10, content_type="text/event-stream", cut_after=len(body), stall=3)
    )
    backend = AnthropicBackend(
        "claude-haiku-4-5", base_url=server.url, api_key="k", retry=FAST, timeout=0.5
    )

    async def consume() -> None:
        async for _ in backend.astream(USER, [WEATHER]):
            pass

    with pytest.raises(BackendTimeoutError) as info:
        if streaming == "sync":
            list(backend.stream(USER, [WEATHER]))
        else:
            import asyncio

            asyncio.run(consume())
    assert isinstance(info.value, StreamTimeoutError)
    assert isinstance(info.value, IncompleteStreamError)
    assert_cut_short(info.value, "message_stop", '{"city": "Par')
