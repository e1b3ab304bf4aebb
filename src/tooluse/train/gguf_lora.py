"""A peft LoRA adapter of a Llama-architecture model as a llama.cpp GGUF LoRA adapter.

Written with the ``gguf`` package (llama.cpp's own GGUF writer, on PyPI): a one-wheel,
pure-Python install, where llama.cpp's ``convert_lora_to_gguf.py`` would need llama-cpp-python's
source distribution unpacked next to it. The file has ``general.type = adapter``,
``adapter.type = lora``, ``adapter.lora.alpha`` and, for each adapted weight, the tensors
``<gguf name>.lora_a`` (rank x in) and ``<gguf name>.lora_b`` (out x rank). The query and key
rows are permuted the way llama.cpp's converter permutes those weights, since transformers'
GGUF loader undid that permutation when it read the base model.

The file is written to a temporary name beside the target and renamed into place, so a
crash or a full disk never leaves a half-written adapter where one is expected.

This is the only module that imports ``gguf`` (``pip install 'tooluse[train]'``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooluse.errors import MissingDependencyError

__all__ = ["LoraShape", "write_lora_gguf"]

_PEFT_KEY = re.compile(
    r"^(?:base_model\.model\.)?(?P<base>.+)\.lora_(?P<ab>[AB])(?:\.\w+)?\.weight$"
)


@dataclass(frozen=True, kw_only=True)
class LoraShape:
    """What the conversion needs to know of the base model and the adapter."""

    alpha: float
    n_layers: int
    n_head: int
    n_head_kv: int


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as exc:
        raise MissingDependencyError("gguf", "train") from exc
    return gguf


def _permute(rows: Any, n_head: int) -> Any:
    """llama.cpp's row order of a query/key weight (its converter's permutation)."""
    return (
        rows.reshape(n_head, 2, rows.shape[0] // n_head // 2, *rows.shape[1:])
        .swapaxes(1, 2)
        .reshape(rows.shape)
    )


def _gguf_tensors(tensors: Mapping[str, Any], shape: LoraShape, gguf: Any) -> dict[str, Any]:
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, shape.n_layers)
    out: dict[str, Any] = {}
    for key, value in tensors.items():
        match = _PEFT_KEY.match(key)
        if match is None:
            raise ValueError(f"not a LoRA tensor: {key}")
        base = match["base"]
        name = names.get_name(base + ".weight", try_suffixes=(".weight",))
        if name is None:
            raise ValueError(f"no llama.cpp tensor for {base}")
        if match["ab"] == "B" and base.endswith("q_proj"):
            value = _permute(value, shape.n_head)
        elif match["ab"] == "B" and base.endswith("k_proj"):
            value = _permute(value, shape.n_head_kv)
        out[f"{name}.lora_{match['ab'].lower()}"] = value
    if not out:
        raise ValueError("the adapter has no LoRA tensors")
    return out


def write_lora_gguf(
    tensors: Mapping[str, Any], shape: LoraShape, path: str | Path, *, dtype: str = "f16"
) -> Path:
    """Write peft's LoRA ``tensors`` (name -> numpy array, as in its state dict) to ``path``
    as a llama.cpp LoRA adapter (``dtype`` ``"f16"`` or ``"f32"``); returns the path."""
    gguf = _gguf()
    import numpy

    if dtype not in ("f16", "f32"):
        raise ValueError("dtype must be f16 or f32")
    target = Path(path)
    converted = _gguf_tensors(tensors, shape, gguf)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    writer = gguf.GGUFWriter(str(partial), arch="llama")
    try:
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(shape.alpha))
        for name in sorted(converted):
            array = numpy.ascontiguousarray(converted[name], dtype=numpy.float32)
            writer.add_tensor(name, array.astype(numpy.float16) if dtype == "f16" else array)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(partial, target)
    except BaseException:
        writer.close()
        partial.unlink(missing_ok=True)
        raise
    return target
