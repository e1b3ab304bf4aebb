"""The one place that imports llama-cpp-python (the ``local`` extra)."""

from __future__ import annotations

from types import ModuleType

from tooluse.errors import MissingDependencyError

__all__ = ["import_llama_cpp"]


def import_llama_cpp() -> ModuleType:
    """The ``llama_cpp`` module, or :class:`MissingDependencyError` naming the ``local`` extra."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingDependencyError("llama-cpp-python", "local") from exc
    return llama_cpp
