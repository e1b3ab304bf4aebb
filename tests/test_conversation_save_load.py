"""``Conversation.save`` then ``Conversation.load`` brings back each participant's backend, for
every backend kind: the embedded local model, hosted providers, OpenAI-compatible servers, and
scripted backends (given back through ``backends=``)."""

from __future__ import annotations

import pytest

from tooluse import Conversation, OpenAIBackend, Participant, ScriptedBackend
from tooluse.providers import load_model


def round_trip(tmp_path, backend, **load_options):
    conv = Conversation(participants=[Participant(name="p", backend=backend)])
    path = tmp_path / "conv.json"
    conv.save(path)
    return Conversation.load(path, **load_options).participants[0]


@pytest.mark.slow
def test_local_model_round_trips(tmp_path):
    from tooluse.local import LlamaCppBackend

    backend = LlamaCppBackend.default(n_ctx=256)
    try:
        assert backend.model_spec == "local:base"
        loaded = round_trip(tmp_path, backend)
        assert isinstance(loaded.backend, LlamaCppBackend)
        assert loaded.backend.model_path == backend.model_path
        loaded.backend.close()
    finally:
        backend.close()


@pytest.mark.slow
def test_other_gguf_round_trips_by_path(tmp_path):
    import shutil

    from tooluse.local import LlamaCppBackend, default_model_path

    copy = tmp_path / "copy.gguf"
    shutil.copyfile(default_model_path(), copy)
    backend = LlamaCppBackend(copy, n_ctx=256)
    try:
        assert backend.model_spec == f"llama-cpp:{copy}"
        loaded = round_trip(tmp_path, backend)
        assert loaded.backend.model_path == copy
        loaded.backend.close()
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("spec", "env"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("openai-responses:gpt-4o-mini", "OPENAI_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("gemini:gemini-2.5-flash", "GEMINI_API_KEY"),
        ("openai-compatible:http://127.0.0.1:8080/v1#qwen", None),
    ],
)
def test_hosted_and_compatible_backends_round_trip(tmp_path, monkeypatch, spec, env):
    if env:
        monkeypatch.setenv(env, "test-key")
    backend = load_model(spec)
    assert backend.model_spec == spec
    loaded = round_trip(tmp_path, backend)
    assert type(loaded.backend) is type(backend)
    assert loaded.backend.model_spec == spec
    assert loaded.backend.model == backend.model


def test_openai_backend_at_another_url_is_saved_as_compatible(tmp_path):
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9999/v1", api_key="")
    loaded = round_trip(tmp_path, backend)
    assert loaded.backend.transport.base_url.rstrip("/") == "http://127.0.0.1:9999/v1"


def test_scripted_backend_comes_back_through_backends(tmp_path):
    replacement = ScriptedBackend(["again"])
    loaded = round_trip(tmp_path, ScriptedBackend(["hi"]), backends={"p": replacement})
    assert loaded.backend is replacement
    with pytest.raises(ValueError, match="scripted"):
        round_trip(tmp_path, ScriptedBackend(["hi"]))
