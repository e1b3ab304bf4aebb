"""The training base model: converted from the GGUF once, then read from the cache with the
same weights and tokenizer; a damaged cache entry is converted again, an unwritable cache
costs nothing but the conversion."""

from __future__ import annotations

import logging
import shutil

import pytest

from tooluse.train import base_model
from tooluse.train.base_model import converted_model_dir, load_base_model

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PROMPT = "<|im_start|>user\nCompute 5564 + 5275.<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def stack():
    from tooluse.train.runtime import import_training_stack

    return import_training_stack()


@pytest.fixture(scope="module")
def gguf():
    from tooluse.local.model_files import default_model_path

    return default_model_path()


def _same_model(one, other):
    mine, theirs = one.state_dict(), other.state_dict()
    assert mine.keys() == theirs.keys()
    return all(torch.equal(mine[k], theirs[k]) for k in mine)


def _same_tokenizer(one, other):
    ids = one(PROMPT)["input_ids"]
    assert ids == other(PROMPT)["input_ids"] and ids[0] == one.convert_tokens_to_ids("<|im_start|>")
    assert (one.eos_token, one.pad_token, one.chat_template) == (
        other.eos_token,
        other.pad_token,
        other.chat_template,
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_conversion_is_cached_read_back_the_same_and_redone_when_damaged(
    stack, gguf, monkeypatch
):
    folder = converted_model_dir(stack, gguf)
    shutil.rmtree(folder, ignore_errors=True)  # the session's own cache directory
    sources = []
    read = base_model._from_pretrained
    monkeypatch.setattr(
        base_model,
        "_from_pretrained",
        lambda s, where, name: sources.append(name) or read(s, where, name),
    )
    converted, tokenizer = load_base_model(stack, gguf)
    assert (folder / "model.safetensors").is_file() and sources == [gguf.name]
    assert not [p for p in folder.parent.iterdir() if p.name.endswith(".partial")]

    cached, cached_tokenizer = load_base_model(stack, gguf)
    assert sources == [gguf.name, None]  # read from the cache, not the GGUF
    assert _same_model(converted, cached) and not getattr(cached, "is_quantized", False)
    _same_tokenizer(tokenizer, cached_tokenizer)

    # a damaged entry: converted again, and the cache holds a whole one afterwards
    (folder / "model.safetensors").write_bytes(b"not safetensors")
    again, _ = load_base_model(stack, gguf)
    assert sources == [gguf.name, None, None, gguf.name]
    assert _same_model(converted, again)
    assert (folder / "model.safetensors").stat().st_size > 100_000_000


@pytest.mark.slow
def test_a_cache_that_cannot_be_written_loses_nothing(stack, gguf, tmp_path, caplog):
    model, tokenizer = load_base_model(stack, gguf)
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory should be")
    with caplog.at_level(logging.WARNING, logger="tooluse.train.base_model"):
        base_model._save_conversion(model, tokenizer, blocked / "entry")
    assert "could not cache the converted base model" in caplog.text
    assert blocked.read_text().startswith("a file")

    # two processes converting at once: the second finds the entry there and keeps it
    entry = tmp_path / "cache" / "entry"
    base_model._save_conversion(model, tokenizer, entry)
    first = (entry / "model.safetensors").stat().st_mtime_ns
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tooluse.train.base_model"):
        base_model._save_conversion(model, tokenizer, entry)
    assert (entry / "model.safetensors").stat().st_mtime_ns == first and not caplog.text
    assert sorted(p.name for p in entry.parent.iterdir()) == ["entry"]


def test_the_cache_entry_is_named_by_the_file_content(stack, gguf, tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLUSE_CACHE_DIR", str(tmp_path / "c"))
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(gguf, copy)
    assert converted_model_dir(stack, copy) == converted_model_dir(stack, gguf)
    assert converted_model_dir(stack, gguf).parent == tmp_path / "c" / "train-base"
    with copy.open("ab") as file:
        file.write(b"\0")
    assert converted_model_dir(stack, copy) != converted_model_dir(stack, gguf)
    with pytest.raises(base_model.TrainDataError, match="cannot read the GGUF"):
        converted_model_dir(stack, tmp_path / "missing.gguf")
