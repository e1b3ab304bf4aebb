"""Deferred tools behind the provider's own tool search, cache breakpoints after the tools, and
cached-token usage: each request is checked against the official SDKs' request types (Anthropic,
OpenAI Responses; Bedrock through botocore's Converse model), each response fixture against the
SDKs' response types, and a whole run goes through a real server on 127.0.0.1."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from tooluse import (
    AnthropicBackend,
    BedrockBackend,
    ChatMessage,
    ModelCapabilities,
    OpenAIBackend,
    SamplingParams,
    ToolDefinition,
    ToolResult,
    Usage,
    run,
)
from tooluse.events import ToolCallStarted
from tooluse.loop.message_data import message_from_data, message_to_data
from tooluse.providers import RetryPolicy, anthropic, bedrock, gemini, openai_chat, openai_responses
from tooluse.providers.claude_models import claude_capabilities
from tooluse.providers.prices import cost_of, register_price
from tooluse.providers.tool_loading import responses_tool_search_supported
from tooluse.retrieval.tool_search import ToolSearch

from .conftest import Reply
from .conversation import TIME, WEATHER

FAST = RetryPolicy(max_retries=0)


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


def many_tools() -> list[Any]:
    filler = [
        ToolDefinition.from_schema(
            f"inventory_item_{i}",
            {"type": "object", "properties": {"sku": {"type": "string"}}},
            description=f"Look up stock level number {i} for a warehouse product.",
        )
        for i in range(30)
    ]
    return [*filler, get_weather]


def known_keys(value: dict[str, Any], typed_dict: Any) -> None:
    """Every key of ``value`` is a field of the SDK's TypedDict (pydantic ignores extra keys)."""
    fields = typed_dict.__required_keys__ | typed_dict.__optional_keys__
    assert set(value) <= fields, set(value) - fields


# -- Anthropic --------------------------------------------------------------------------------

SEARCH_TURN: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "text", "text": "Let me find a weather tool."},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01",
            "name": "tool_search_tool_bm25",
            "input": {"query": "weather in a city"},
        },
        {
            "type": "tool_search_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
            },
        },
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 50,
        "output_tokens": 40,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 100,
    },
}


def anthropic_request_adapter() -> TypeAdapter[Any]:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    return TypeAdapter(MessageCreateParamsNonStreaming)


def check_anthropic_tools(tools: list[dict[str, Any]]) -> None:
    from anthropic.types import ToolParam, ToolSearchToolBm25_20251119Param

    for tool in tools:
        known_keys(tool, ToolSearchToolBm25_20251119Param if "type" in tool else ToolParam)


def test_the_search_turn_fixture_is_a_valid_anthropic_message():
    from anthropic.types import Message

    message = Message.model_validate(SEARCH_TURN)
    assert [block.type for block in message.content][1:3] == [
        "server_tool_use",
        "tool_search_tool_result",
    ]


def test_anthropic_sends_deferred_tools_with_the_search_tool_and_a_cache_breakpoint():
    params = SamplingParams(deferred_tools=frozenset({"get_weather"}), cache_tools=True)
    body = anthropic.encode_request(
        [ChatMessage.user("Weather?")], [TIME, WEATHER], params, model="claude-sonnet-4-5"
    )
    anthropic_request_adapter().validate_python(body)
    check_anthropic_tools(body["tools"])
    search, time, weather = body["tools"]
    assert search == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert "defer_loading" not in time and weather["defer_loading"] is True
    # the breakpoint goes on the last tool loaded up front; deferred tools are not in the prefix
    assert time["cache_control"] == {"type": "ephemeral"} and "cache_control" not in weather


