"""Anthropic, Gemini and Bedrock backends against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import binascii
import json
import struct

import pytest

from tooluse import (
    AnthropicBackend,
    BedrockBackend,
    ChatMessage,
    GeminiBackend,
    GenerationDone,
    TextDelta,
    ToolCallFinished,
    ToolResult,
)
from tooluse.errors import BackendError, BackendHTTPError
from tooluse.providers import RetryPolicy

from .conftest import Reply
from .conversation import TIME, WEATHER

FAST = RetryPolicy(max_retries=1, backoff=0.01, max_backoff=0.02)


def test_anthropic_request_headers_path_and_decode(server):
    server.replies.append(
        Reply(
            json={
                "type": "message",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 5, "output_tokens": 3},
            }
        )
    )
    b = AnthropicBackend("claude-haiku-4-5", base_url=server.url, api_key="ak", retry=FAST)
    result = b.generate_with_tools([ChatMessage.user("time?")], [TIME], tool_choice="required")
    assert result.tool_calls[0].id == "toolu_1" and result.finish_reason == "tool_calls"
    req = server.requests[0]
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "ak" and req.headers["anthropic-version"] == "2023-06-01"
    assert req.body["tool_choice"] == {"type": "any"} and req.body["max_tokens"] == 4096


def test_anthropic_streaming_over_sse(server):
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"usage": {"input_tokens": 9, "output_tokens": 1}},
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hi"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city":"Pune"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 12},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    server.replies.append(Reply(sse_events=events))
    b = AnthropicBackend("claude-haiku-4-5", base_url=server.url, api_key="ak", retry=FAST)
    out = list(b.stream_with_tools([ChatMessage.user("x")], [WEATHER]))
    assert server.requests[0].body["stream"] is True
    assert [e.text for e in out if isinstance(e, TextDelta)] == ["Hi"]
    assert [e.call.arguments for e in out if isinstance(e, ToolCallFinished)] == [{"city": "Pune"}]
    done = out[-1]
    assert isinstance(done, GenerationDone) and done.result.usage.output_tokens == 12


def test_anthropic_overloaded_529_is_retried(server):
    server.replies += [
        Reply(status=529, json={"type": "error", "error": {"type": "overloaded_error"}}),
        Reply(
            json={
                "type": "message",
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "usage": {},
            }
        ),
    ]
    b = AnthropicBackend("m", base_url=server.url, api_key="ak", retry=FAST)
    assert b.generate([ChatMessage.user("x")]).text == "ok"


async def test_gemini_async_request_and_stream(server):
    server.replies += [
        Reply(
            json={
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "hello"}]},
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 1},
            }
        ),
        Reply(
            sse=[
                {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me"}]}}]},
                {
                    "candidates": [
                        {
                            "content": {
                                "role": "model",
                                "parts": [
                                    {
                                        "functionCall": {
                                            "name": "get_weather",
                                            "args": {"city": "Baku"},
                                        },
                                        "thoughtSignature": "U0k=",
                                    }
                                ],
                            },
                            "finishReason": "STOP",
                        }
                    ]
                },
            ],
            done_marker=False,
        ),
    ]
    b = GeminiBackend("gemini-2.5-flash", base_url=server.url + "/v1beta", api_key="gk", retry=FAST)
    result = await b.agenerate_with_tools([ChatMessage.user("hi")])
    assert result.text == "hello"
    assert server.requests[0].path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert server.requests[0].headers["x-goog-api-key"] == "gk"
    out = [e async for e in b.astream_with_tools([ChatMessage.user("x")], [WEATHER])]
    assert (
        server.requests[1].path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    call = out[-1].result.tool_calls[0]
    assert call.arguments == {"city": "Baku"} and call.state.data == {"thoughtSignature": "U0k="}
    # Next turn: the signature goes back with the call, the minted id does not.
    server.replies.append(
        Reply(
            json={
                "candidates": [{"content": {"parts": [{"text": "warm"}]}, "finishReason": "STOP"}]
            }
        )
    )
    history = [
        ChatMessage.user("x"),
        out[-1].result.to_message(),
        ChatMessage.tool_result(ToolResult.success(call.id, "get_weather", "25C")),
    ]
    assert (await b.agenerate_with_tools(history, [WEATHER])).text == "warm"
    parts = server.requests[2].body["contents"][1]["parts"]
    assert parts[1] == {
        "functionCall": {"name": "get_weather", "args": {"city": "Baku"}},
        "thoughtSignature": "U0k=",
    }
    await b.aclose()


def eventstream_frame(event_type: str, payload: dict, message_type: str = "event") -> bytes:
    """One AWS event-stream message (binary framing with CRC32 checks)."""

    def header(name: str, value: str) -> bytes:
        raw_name, raw_value = name.encode(), value.encode()
        return (
            bytes([len(raw_name)])
            + raw_name
            + b"\x07"
            + struct.pack(">H", len(raw_value))
            + raw_value
        )

    key = ":event-type" if message_type == "event" else ":exception-type"
    headers = (
        header(":message-type", message_type)
        + header(key, event_type)
        + header(":content-type", "application/json")
    )
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


def test_bedrock_bearer_token_converse_and_converse_stream(server):
    import botocore  # noqa: F401  (installed by make install; absent is a failure)

    server.replies.append(
        Reply(
            json={
                "output": {"message": {"role": "assistant", "content": [{"text": "hey"}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1},
            }
        )
    )
    frames = b"".join(
        [
            eventstream_frame("messageStart", {"role": "assistant"}),
            eventstream_frame(
                "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Sure."}}
            ),
            eventstream_frame("contentBlockStop", {"contentBlockIndex": 0}),
            eventstream_frame(
                "contentBlockStart",
                {
                    "contentBlockIndex": 1,
                    "start": {"toolUse": {"toolUseId": "tu_1", "name": "get_weather"}},
                },
            ),
            eventstream_frame(
                "contentBlockDelta",
                {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"city":"Riga"}'}}},
            ),
            eventstream_frame("contentBlockStop", {"contentBlockIndex": 1}),
            eventstream_frame("messageStop", {"stopReason": "tool_use"}),
            eventstream_frame("metadata", {"usage": {"inputTokens": 4, "outputTokens": 6}}),
        ]
    )
    server.replies.append(Reply(raw=frames, content_type="application/vnd.amazon.eventstream"))
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    b = BedrockBackend(model, base_url=server.url, api_key="bedrock-key", retry=FAST)
    assert b.generate([ChatMessage.user("hi")]).text == "hey"
    assert server.requests[0].path == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
    assert server.requests[0].headers["authorization"] == "Bearer bedrock-key"
    out = list(b.stream_with_tools([ChatMessage.user("x")], [WEATHER]))
    assert server.requests[1].path.endswith("/converse-stream")
    result = out[-1].result
    assert result.text == "Sure." and result.tool_calls[0].arguments == {"city": "Riga"}
    assert result.usage.output_tokens == 6 and result.finish_reason == "tool_calls"


def test_bedrock_stream_exception_frame_raises(server):
    import botocore  # noqa: F401  (installed by make install; absent is a failure)

    frames = eventstream_frame(
        "throttlingException", {"message": "Too many requests"}, message_type="exception"
    )
    server.replies.append(Reply(raw=frames, content_type="application/vnd.amazon.eventstream"))
    b = BedrockBackend("amazon.nova-lite-v1:0", base_url=server.url, api_key="k", retry=FAST)
    with pytest.raises(BackendError, match="Too many requests"):
        list(b.stream_with_tools([ChatMessage.user("x")]))


def test_bedrock_sigv4_signature_headers(server):
    import botocore  # noqa: F401  (installed by make install; absent is a failure)

    server.replies.append(
        Reply(
            status=403, json={"message": "The security token included in the request is invalid."}
        )
    )
    b = BedrockBackend(
        "amazon.nova-lite-v1:0",
        base_url=server.url,
        api_key="",
        region="us-west-2",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        retry=FAST,
    )
    with pytest.raises(BackendHTTPError) as info:
        b.generate([ChatMessage.user("x")])
    assert info.value.status_code == 403
    headers = server.requests[0].headers
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-west-2/bedrock/aws4_request" in headers["authorization"]
    assert "x-amz-date" in headers


def test_bedrock_without_botocore_names_the_extra(monkeypatch):
    import sys

    from tooluse import MissingDependencyError

    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    for name in [m for m in sys.modules if m == "botocore" or m.startswith("botocore.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "botocore", None)
    with pytest.raises(MissingDependencyError) as info:
        BedrockBackend("amazon.nova-lite-v1:0", api_key="")
    assert info.value.extra == "bedrock" and "tooluse[bedrock]" in str(info.value)
