"""What every HTTP backend takes from its arguments and the environment: keys, URLs, bodies."""

from __future__ import annotations

import pytest

from tooluse.errors import BackendError
from tooluse.messages import ChatMessage
from tooluse.providers.anthropic_backend import AnthropicBackend
from tooluse.providers.bedrock_backend import BedrockBackend
from tooluse.providers.gemini_backend import GeminiBackend
from tooluse.providers.openai_backend import OpenAIBackend

KEY_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
)
HELLO = [ChatMessage.user("hi")]


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("backend", "names"),
    [
        (OpenAIBackend, "set OPENAI_API_KEY or"),
        (AnthropicBackend, "set ANTHROPIC_API_KEY or"),
        (GeminiBackend, "set GEMINI_API_KEY (or GOOGLE_API_KEY) or"),
    ],
)
def test_missing_key_for_the_provider_itself_names_the_variables(backend, names):
    with pytest.raises(BackendError, match=f"{backend.__name__} needs an API key") as info:
        backend()
    assert names in str(info.value)
    # a self-hosted server needs no key
    local = backend(base_url="http://127.0.0.1:9/v1")
    assert local.transport.base_url.startswith("http://127.0.0.1:9")


def test_keys_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    assert GeminiBackend().transport.headers["x-goog-api-key"] == "google-key"
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert GeminiBackend().transport.headers["x-goog-api-key"] == "gemini-key"
    assert GeminiBackend(api_key="given").transport.headers["x-goog-api-key"] == "given"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert OpenAIBackend().transport.headers["authorization"] == "Bearer sk-env"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-env")
    headers = AnthropicBackend().transport.headers
    assert headers["x-api-key"] == "ak-env" and headers["anthropic-version"] == "2023-06-01"


def test_request_paths_and_stream_fields():
    chat = OpenAIBackend(base_url="http://127.0.0.1:9/v1", stream_usage=True)
    assert chat.build_request(HELLO, (), None, "auto", stream=False)[0] == "chat/completions"
    path, body = chat.build_request(HELLO, (), None, "auto", stream=True)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    responses = OpenAIBackend(base_url="http://127.0.0.1:9/v1", api="responses")
    path, body = responses.build_request(HELLO, (), None, "auto", stream=True)
    assert path == "responses" and body["stream"] is True and "stream_options" not in body
    assert "input" in body and "messages" not in body
    claude = AnthropicBackend(base_url="http://127.0.0.1:9", forced_choice_supported=False)
    path, body = claude.build_request(HELLO, (), None, "auto", stream=True)
    assert path == "v1/messages" and body["stream"] is True and body["model"] == claude.model
    gemini = GeminiBackend(base_url="http://127.0.0.1:9")
    path, body = gemini.build_request(HELLO, (), None, "auto", stream=True)
    assert path.endswith(":streamGenerateContent?alt=sse") and "stream" not in body
    bedrock = BedrockBackend(base_url="http://127.0.0.1:9", api_key="token")
    path, body = bedrock.build_request(HELLO, (), None, "auto", stream=False)
    assert path.endswith("/converse") and "stream" not in body
    assert bedrock.transport.headers["authorization"] == "Bearer token"
    assert not bedrock.capabilities.supports_tool_choice_none


def test_assistant_turn_without_text_sends_null_to_openai_and_empty_string_elsewhere():
    from tooluse import ChatMessage, ToolCall, ToolResult
    from tooluse.providers.openai_backend import OpenAIBackend

    history = [
        ChatMessage(role="user", content="weather?"),
        ChatMessage(role="assistant", tool_calls=(ToolCall(id="c1", name="w", arguments={}),)),
        ChatMessage.tool_result(ToolResult.success(call_id="c1", tool_name="w", output="17")),
    ]

    def assistant_content(backend):
        body = backend.wire.encode_request(history, (), model="m", **backend.encode_options())
        return next(m for m in body["messages"] if m["role"] == "assistant")["content"]

    assert assistant_content(OpenAIBackend(api_key="k")) is None
    local = OpenAIBackend(base_url="http://127.0.0.1:8080/v1", api_key="none")
    assert assistant_content(local) == ""
