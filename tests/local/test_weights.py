"""``#weights=``: a local model loaded from a copy of its file in another number format,
converted by llama.cpp's own quantizer once and kept in tooluse's cache directory."""

from __future__ import annotations

import pytest

from tooluse.errors import BackendError
from tooluse.local.model_files import default_model_path
from tooluse.local.weights import cache_dir, converted_weights

# llama.cpp's file types (enum llama_ftype), as the GGUF key general.file_type holds them
Q4_1, Q8_0 = 3, 7


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLUSE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "weights"


def test_the_copy_is_made_once_whole_and_named_by_its_source(cache):
    source = default_model_path()
    copy = converted_weights(source, "q8_0")
    assert copy.parent == cache == cache_dir("weights")
    assert copy.name.startswith(source.stem) and copy.name.endswith(".Q8_0.gguf")
    assert copy.read_bytes()[:4] == b"GGUF"
    # Q8_0 holds 8.5 bits a weight against Q4_1's 5: the copy is larger, not a renamed file
    assert copy.stat().st_size > 1.4 * source.stat().st_size
    made = copy.stat().st_mtime_ns
    assert converted_weights(source, "q8_0") == copy
    assert copy.stat().st_mtime_ns == made  # found, not converted again
    assert [p.name for p in cache.iterdir()] == [copy.name]  # no partial file left behind


def test_a_changed_source_file_gets_a_new_copy(cache, tmp_path):
    source = tmp_path / "model.gguf"
    source.write_bytes(default_model_path().read_bytes())
    first = converted_weights(source, "q8_0")
    source.touch()  # same bytes, a newer file: the name changes, so the copy is made again
    second = converted_weights(source, "q8_0")
    assert first != second and first.is_file() and second.is_file()


def test_a_cache_that_cannot_be_written_falls_back_to_the_temporary_folder(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("TOOLUSE_CACHE_DIR", str(blocked))
    source = tmp_path / "model.gguf"
    source.write_bytes(default_model_path().read_bytes())
    copy = converted_weights(source, "q8_0")
    try:
        assert copy.is_file() and not copy.is_relative_to(blocked)
    finally:
        copy.unlink()


def test_a_file_llama_cpp_cannot_convert_is_a_clear_error_and_leaves_nothing(cache, tmp_path):
    source = tmp_path / "broken.gguf"
    source.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(BackendError, match="could not convert"):
        converted_weights(source, "q8_0")
    assert list(cache.iterdir()) == []


def test_an_unknown_format_is_refused_before_anything_is_written(cache):
    with pytest.raises(ValueError, match="q8_0"):
        converted_weights(default_model_path(), "q4_0")
    assert not cache.exists()


@pytest.mark.slow
def test_the_local_model_on_q8_0_weights_calls_tools_and_round_trips(cache):
    from tooluse.local.demo_tools import demo_tools
    from tooluse.messages import ChatMessage
    from tooluse.providers.model_registry import load_model

    base = load_model("local:base", n_ctx=1024)
    copy = load_model("local:base#weights=q8_0", n_ctx=1024)
    trained = load_model("local:#weights=q8_0", n_ctx=1024)
    try:
        assert base.llm.metadata["general.file_type"] == str(Q4_1)
        assert copy.llm.metadata["general.file_type"] == str(Q8_0)
        assert copy.model_path == base.model_path  # the file named, not the copy
        assert copy.model_spec == "local:base#weights=q8_0"
        assert trained.model_spec == "local:#weights=q8_0" and trained.lora_path is not None
        assert copy.display_name == "SmolLM2-135M-Instruct (Q4_1) as Q8_0"
        messages = [ChatMessage.user("What is the weather in Paris?")]
        for backend in (copy, trained):
            turn = backend.generate(messages, tools=demo_tools(), tool_choice="required")
            assert [call.name for call in turn.tool_calls] == ["get_weather"]
            assert "paris" in str(turn.tool_calls[0].arguments).lower()
    finally:
        for backend in (base, copy, trained):
            backend.close()
