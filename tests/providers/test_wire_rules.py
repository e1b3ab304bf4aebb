"""Cross-provider rules: strict schemas, invalid argument JSON, empty arguments, placeholder tools."""

from __future__ import annotations

import json

import pytest

from tooluse import ChatMessage, ToolArgumentError, ToolCall, ToolResult
from tooluse.providers import anthropic, bedrock, gemini, openai_chat, openai_responses

from .conversation import TIME, WEATHER


def test_strict_schemas_per_provider():
    chat = openai_chat.encode_request([ChatMessage.user("x")], [WEATHER], strict=True)
    function = chat["tools"][0]["function"]
    assert function["strict"] is True and function["parameters"]["additionalProperties"] is False
    responses = openai_responses.encode_request([ChatMessage.user("x")], [WEATHER], strict=True)
    assert responses["tools"][0]["strict"] is True
    assert (
        anthropic.encode_request([ChatMessage.user("x")], [WEATHER], strict=True)["tools"][0][
            "strict"
        ]
        is True
    )
    spec = bedrock.encode_request([ChatMessage.user("x")], [WEATHER], strict=True)["toolConfig"][
        "tools"
    ][0]
    assert spec["toolSpec"]["strict"] is True
    config = gemini.encode_request([ChatMessage.user("x")], [WEATHER], strict=True)["toolConfig"]
    assert config == {"functionCallingConfig": {"mode": "VALIDATED"}}
    plain = openai_chat.encode_request([ChatMessage.user("x")], [WEATHER])["tools"][0]["function"]
    assert not plain.get("strict")


