"""The pure conversions between the SDK's request types and tooluse's (no server needed)."""

from __future__ import annotations

import base64

import mcp_types as types

from tooluse.execution.mcp.server_answers import (
    check_elicited_content,
    create_message_result,
    elicitation_request_from_mcp,
    sampling_request_from_mcp,
)
from tooluse.providers.base import GenerationResult


def test_a_sampling_request_becomes_tooluse_messages():
    image = types.ImageContent(
        type="image", data=base64.b64encode(b"1234").decode(), mime_type="image/png"
    )
    params = types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Hi")),
            types.SamplingMessage(
                role="assistant", content=types.TextContent(type="text", text="Yes?")
            ),
            types.SamplingMessage(
                role="user", content=[types.TextContent(type="text", text="See:"), image]
            ),
        ],
        max_tokens=10,
        system_prompt="Be brief.",
        stop_sequences=["END"],
        model_preferences=types.ModelPreferences(
            hints=[types.ModelHint(name="sonnet"), types.ModelHint()]
        ),
        include_context="thisServer",
        metadata={"k": 1},
    )
    request = sampling_request_from_mcp(params, "docs")
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "Be brief."),
        ("user", "Hi"),
        ("assistant", "Yes?"),
        ("user", "See:\n[image: image/png, 4 bytes]"),
    ]
    assert (request.server, request.max_tokens, request.stop_sequences) == ("docs", 10, ("END",))
    assert request.model_hints == ("sonnet",)
    assert request.include_context == "thisServer" and request.metadata == {"k": 1}


def test_a_backend_turn_becomes_a_create_message_result():
    done = create_message_result(GenerationResult(text="ok", finish_reason="stop"), model="m")
    cut = create_message_result(GenerationResult(text="o", finish_reason="length"), model="m")
    assert (done.content.text, done.model, done.stop_reason) == ("ok", "m", "endTurn")
    assert cut.stop_reason == "maxTokens"


def test_elicitation_requests_in_form_and_url_mode():
    form = types.ElicitRequestFormParams(
        message="Name?",
        requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    )
    url = types.ElicitRequestURLParams(
        message="Sign in", url="https://example.com/login", elicitation_id="e1"
    )
    asked = elicitation_request_from_mcp(form, "s")
    linked = elicitation_request_from_mcp(url, "s")
    assert (asked.mode, asked.schema["properties"]) == ("form", {"name": {"type": "string"}})
    assert (linked.mode, linked.url, linked.elicitation_id) == (
        "url",
        "https://example.com/login",
        "e1",
    )


def test_elicited_content_is_checked_against_the_schema():
    schema = {
        "type": "object",
        "properties": {"seats": {"type": "integer"}, "name": {"type": "string"}},
        "required": ["name"],
    }
    assert check_elicited_content(schema, {"name": "A", "seats": 2}) is None
    problem = check_elicited_content(schema, {"seats": "x"})
    assert "seats: 'x' is not of type 'integer'" in problem
    assert "'name' is a required property" in problem
    assert check_elicited_content({"type": 12}, {"a": 1}) is None  # a broken schema: unchecked
