"""Local models run in-process by llama.cpp, with grammar-constrained tool calls.

::

    from tooluse.local import LlamaCppBackend

    backend = LlamaCppBackend.default()          # the embedded SmolLM2-135M-Instruct
    result = backend.generate(messages, tools, tool_choice="auto")

The grammar compiler (``schema_to_gbnf``) and the profiles are pure Python; the backend needs
the ``local`` extra (llama-cpp-python) and is imported on first use, so ``import tooluse.local``
stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tooluse.local.grammar import GrammarBuilder, schema_to_gbnf
from tooluse.local.model_files import ModelFileError, default_model_path
from tooluse.local.model_strings import parse_local_options, trained_options
from tooluse.local.profiles import HERMES, SMOLLM2, ToolPromptProfile

if TYPE_CHECKING:
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.decision import (
        AlwaysCall,
        AnyDecider,
        MarkerDecider,
        NeverCall,
        RelevanceDecider,
        ToolDecider,
        ToolDecision,
        YesNoDecider,
    )
    from tooluse.local.grounding import GroundingCheck

__all__ = [
    "HERMES",
    "SMOLLM2",
    "AlwaysCall",
    "AnyDecider",
    "GrammarBuilder",
    "GroundingCheck",
    "LlamaCppBackend",
    "MarkerDecider",
    "ModelFileError",
    "NeverCall",
    "RelevanceDecider",
    "ToolDecider",
    "ToolDecision",
    "ToolPromptProfile",
    "YesNoDecider",
    "default_model_path",
    "schema_to_gbnf",
]

_LAZY = {
    "LlamaCppBackend": "tooluse.local.backend",
    "AlwaysCall": "tooluse.local.decision",
    "AnyDecider": "tooluse.local.decision",
    "MarkerDecider": "tooluse.local.decision",
    "NeverCall": "tooluse.local.decision",
    "RelevanceDecider": "tooluse.local.decision",
    "ToolDecider": "tooluse.local.decision",
    "ToolDecision": "tooluse.local.decision",
    "YesNoDecider": "tooluse.local.decision",
    "GroundingCheck": "tooluse.local.grounding",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tooluse.local' has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        from tooluse.errors import MissingDependencyError

        raise MissingDependencyError(exc.name or "llama-cpp-python", "local") from exc
    return getattr(module, name)


#: The ``rest`` of the model strings that name the default local model (base + adapter).
TRAINED_NAMES = ("", "default", "trained")


def _local_factory(rest: str, **options: Any) -> Any:
    """``load_model("local")``: the embedded SmolLM2 with the shipped adapter and the settings
    it was measured with (:func:`trained_options`; ``local:trained`` is the same, and
    ``#key=value`` suffixes override them: ``"local:#n_ctx=8192"``); ``"local:base"`` is the
    untouched model (``"local:base#lora=PATH"`` adds an adapter ``tooluse train`` wrote, with
    the adapter defaults); ``"local:PATH"`` is the GGUF model file at ``PATH``."""
    LlamaCppBackend = __getattr__("LlamaCppBackend")  # a missing extra is named, not a raw error
    rest = parse_local_options(rest, options)
    if rest in TRAINED_NAMES:
        return LlamaCppBackend.default(**{**trained_options(), **options})
    if rest == "base":
        return LlamaCppBackend.default(**options)
    return LlamaCppBackend(rest, **options)


def _llama_cpp_factory(rest: str, **options: Any) -> Any:
    """``load_model("llama-cpp:/path/model.gguf")`` (``#lora=PATH`` adds an adapter)."""
    LlamaCppBackend = __getattr__("LlamaCppBackend")
    rest = parse_local_options(rest, options)

    if not rest:
        raise ValueError("llama-cpp:PATH needs the path of a GGUF model file")
    return LlamaCppBackend(rest, **options)


def _register_model_prefixes() -> None:
    from tooluse.providers.model_registry import register_model_prefix

    register_model_prefix("local", _local_factory, replace=True)
    register_model_prefix("llama-cpp", _llama_cpp_factory, replace=True)
    register_model_prefix("llama_cpp", _llama_cpp_factory, replace=True)


_register_model_prefixes()