def test_anthropic_without_options_sends_the_tools_as_before():
    body = anthropic.encode_request([ChatMessage.user("Weather?")], [TIME, WEATHER])
    assert [t["name"] for t in body["tools"]] == ["get_time", "get_weather"]
    assert all("defer_loading" not in t and "cache_control" not in t for t in body["tools"])
    cached = anthropic.encode_request(
        [ChatMessage.user("Weather?")], [TIME, WEATHER], SamplingParams(cache_tools=True)
    )
    assert [("cache_control" in t) for t in cached["tools"]] == [False, True]
    anthropic_request_adapter().validate_python({**cached, "model": "claude-sonnet-4-5"})


def test_anthropic_search_blocks_decode_to_one_call_and_are_replayed_in_place():
    result = anthropic.decode_response(copy.deepcopy(SEARCH_TURN), model="claude-sonnet-4-5")
    assert [c.name for c in result.tool_calls] == ["get_weather"]  # the server's call is not ours
    assert result.text == "Let me find a weather tool." and result.reasoning == ""
    assert result.usage == Usage(
        input_tokens=1050,
        output_tokens=40,
        requests=1,
        cache_read_tokens=900,
        cache_write_tokens=100,
    )
    history = [
        ChatMessage.user("Weather in Oslo?"),
        result.to_message(),
        ChatMessage.tool_result(ToolResult.success("toolu_01", "get_weather", "sunny")),
    ]
    params = SamplingParams(deferred_tools=frozenset({"get_weather"}))
    body = anthropic.encode_request(history, [WEATHER], params, model="claude-sonnet-4-5")
    anthropic_request_adapter().validate_python(body)
    assert body["messages"][1]["content"] == SEARCH_TURN["content"]
    # a saved run (JSON) keeps the blocks for its replay
    saved = [message_from_data(json.loads(json.dumps(message_to_data(m)))) for m in history]
    again = anthropic.encode_request(saved, [WEATHER], params, model="claude-sonnet-4-5")
    assert again == body
    # another provider gets the call, never the search blocks
    other = openai_chat.encode_request(history, [WEATHER], model="gpt-4o")
    assert "tool_search" not in str(other["messages"])


def anthropic_stream_events() -> list[dict[str, Any]]:
    server_use = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_bm25"}
    return [
        {"type": "message_start", "message": {"usage": {"input_tokens": 50}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Let me find a weather tool."},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {**server_use, "input": {}}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "weather'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ' in a city"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": SEARCH_TURN["content"][2]},
        {"type": "content_block_stop", "index": 2},
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "toolu_01", "name": "get_weather"},
        },
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'},
        },
        {"type": "content_block_stop", "index": 3},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 40},
        },
        {"type": "message_stop"},
    ]


def test_anthropic_stream_keeps_the_search_blocks_with_their_streamed_input():
    assembler = anthropic.AnthropicStreamAssembler(model="claude-sonnet-4-5")
    events = [e for event in anthropic_stream_events() for e in assembler.feed(event)]
    _, result = assembler.finish()
    assert [e.name for e in events if isinstance(e, ToolCallStarted)] == ["get_weather"]
    decoded = anthropic.decode_response(copy.deepcopy(SEARCH_TURN), model="claude-sonnet-4-5")
    assert result.to_message().ordered_parts() == decoded.to_message().ordered_parts()
    answer = ChatMessage.tool_result(ToolResult.success("toolu_01", "get_weather", "sunny"))
    replayed = anthropic.encode_request(
        [ChatMessage.user("q"), result.to_message(), answer], [WEATHER], model="claude-sonnet-4-5"
    )
    server_use = replayed["messages"][1]["content"][1]
    assert server_use["input"] == {"query": "weather in a city"}


def test_claude_models_with_tool_search():
    supported = [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5",
        "claude-opus-4-7",
        "claude-fable-5",
    ]
    for model in supported:
        assert claude_capabilities(model).tool_search, model
    for model in ["claude-sonnet-4-20250514", "claude-3-5-haiku-20241022", "claude-opus-4-1", "x"]:
        assert not claude_capabilities(model).tool_search, model
    assert AnthropicBackend("claude-sonnet-4-5", api_key="k").capabilities.supports_tool_search
    assert not AnthropicBackend("claude-3-5-haiku", api_key="k").capabilities.supports_tool_search


