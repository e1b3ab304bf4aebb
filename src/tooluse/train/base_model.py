"""The base model of a training run: a GGUF file's weights (dequantised to float32) and its
tokenizer, read by transformers' GGUF loader once and then from a cache; or a transformers
model folder (``config.json`` and safetensors), read as it is.

The run trains on CUDA when torch sees a GPU (in bfloat16 where the GPU has it), else on the
CPU in float32 (:func:`training_device`).

Reading the embedded SmolLM2 GGUF takes transformers about 20 seconds on 2 cores (it parses
the file twice, builds a tensor-name map per tensor and dequantises in numpy), and every
``train`` command, RFT round and GRPO run starts with it. The converted model and tokenizer
are kept as safetensors under ``train-base/<digest>`` in tooluse's cache directory
(``$TOOLUSE_CACHE_DIR``, else the user's cache directory), named by the GGUF's content and the
transformers version, so that a changed file or loader converts again. A cache that cannot be
written (full disk, read-only home) only costs the conversion: the model is still returned.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from tooluse.train.data import TrainDataError
from tooluse.train.runtime import TrainingStack

__all__ = [
    "base_model_cache_dir",
    "converted_model_dir",
    "folder_turn_text",
    "is_transformers_model",
    "load_base_model",
    "training_device",
    "turn_text_of",
]

_log = logging.getLogger(__name__)
_READY = "tokenizer_config.json"  # in every complete conversion


def base_model_cache_dir() -> Path:
    """``$TOOLUSE_CACHE_DIR/train-base``, else ``train-base`` in the user's cache directory."""
    from tooluse.local.weights import cache_dir

    return cache_dir("train-base")


def converted_model_dir(stack: TrainingStack, gguf_path: Path) -> Path:
    """Where the conversion of ``gguf_path`` lives (named by its content and transformers)."""
    digest = hashlib.sha256(f"transformers {stack.transformers.__version__}\0".encode())
    try:
        with gguf_path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise TrainDataError(f"cannot read the GGUF {gguf_path}: {exc}") from exc
    return base_model_cache_dir() / digest.hexdigest()[:32]


def is_transformers_model(path: Path) -> bool:
    """Whether ``path`` is a transformers model folder (rather than a GGUF file)."""
    return path.is_dir() and (path / "config.json").is_file()


def training_device(stack: TrainingStack) -> tuple[str, Any]:
    """``("cuda", bfloat16 or float16)`` when torch sees a GPU, else ``("cpu", float32)``."""
    torch = stack.torch
    if torch.cuda.is_available():
        return "cuda", torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return "cpu", torch.float32


def turn_text_of(tokenizer: Any, name: str) -> Any:
    """How a transformers model's conversations are written: the profile its name calls for
    (as the local backend picks one for a GGUF), that profile's chat template or else the
    tokenizer's, and the tokenizer's special tokens."""
    from tooluse.local.chat_prompt import TurnText
    from tooluse.local.profiles import profile_for

    profile = profile_for(name)
    template = profile.chat_template or getattr(tokenizer, "chat_template", None)
    if not template:
        raise TrainDataError(f"{name}: the tokenizer has no chat template")
    return TurnText(
        chat_template=template,
        profile=profile,
        bos=tokenizer.bos_token or "",
        eos=tokenizer.eos_token or "",
        model_name=name,
    )


def folder_turn_text(stack: TrainingStack, folder: Path) -> Any:
    """:func:`turn_text_of` for the transformers model in ``folder`` (its tokenizer only)."""
    try:
        tokenizer = stack.transformers.AutoTokenizer.from_pretrained(str(folder))
    except (OSError, ValueError) as exc:
        raise TrainDataError(f"transformers cannot read the tokenizer of {folder}: {exc}") from exc
    return turn_text_of(tokenizer, f"{getattr(tokenizer, 'name_or_path', '')} {folder.name}")


def load_base_model(stack: TrainingStack, path: Path, dtype: Any = None) -> tuple[Any, Any]:
    """The model and tokenizer of a transformers folder, or of a GGUF file (float32 weights,
    from the cache when it holds this file's conversion, else converted and cached)."""
    if is_transformers_model(path):
        try:
            return _from_pretrained(stack, path, None, dtype)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise TrainDataError(f"transformers cannot read the model {path}: {exc}") from exc
    if path.is_dir():
        raise TrainDataError(f"{path}: neither a GGUF file nor a transformers model folder")
    model, tokenizer = _gguf_model(stack, path)
    return (model.to(dtype) if dtype is not None else model), tokenizer


def _gguf_model(stack: TrainingStack, gguf_path: Path) -> tuple[Any, Any]:
    folder = converted_model_dir(stack, gguf_path)
    if (folder / _READY).is_file():
        try:
            return _from_pretrained(stack, folder, None)
        except Exception as exc:  # noqa: BLE001 - whatever a damaged file raises (safetensors
            # has its own error type): the warning names it, and converting again is always right.
            _log.warning(
                "cached conversion %s unreadable (%s); converting the GGUF again", folder, exc
            )
            shutil.rmtree(folder, ignore_errors=True)
    try:
        model, tokenizer = _from_pretrained(stack, gguf_path.parent, gguf_path.name)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise TrainDataError(f"transformers cannot read the GGUF {gguf_path}: {exc}") from exc
    _strip_quantizer_marks(model)
    _save_conversion(model, tokenizer, folder)
    return model, tokenizer


def _from_pretrained(
    stack: TrainingStack, folder: Path, gguf_file: str | None, dtype: Any = None
) -> tuple[Any, Any]:
    auto = stack.transformers
    extra = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = auto.AutoTokenizer.from_pretrained(str(folder), **extra)
    model = auto.AutoModelForCausalLM.from_pretrained(
        str(folder), dtype=dtype or stack.torch.float32, **extra
    )
    return model, tokenizer


def _strip_quantizer_marks(model: Any) -> None:
    # The weights are plain float32 now; the quantizer marks left by the GGUF loader make the
    # Trainer refuse the model and save_pretrained refuse to write checkpoints.
    model.hf_quantizer = None
    model.is_quantized = False
    model.quantization_method = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def _save_conversion(model: Any, tokenizer: Any, folder: Path) -> None:
    """Write the conversion beside ``folder`` and rename it into place: a reader never sees
    half a folder, and of two processes converting at once the first rename wins."""
    partial = folder.with_name(f".{folder.name}.{os.getpid()}.partial")
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(partial), safe_serialization=True)
        tokenizer.save_pretrained(str(partial))
        if folder.is_dir() and not (folder / _READY).is_file():
            shutil.rmtree(folder)  # an incomplete leftover (files removed by hand or a cleaner)
        os.rename(partial, folder)
    except OSError as exc:
        if not (folder / _READY).is_file():
            _log.warning("could not cache the converted base model in %s: %s", folder, exc)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
