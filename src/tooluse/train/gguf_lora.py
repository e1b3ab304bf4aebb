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
:func:`read_lora_gguf` reads such a file back into peft's tensor names (``train grpo
--adapter`` goes on from a ``train sft`` adapter that way).

This is the only module that imports ``gguf`` (``pip install 'tooluse[train]'``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooluse.errors import MissingDependencyError

__all__ = [
    "LoraAdapter",
    "LoraShape",
    "read_lora_gguf",
    "write_gguf_atomically",
    "write_lora_gguf",
]

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


@dataclass(frozen=True, kw_only=True)
class LoraAdapter:
    """A LoRA adapter read from a GGUF file, in peft's terms."""

    #: peft state-dict names without the adapter name
    #: (``base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight``) -> float32 arrays.
    tensors: dict[str, Any]
    alpha: float
    rank: int
    #: The projections it adapts (``q_proj``, ``down_proj``...), for peft's ``target_modules``.
    modules: tuple[str, ...]


#: Where each projection of a Llama block lives in transformers' module tree.
_BLOCK_PART = {
    "q_proj": "self_attn",
    "k_proj": "self_attn",
    "v_proj": "self_attn",
    "o_proj": "self_attn",
    "gate_proj": "mlp",
    "up_proj": "mlp",
    "down_proj": "mlp",
}


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


def _unpermute(rows: Any, n_head: int) -> Any:
    """The inverse of :func:`_permute`: transformers' row order of a query/key weight."""
    return (
        rows.reshape(n_head, rows.shape[0] // n_head // 2, 2, *rows.shape[1:])
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
    converted = _gguf_tensors(tensors, shape, gguf)

    def fill(writer: Any) -> None:
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(shape.alpha))
        for name in sorted(converted):
            array = numpy.ascontiguousarray(converted[name], dtype=numpy.float32)
            writer.add_tensor(name, array.astype(numpy.float16) if dtype == "f16" else array)

    return write_gguf_atomically(Path(path), "llama", fill)


def write_gguf_atomically(target: Path, arch: str, fill: Callable[[Any], None]) -> Path:
    """Write a GGUF file whose keys and tensors ``fill`` adds to a ``gguf.GGUFWriter``: beside
    ``target`` first, then renamed into place, so a failure (a full disk, a bad tensor) never
    leaves half a file where ``target`` should be."""
    gguf = _gguf()
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    writer = gguf.GGUFWriter(str(partial), arch=arch)
    try:
        fill(writer)
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


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def _peft_names(gguf: Any, n_layers: int) -> dict[str, str]:
    """llama.cpp's weight name (``blk.0.attn_q.weight``) -> transformers' module path."""
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_layers)
    out = {}
    for layer in range(n_layers):
        for projection, part in _BLOCK_PART.items():
            module = f"model.layers.{layer}.{part}.{projection}"
            name = names.get_name(module + ".weight", try_suffixes=(".weight",))
            if name is not None:
                out[name] = module
    return out


def read_lora_gguf(path: str | Path, *, n_layers: int, n_head: int, n_head_kv: int) -> LoraAdapter:
    """The adapter :func:`write_lora_gguf` wrote to ``path`` (query/key rows back in
    transformers' order); ``ValueError`` for a file that is not a Llama LoRA adapter of
    ``n_layers`` blocks."""
    gguf = _gguf()
    import numpy

    reader = gguf.GGUFReader(str(path))
    kind = (_field(reader, "general.type"), _field(reader, "adapter.type"))
    if kind != ("adapter", "lora"):
        raise ValueError(f"{path} is not a GGUF LoRA adapter (general.type, adapter.type: {kind})")
    alpha = _field(reader, "adapter.lora.alpha")
    modules = _peft_names(gguf, n_layers)
    tensors: dict[str, Any] = {}
    for tensor in reader.tensors:
        base, _, ab = tensor.name.rpartition(".lora_")
        module = modules.get(base)
        if module is None or ab not in ("a", "b"):
            raise ValueError(f"{path}: {tensor.name} is not a LoRA tensor of this model")
        value = numpy.array(tensor.data, dtype=numpy.float32)
        if ab == "b" and module.endswith("q_proj"):
            value = _unpermute(value, n_head)
        elif ab == "b" and module.endswith("k_proj"):
            value = _unpermute(value, n_head_kv)
        tensors[f"base_model.model.{module}.lora_{ab.upper()}.weight"] = value
    if not tensors or alpha is None:
        raise ValueError(f"{path}: the adapter has no LoRA tensors or no adapter.lora.alpha")
    ranks = {v.shape[0] for k, v in tensors.items() if ".lora_A." in k}
    if len(ranks) != 1:
        raise ValueError(f"{path}: the LoRA tensors have different ranks {sorted(ranks)}")
    adapted = sorted({k.split(".")[-3] for k in tensors})
    return LoraAdapter(
        tensors=tensors, alpha=float(alpha), rank=ranks.pop(), modules=tuple(adapted)
    )