def test_a_run_on_claude_uses_its_tool_search_and_replays_what_it_found(server):
    server.replies.append(Reply(json=copy.deepcopy(SEARCH_TURN)))
    final = {**SEARCH_TURN, "content": [{"type": "text", "text": "Sunny in Oslo."}]}
    server.replies.append(Reply(json={**final, "stop_reason": "end_turn"}))
    backend = AnthropicBackend("claude-sonnet-4-5", base_url=server.url, api_key="k", retry=FAST)
    result = run(
        backend, "Weather in Oslo?", tools=ToolSearch(many_tools(), always=["inventory_item_0"])
    )
    assert result.final_text == "Sunny in Oslo."
    assert [t.output for t in result.trail] == ["sunny in Oslo"]
    first, second = (r.body for r in server.requests)
    for body in (first, second):
        anthropic_request_adapter().validate_python(body)
        check_anthropic_tools(body["tools"])
    names = [t["name"] for t in first["tools"]]
    assert names[0] == "tool_search_tool_bm25" and "search_tools" not in names
    assert len(names) == 32  # the search tool and every tool of the set
    loaded = [t["name"] for t in first["tools"][1:] if not t.get("defer_loading")]
    assert loaded == ["inventory_item_0"]
    assert second["messages"][1]["content"] == SEARCH_TURN["content"]
    assert result.usage.cache_read_tokens == 1800  # both turns read 900 from the cache


def test_a_tool_search_on_an_older_claude_keeps_search_tools(server):
    server.replies.append(Reply(json={**SEARCH_TURN, "content": [{"type": "text", "text": "hi"}]}))
    backend = AnthropicBackend("claude-3-5-haiku", base_url=server.url, api_key="k", retry=FAST)
    run(backend, "q", tools=ToolSearch(many_tools()))
    assert [t["name"] for t in server.requests[0].body["tools"]] == ["search_tools"]


# -- OpenAI Responses -------------------------------------------------------------------------

WEATHER_FUNCTION = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "strict": False,
    "defer_loading": True,
}
SEARCH_OUTPUT: list[dict[str, Any]] = [
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
    {
        "type": "tool_search_call",
        "id": "tsc_1",
        "execution": "server",
        "arguments": {"query": "weather"},
        "status": "completed",
    },
    {
        "type": "tool_search_output",
        "id": "tso_1",
        "execution": "server",
        "status": "completed",
        "tools": [WEATHER_FUNCTION],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Oslo"}',
        "status": "completed",
    },
]


def test_the_responses_search_items_are_valid_output_items():
    from openai.types.responses import ResponseOutputItem

    adapter: TypeAdapter[Any] = TypeAdapter(ResponseOutputItem)
    assert [type(adapter.validate_python(i)).__name__ for i in SEARCH_OUTPUT] == [
        "ResponseReasoningItem",
        "ResponseToolSearchCall",
        "ResponseToolSearchOutputItem",
        "ResponseFunctionToolCall",
    ]


def test_responses_sends_deferred_functions_with_the_hosted_tool_search():
    from openai.types.responses import FunctionToolParam, ToolSearchToolParam
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    params = SamplingParams(deferred_tools=frozenset({"get_weather"}), cache_tools=True)
    body = openai_responses.encode_request(
        [ChatMessage.user("Weather?")], [TIME, WEATHER], params, model="gpt-5.4"
    )
    TypeAdapter(ResponseCreateParamsNonStreaming).validate_python(body)
    search, time, weather = body["tools"]
    assert search == {"type": "tool_search"}
    known_keys(search, ToolSearchToolParam)
    for tool in (time, weather):
        known_keys(tool, FunctionToolParam)
    assert "defer_loading" not in time and weather["defer_loading"] is True
    assert "cache_control" not in str(body)  # OpenAI caches prompts by itself


