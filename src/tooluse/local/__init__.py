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


LORA_MARK = "#lora="


def _is_scale(text: str) -> bool:
    try:
        return 0.0 <= float(text) <= 4.0
    except ValueError:
        return False


def _with_lora(rest: str, options: dict[str, Any]) -> str:
    """``rest`` without its ``#key=value`` suffixes, which go to ``options``: ``#lora=PATH``
    (``lora_path``, a GGUF LoRA adapter), ``#lora_scale=X`` (``lora_scale``, the adapter's
    strength, 0 to 4), ``#n_ctx=N`` (the context length, e.g. 8192,
    SmolLM2's full context, for BFCL's long multi-turn and memory prompts) and
    ``#decider=NAME`` (how ``auto`` decides to call: :data:`~tooluse.local.decision.DECIDERS`)
    and ``#narrow=on|off|first`` (``narrow_tools``: the grammar allows only the best-ranked
    tool; ``first``: only for the first call of a request)
    and ``#grounding=on|off`` (``grounding``: guessed ``auto`` calls answer in text)
    and ``#judge=model|base`` (``judge``: whether an adapter's call decisions and tool
    ranking are read from the base model)."""
    model, *suffixes = rest.split("#")
    for suffix in suffixes:
        key, equals, value = suffix.partition("=")
        if key == "lora":
            if not value:
                raise ValueError("#lora= needs the path of a GGUF LoRA adapter")
            options["lora_path"] = value
        elif key == "n_ctx" and equals and value.isdigit() and int(value) > 0:
            options["n_ctx"] = int(value)
        elif key == "decider" and equals:
            from tooluse.local.decision import decider_named

            options["decider"] = decider_named(value)
        elif key == "narrow" and value in ("on", "off", "first"):
            options["narrow_tools"] = {"on": True, "off": False}.get(value, "first")
        elif key == "lora_scale" and equals and _is_scale(value):
            options["lora_scale"] = float(value)
        elif key == "judge" and value in ("model", "base"):
            options["judge"] = value
        elif key == "grounding" and value in ("on", "off"):
            from tooluse.local.grounding import GroundingCheck

            options["grounding"] = GroundingCheck() if value == "on" else None
        else:
            raise ValueError(
                f"#{suffix}: a local model string takes #lora=PATH, #n_ctx=N (a whole number), "
                "#lora_scale=X (0 to 4), #decider=NAME, #narrow=on|off|first, "
                "#grounding=on|off and #judge=model|base"
            )
    return model


def trained_options() -> dict[str, Any]:
    """The ``LlamaCppBackend`` options of ``local:trained``: the shipped adapter at half
    strength, writing the calls and answers, while the untouched model judges whether a
    request needs a call (its ``default`` decider for a request's first step, its scores, its
    tool ranking for the first call, its own call under the grounding check)."""
    from tooluse.local.model_files import TRAINED_SETTINGS, trained_adapter_path

    options: dict[str, Any] = {}
    _with_lora(f"#lora={trained_adapter_path()}{TRAINED_SETTINGS}", options)
    return options


def _local_factory(rest: str, **options: Any) -> Any:
    """``load_model("local")``: the embedded SmolLM2 (``rest`` may name a GGUF path);
    ``"local:trained"`` adds the shipped adapter with the settings it was measured with
    (:func:`trained_options`; ``#key=value`` suffixes override them);
    ``"local:#lora=PATH"`` adds a GGUF LoRA adapter (``tooluse train`` writes them),
    ``"local:#n_ctx=8192"`` sets the context length."""
    LlamaCppBackend = __getattr__("LlamaCppBackend")  # a missing extra is named, not a raw error
    rest = _with_lora(rest, options)
    if rest == "trained":
        return LlamaCppBackend.default(**{**trained_options(), **options})
    if rest in ("", "default"):  # "local", "local:" and "local:default" name the embedded model
        return LlamaCppBackend.default(**options)
    return LlamaCppBackend(rest, **options)


def _llama_cpp_factory(rest: str, **options: Any) -> Any:
    """``load_model("llama-cpp:/path/model.gguf")`` (``#lora=PATH`` adds an adapter)."""
    LlamaCppBackend = __getattr__("LlamaCppBackend")
    rest = _with_lora(rest, options)

    if not rest:
        raise ValueError("llama-cpp:PATH needs the path of a GGUF model file")
    return LlamaCppBackend(rest, **options)


def _register_model_prefixes() -> None:
    from tooluse.providers.model_registry import register_model_prefix

    register_model_prefix("local", _local_factory, replace=True)
    register_model_prefix("llama-cpp", _llama_cpp_factory, replace=True)
    register_model_prefix("llama_cpp", _llama_cpp_factory, replace=True)


_register_model_prefixes()
