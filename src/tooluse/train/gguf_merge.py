"""A GGUF LoRA adapter merged into its base model, written as one GGUF model file.

::

    merge_lora_gguf(default_model_path(), "adapter.gguf", "merged.gguf", scale=0.5)
    LlamaCppBackend("merged.gguf")  # the adapter's calls without loading an adapter

Each weight the adapter changes is dequantised, gets ``scale * alpha / rank * B @ A`` added
(llama.cpp's own rule when it applies an adapter at ``lora_scale``) and is stored as ``Q8_0``
(the ``gguf`` package quantises to it; the base's ``Q4_1`` would lose the change's detail);
every other tensor and every metadata key are copied as they are. The file is written beside
the target and renamed into place, so a failed merge never leaves half a model behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tooluse.train.gguf_lora import _gguf, write_gguf_atomically

__all__ = ["MERGED_TYPE", "merge_lora_gguf"]

#: The quantisation of the weights an adapter changed.
MERGED_TYPE = "Q8_0"


def merge_lora_gguf(
    base: str | Path, adapter: str | Path, out: str | Path, *, scale: float = 1.0
) -> Path:
    """Write ``base`` with ``adapter`` merged in at ``scale`` to ``out``; returns ``out``."""
    from tooluse.local.model_files import check_lora_path, check_model_path

    gguf = _gguf()
    base_path = check_model_path(base)
    adapter_path = check_lora_path(adapter, base_path)  # a LoRA for another model is refused
    deltas = _lora_deltas(gguf, adapter_path, scale)
    reader = gguf.GGUFReader(str(base_path))

    def fill(writer: Any) -> None:
        _copy_metadata(gguf, reader, writer)
        merged = _copy_tensors(gguf, reader, writer, deltas)
        if merged != len(deltas):
            raise ValueError(f"{len(deltas) - merged} of the adapter's weights are not in {base}")

    return write_gguf_atomically(Path(out), _field(reader, "general.architecture"), fill)


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def _lora_deltas(gguf: Any, adapter: Path, scale: float) -> dict[str, Any]:
    """Base weight name -> the change ``scale * alpha / rank * B @ A`` (float32)."""
    import numpy

    reader = gguf.GGUFReader(str(adapter))
    alpha = _field(reader, "adapter.lora.alpha")
    pairs: dict[str, dict[str, Any]] = {}
    for tensor in reader.tensors:
        name, _, part = tensor.name.rpartition(".lora_")
        pairs.setdefault(name, {})[part] = numpy.asarray(tensor.data, dtype=numpy.float32)
    deltas = {}
    for name, pair in pairs.items():
        if set(pair) != {"a", "b"}:
            raise ValueError(f"{adapter}: {name} lacks its lora_a or lora_b tensor")
        rank = pair["a"].shape[0]
        factor = scale * (float(alpha) / rank if alpha else 1.0)
        deltas[name] = factor * (pair["b"] @ pair["a"])
    return deltas


def _copy_metadata(gguf: Any, reader: Any, writer: Any) -> None:
    """Every key but the file's own counts (the writer adds those and the architecture)."""
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        kind = field.types[0]
        sub = field.types[1] if kind == gguf.GGUFValueType.ARRAY and len(field.types) > 1 else None
        writer.add_key_value(key, field.contents(), kind, sub_type=sub)


def _copy_tensors(gguf: Any, reader: Any, writer: Any, deltas: dict[str, Any]) -> int:
    """Copy each tensor, merging the changed ones; how many were merged."""
    import numpy

    kind = gguf.GGMLQuantizationType[MERGED_TYPE]
    merged = 0
    for tensor in reader.tensors:
        delta = deltas.get(tensor.name)
        if delta is None:
            writer.add_tensor(
                tensor.name, tensor.data, raw_shape=tensor.data.shape, raw_dtype=tensor.tensor_type
            )
            continue
        weight = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(numpy.float32)
        if weight.shape != delta.shape:
            raise ValueError(f"{tensor.name}: weight {weight.shape}, adapter change {delta.shape}")
        packed = gguf.quants.quantize(weight + delta, kind)
        writer.add_tensor(tensor.name, packed, raw_shape=packed.shape, raw_dtype=kind)
        merged += 1
    return merged