def test_responses_search_items_are_kept_and_replayed_before_the_call():
    from openai.types.responses import ResponseInputItemParam

    body = {
        "id": "resp_1",
        "status": "completed",
        "output": copy.deepcopy(SEARCH_OUTPUT),
        "usage": {
            "input_tokens": 1200,
            "output_tokens": 30,
            "input_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 0},
        },
    }
    result = openai_responses.decode_response(body, model="gpt-5.4")
    assert [c.name for c in result.tool_calls] == ["get_weather"]
    assert result.usage.cache_read_tokens == 1000 and result.usage.input_tokens == 1200
    history = [
        ChatMessage.user("Weather in Oslo?"),
        result.to_message(),
        ChatMessage.tool_result(ToolResult.success(result.tool_calls[0].id, "get_weather", "sun")),
    ]
    replayed = openai_responses.encode_request(history, [WEATHER], model="gpt-5.4")
    items = replayed["input"]
    # the reasoning item stays: the search call after it goes back with its own id
    assert [i.get("type") for i in items[1:5]] == [
        "reasoning",
        "tool_search_call",
        "tool_search_output",
        "function_call",
    ]
    assert items[2:4] == SEARCH_OUTPUT[1:3]
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseInputItemParam)
    for item in items:
        adapter.validate_python(item)
    # a different model gets the call without the search items
    other = openai_responses.encode_request(history, [WEATHER], model="gpt-4o")
    assert [i.get("type") for i in other["input"]][1] == "function_call"


def test_openai_models_with_the_hosted_tool_search():
    for model in ["gpt-5.4", "gpt-5.4-mini", "gpt-5.5", "gpt-6", "openai/gpt-5.4"]:
        assert responses_tool_search_supported(model), model
    for model in ["gpt-5", "gpt-5.2", "gpt-4o", "o3", "my-gpt-5.4-finetune"]:
        assert not responses_tool_search_supported(model), model
    assert OpenAIBackend("gpt-5.4", api="responses", api_key="k").capabilities.supports_tool_search
    assert not OpenAIBackend("gpt-5.4", api_key="k").capabilities.supports_tool_search  # chat
    local = OpenAIBackend("gpt-5.4", api="responses", base_url="http://127.0.0.1:9/v1")
    assert not local.capabilities.supports_tool_search  # a compatible server is not OpenAI


def test_a_run_on_responses_uses_the_hosted_search(server):
    body = {"id": "r1", "status": "completed", "output": copy.deepcopy(SEARCH_OUTPUT)}
    server.replies.append(Reply(json=body))
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}],
    }
    server.replies.append(Reply(json={"id": "r2", "status": "completed", "output": [message]}))
    backend = OpenAIBackend(
        "gpt-5.4",
        api="responses",
        base_url=server.url,
        api_key="k",
        retry=FAST,
        capabilities=ModelCapabilities(supports_tool_search=True, supports_error_results=False),
    )
    result = run(backend, "Weather in Oslo?", tools=ToolSearch(many_tools()))
    assert result.final_text == "Sunny." and [t.output for t in result.trail] == ["sunny in Oslo"]
    first, second = (r.body for r in server.requests)
    assert first["tools"][0] == {"type": "tool_search"}
    assert all(t["defer_loading"] for t in first["tools"][1:]) and len(first["tools"]) == 32
    assert [i.get("type") for i in second["input"][1:5]] == [
        "reasoning",
        "tool_search_call",
        "tool_search_output",
        "function_call",
    ]


# -- Bedrock ----------------------------------------------------------------------------------


