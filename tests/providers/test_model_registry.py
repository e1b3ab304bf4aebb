"""load_model strings and the prefix registry."""

from __future__ import annotations

import pytest

from tooluse import (
    AnthropicBackend,
    BedrockBackend,
    GeminiBackend,
    OpenAIBackend,
    ScriptedBackend,
    load_model,
    register_model_prefix,
)
from tooluse.errors import BackendError
from tooluse.providers import model_registry, registered_model_prefixes


def test_builtin_prefixes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-x")
    monkeypatch.setenv("GEMINI_API_KEY", "g-x")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "b-x")
    b = load_model("openai:gpt-4o")
    assert isinstance(b, OpenAIBackend) and b.model == "gpt-4o" and b.api == "chat"
    assert load_model("openai-responses:o4-mini").api == "responses"
    a = load_model("anthropic:claude-haiku-4-5")
    assert isinstance(a, AnthropicBackend) and a.model == "claude-haiku-4-5"
    g = load_model("gemini:gemini-2.5-flash")
    assert isinstance(g, GeminiBackend) and g.model == "gemini-2.5-flash"
    br = load_model("bedrock:anthropic.claude-3-5-haiku-20241022-v1:0", region="eu-west-1")
    assert isinstance(br, BedrockBackend) and br.model.endswith("v1:0") and br.region == "eu-west-1"
    assert br.transport.base_url == "https://bedrock-runtime.eu-west-1.amazonaws.com"


def test_openai_compatible_url_and_model_fragment():
    b = load_model("openai-compatible:http://127.0.0.1:8080/v1#smollm2", max_retries=0)
    assert b.transport.base_url == "http://127.0.0.1:8080/v1" and b.model == "smollm2"
    assert b.transport.retry.max_retries == 0
    with pytest.raises(ValueError, match="base URL"):
        load_model("openai-compatible:")


def test_missing_key_for_a_hosted_api_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(BackendError, match="ANTHROPIC_API_KEY"):
        load_model("anthropic:claude-haiku-4-5")


def test_unknown_prefix_lists_known_ones():
    with pytest.raises(ValueError, match="known prefixes: .*anthropic"):
        load_model("nosuch:model")


def test_register_prefix_and_refuse_silent_override():
    made = []

    def factory(rest, **options):
        made.append((rest, options))
        return ScriptedBackend(["hi"])

    register_model_prefix("scripted-test", factory)
    try:
        backend = load_model("scripted-test:abc:def", flag=True)
        assert isinstance(backend, ScriptedBackend) and made == [("abc:def", {"flag": True})]
        assert "scripted-test" in registered_model_prefixes()
        with pytest.raises(ValueError, match="already registered"):
            register_model_prefix("scripted-test", lambda rest: ScriptedBackend([]))
        register_model_prefix("scripted-test", lambda rest: ScriptedBackend(["x"]), replace=True)
        assert load_model("scripted-test").generate_with_tools([]).text == "x"
    finally:
        model_registry._FACTORIES.pop("scripted-test", None)
    with pytest.raises(ValueError):
        register_model_prefix("bad:prefix", factory)


def test_http_backends_satisfy_the_backend_protocol():
    from tooluse.providers import Backend

    backend = load_model("openai-compatible:http://127.0.0.1:9/v1")
    assert isinstance(backend, Backend)
    assert backend.capabilities.supports_function_calling
    for name in ("generate", "agenerate", "stream_with_tools", "astream_with_tools", "close"):
        assert callable(getattr(backend, name))


def test_capability_matrix_per_backend(monkeypatch):
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "b-x")
    nova = load_model("bedrock:amazon.nova-pro-v1:0").capabilities
    llama = load_model("bedrock:meta.llama3-1-70b-instruct-v1:0").capabilities
    assert not nova.supports_tool_choice_none and nova.supports_named_tool_choice
    assert not llama.supports_named_tool_choice and not llama.supports_error_results
    anth = AnthropicBackend("m", api_key="k", forced_choice_supported=False).capabilities
    assert not anth.supports_tool_choice_required and anth.supports_error_results
    assert not load_model(
        "openai-compatible:http://127.0.0.1:9/v1"
    ).capabilities.supports_error_results
