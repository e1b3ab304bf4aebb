"""Tests aimed at adapter mutants the wire tests let through: missing usage and stop reasons,
and Anthropic stream blocks whose indexes do not start at zero."""

from __future__ import annotations

from tooluse.messages import Usage
from tooluse.providers import anthropic, openai_responses


def test_responses_body_without_usage_counts_one_request_and_no_tokens():
    body = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]}
    result = openai_responses.decode_response(body)
    assert result.usage == Usage(input_tokens=0, output_tokens=0, requests=1)
    partial = openai_responses.decode_response({**body, "usage": {"output_tokens": 3}})
    assert partial.usage == Usage(input_tokens=0, output_tokens=3, requests=1)


def test_anthropic_stop_reason_maps_and_defaults_to_stop():
    content = [{"type": "text", "text": "hi"}]
    cut = anthropic.decode_response({"content": content, "stop_reason": "max_tokens"})
    assert cut.finish_reason == "length"
    plain = anthropic.decode_response({"content": content})
    assert plain.finish_reason == "stop"


def test_anthropic_stream_keeps_blocks_by_their_own_index():
    stream = anthropic.AnthropicStreamAssembler()
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 5}}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "message_stop"},
    ]
    for event in events:
        stream.feed(event)
    _, result = stream.finish()
    assert result.text == "hi"
    assert result.finish_reason == "stop"


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One ``application/vnd.amazon.eventstream`` message (string headers only)."""
    import zlib

    head = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + len(v.encode()).to_bytes(2, "big") + v.encode()
        for k, v in headers.items()
    )
    prelude = (16 + len(head) + len(payload)).to_bytes(4, "big") + len(head).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + head + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


def test_bedrock_event_stream_frames_decode_to_named_events():
    from tooluse.providers.bedrock_aws import EventStreamDecoder

    data = (
        frame({":message-type": "event", ":event-type": "contentBlockDelta"}, b'{"i": 1}')
        + frame({":message-type": "exception", ":exception-type": "throttling"}, b'{"m": 2}')
        + frame({":message-type": "error", ":error-message": "boom"}, b"")
    )
    decoder = EventStreamDecoder()
    events = [event for i in range(len(data)) for event in decoder.feed(data[i : i + 1])]
    assert events == [
        {"contentBlockDelta": {"i": 1}},
        {"throttlingException": {"m": 2}},
        {"errorException": {"message": "boom"}},
    ]