def test_bedrock_ends_the_tools_with_a_cache_point_valid_for_converse():
    from botocore.session import get_session
    from botocore.validate import ParamValidator

    body = bedrock.encode_request(
        [ChatMessage.user("Weather?")],
        [TIME, WEATHER],
        SamplingParams(cache_tools=True, deferred_tools=frozenset({"get_weather"})),
        model="anthropic.claude-sonnet-4-5-20250929-v1:0",
    )
    shape = get_session().get_service_model("bedrock-runtime").operation_model("Converse")
    report = ParamValidator().validate({"modelId": "m", **body}, shape.input_shape)
    assert not report.has_errors(), report.generate_report()
    tools = body["toolConfig"]["tools"]
    assert [next(iter(t)) for t in tools] == ["toolSpec", "toolSpec", "cachePoint"]
    assert tools[-1] == {"cachePoint": {"type": "default"}}
    assert "defer" not in str(tools)  # Converse has no tool search: every tool is sent
    plain = bedrock.encode_request([ChatMessage.user("Weather?")], [TIME, WEATHER])
    assert all("toolSpec" in t for t in plain["toolConfig"]["tools"])


def test_bedrock_backend_has_no_tool_search_and_reads_cache_tokens(server):
    backend = BedrockBackend(
        "anthropic.claude-sonnet-4-5-20250929-v1:0", base_url=server.url, api_key="k", retry=FAST
    )
    assert not backend.capabilities.supports_tool_search
    server.replies.append(
        Reply(
            json={
                "output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
                "stopReason": "end_turn",
                "usage": {
                    "inputTokens": 10,
                    "outputTokens": 2,
                    "totalTokens": 312,
                    "cacheReadInputTokens": 200,
                    "cacheWriteInputTokens": 100,
                },
            }
        )
    )
    usage = backend.generate([ChatMessage.user("hi")]).usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        310,
        200,
        100,
    )


# -- usage and cost ---------------------------------------------------------------------------


def test_chat_and_gemini_usage_read_their_cached_tokens():
    chat = openai_chat.decode_response(
        {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}],
            "usage": {
                "prompt_tokens": 1500,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 1024},
            },
        }
    )
    assert (chat.usage.input_tokens, chat.usage.cache_read_tokens) == (1500, 1024)
    reply = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]}}],
        "usageMetadata": {
            "promptTokenCount": 3000,
            "candidatesTokenCount": 4,
            "cachedContentTokenCount": 2048,
        },
    }
    usage = gemini.decode_response(reply).usage
    assert (usage.input_tokens, usage.cache_read_tokens) == (3000, 2048)


def test_cached_tokens_add_up_and_survive_the_cost():
    total = Usage(input_tokens=10, cache_read_tokens=4) + Usage(
        input_tokens=5, cache_write_tokens=2
    )
    assert (total.cache_read_tokens, total.cache_write_tokens) == (4, 2)
    priced = cost_of(total, "anthropic", "claude-haiku-4-5")
    assert (priced.cache_read_tokens, priced.cache_write_tokens) == (4, 2)


def test_cached_tokens_cost_the_input_price_unless_the_entry_has_a_cache_price():
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=0,
        cache_read_tokens=600_000,
        cache_write_tokens=200_000,
    )
    # the shipped table has no cache prices: every prompt token at the input price
    assert cost_of(usage, "anthropic", "claude-haiku-4-5").cost == pytest.approx(1.0)
    register_price("anthropic", "claude-cache-house", input=1.0, output=5.0, cache_read=0.1)
    assert cost_of(usage, "anthropic", "claude-cache-house").cost == pytest.approx(
        (200_000 * 1.0 + 600_000 * 0.1 + 200_000 * 1.0) / 1_000_000
    )
    register_price(
        "anthropic", "claude-cache-house", input=1.0, output=5.0, cache_read=0.1, cache_write=1.25
    )
    assert cost_of(usage, "anthropic", "claude-cache-house").cost == pytest.approx(
        (200_000 * 1.0 + 600_000 * 0.1 + 200_000 * 1.25) / 1_000_000
    )