def test_invalid_argument_json_becomes_a_model_facing_error():
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{city: Paris"},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    call = openai_chat.decode_response(body).tool_calls[0]
    assert call.raw_arguments == "{city: Paris" and call.arguments == {}
    with pytest.raises(ToolArgumentError) as info:
        WEATHER.validate_arguments(call)
    assert info.value.model_message  # text meant for the model, not a crash
    # The raw text survives a replay to OpenAI unchanged.
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=[call]),
        ChatMessage.tool_result(ToolResult.failure("c1", "get_weather", info.value)),
    ]
    sent = openai_chat.encode_request(history, [WEATHER])["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == "{city: Paris"


@pytest.mark.parametrize("raw", ["", None, "null", "  "])
def test_empty_arguments_are_an_empty_object(raw):
    body = {
        "choices": [
            {
                "message": {
                    "tool_calls": [{"id": "c", "function": {"name": "get_time", "arguments": raw}}]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    call = openai_chat.decode_response(body).tool_calls[0]
    assert call.arguments == {} and call.raw_arguments is None


def test_gemini_and_bedrock_declare_tools_for_a_history_with_tool_blocks():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=[ToolCall(id="c", name="get_time")]),
        ChatMessage.tool_result(ToolResult.success("c", "get_time", "noon")),
    ]
    g = gemini.encode_request(history, [])
    assert g["tools"][0]["functionDeclarations"][0]["name"] == "get_time"
    assert g["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    b = bedrock.encode_request(history, [], model="anthropic.claude")
    assert b["toolConfig"]["tools"][0]["toolSpec"]["name"] == "get_time"
    o = openai_chat.encode_request(history, [])
    assert "tools" not in o  # OpenAI accepts tool turns without declarations


def test_results_of_different_turns_are_never_merged():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=[ToolCall(id="a", name="get_time")]),
        ChatMessage.tool_result(ToolResult.success("a", "get_time", "1")),
        ChatMessage.assistant(tool_calls=[ToolCall(id="b", name="get_time")]),
        ChatMessage.tool_result(ToolResult.success("b", "get_time", "2")),
    ]
    msgs = anthropic.encode_request(history, [TIME])["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
    assert [len(m["content"]) for m in msgs] == [1, 1, 1, 1, 1]


def test_sse_parser_events_comments_multiline_data_and_done():
    from tooluse.providers.http_transport import iter_sse_data

    lines = [
        ": keep-alive",
        "event: message_start",
        'data: {"a":',
        "data: 1}",
        "",
        "data: plain",
        "",
        "data: [DONE]",
        "",
        "data: after-done",
        "",
    ]
    assert list(iter_sse_data(iter(lines))) == [("message_start", '{"a":\n1}'), ("", "plain")]
    assert list(iter_sse_data(iter(["data: no trailing blank line"]))) == [
        ("", "no trailing blank line")
    ]


def test_made_up_tool_names_in_history_are_made_sendable_for_every_provider():
    from tooluse.providers.call_ids import wire_tool_name

    bad = "get weather!"
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=[ToolCall(id="c1", name=bad, arguments={})]),
        ChatMessage.tool_result(ToolResult.failure("c1", bad, "unknown tool 'get weather!'")),
        ChatMessage.user("try again"),
    ]
    name = wire_tool_name(bad)
    assert name == wire_tool_name(bad) and name.startswith("get_weather_") and len(name) <= 64
    assert wire_tool_name("get_weather") == "get_weather"
    anth = anthropic.encode_request(history, [WEATHER])
    assert anth["messages"][1]["content"][0]["name"] == name
    chat = openai_chat.encode_request(history, [WEATHER])
    assert chat["messages"][1]["tool_calls"][0]["function"]["name"] == name
    gem = gemini.encode_request(history, [])
    assert gem["contents"][1]["parts"][0]["functionCall"]["name"] == name
    assert gem["contents"][2]["parts"][0]["functionResponse"]["name"] == name
    assert any(t["name"] == name for t in gem["tools"][0]["functionDeclarations"])
    br = bedrock.encode_request(history, [], model="anthropic.claude")
    assert br["messages"][1]["content"][0]["toolUse"]["name"] == name


@pytest.mark.parametrize(
    "dialect", ["openai", "openai_responses", "anthropic", "gemini", "bedrock"]
)
def test_plain_schema_of_a_tool_without_exporters_matches_the_exporters(dialect):
    from types import SimpleNamespace

    from tooluse.providers.wire_common import tool_schema

    bare = SimpleNamespace(
        name=WEATHER.name,
        description=WEATHER.description,
        parameters_schema=WEATHER.parameters_schema,
    )
    exported = tool_schema(WEATHER, dialect)
    plain = tool_schema(bare, dialect)  # type: ignore[arg-type]
    for schema in (exported, plain):  # strict is an exporter-only extra
        schema.pop("strict", None)
        schema.get("function", {}).pop("strict", None)
    if dialect == "gemini":  # unconverted schemas go as full JSON Schema, not the OpenAPI subset
        plain["parameters"] = plain.pop("parametersJsonSchema")
    assert plain == exported
    no_params = SimpleNamespace(name="ping", description="Ping", parameters_schema={})
    body = json.dumps(tool_schema(no_params, dialect))  # type: ignore[arg-type]
    assert '"type": "object"' in body and '"properties": {}' in body


def test_any_is_required_on_every_wire():
    user = [ChatMessage.user("x")]
    assert openai_chat.encode_request(user, [WEATHER], tool_choice="any")["tool_choice"] == (
        "required"
    )
    assert anthropic.encode_request(user, [WEATHER], tool_choice="any")["tool_choice"] == {
        "type": "any"
    }
    config = gemini.encode_request(user, [WEATHER], tool_choice="any")["toolConfig"]
    assert config == {"functionCallingConfig": {"mode": "ANY"}}
    with pytest.raises(ValueError, match="neither auto/none/required"):
        openai_chat.encode_request(user, [WEATHER], tool_choice="get_wether")


def test_unknown_schema_dialect_is_refused():
    from types import SimpleNamespace

    from tooluse.providers.wire_common import tool_schema

    bare = SimpleNamespace(name="ping", description="", parameters_schema={})
    with pytest.raises(ValueError, match="unknown schema dialect"):
        tool_schema(bare, "cohere")  # type: ignore[arg-type]
