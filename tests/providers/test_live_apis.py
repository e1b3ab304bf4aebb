"""Real hosted APIs; each test is skipped with a reason when its API key is absent."""

from __future__ import annotations

import os

import pytest

from tooluse import ChatMessage, GenerationDone, ToolResult, load_model

from .conversation import WEATHER

pytestmark = pytest.mark.network_key

CASES = [
    ("OPENAI_API_KEY", "openai:gpt-4o-mini"),
    ("OPENAI_API_KEY", "openai-responses:gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5"),
    ("GEMINI_API_KEY", "gemini:gemini-2.5-flash"),
    ("AWS_BEARER_TOKEN_BEDROCK", "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0"),
]


@pytest.mark.parametrize("env, spec", CASES, ids=[spec for _, spec in CASES])
def test_forced_tool_call_then_final_answer(env, spec):
    if not os.environ.get(env):
        pytest.skip(f"{env} is not set")
    backend = load_model(spec)
    messages = [ChatMessage.user("What is the weather in Paris? Use the tool.")]
    first = backend.generate_with_tools(messages, [WEATHER], tool_choice="get_weather")
    assert first.has_tool_calls and first.tool_calls[0].name == "get_weather"
    messages.append(first.to_message())
    messages += [
        ChatMessage.tool_result(ToolResult.success(c.id, c.name, "sunny, 21 C"))
        for c in first.tool_calls
    ]
    events = list(backend.stream_with_tools(messages, [WEATHER], tool_choice="none"))
    assert isinstance(events[-1], GenerationDone)
    assert "21" in events[-1].result.text or "sunny" in events[-1].result.text.lower()
