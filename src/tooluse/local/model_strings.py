"""Local model strings: the ``#key=value`` options of ``local:`` and ``llama-cpp:`` strings,
read into ``LlamaCppBackend`` options (:func:`parse_local_options`) and spelled back from a
backend (:func:`spell_local_model`, its ``model_spec``), so a saved conversation loads the same
backend again. Pure: nothing here loads a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tooluse.local.grounding import GroundingCheck

__all__ = ["LocalModelSettings", "parse_local_options", "spell_local_model", "trained_options"]


class LocalModelSettings(Protocol):
    """What :func:`spell_local_model` reads of a local backend (``LlamaCppBackend`` is one)."""

    @property
    def model_path(self) -> Path: ...

    @property
    def lora_path(self) -> Path | None: ...

    @property
    def decider(self) -> object: ...

    @property
    def narrow_tools(self) -> bool | str: ...

    @property
    def grounding(self) -> GroundingCheck | None: ...

    @property
    def judge(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def lora_scale(self) -> float: ...

    @property
    def weights(self) -> str | None: ...


def _is_scale(text: str) -> bool:
    try:
        return 0.0 <= float(text) <= 4.0
    except ValueError:
        return False


def parse_local_options(rest: str, options: dict[str, Any]) -> str:
    """``rest`` without its ``#key=value`` suffixes, which go to ``options``: ``#lora=PATH``
    (``lora_path``, a GGUF LoRA adapter), ``#lora_scale=X`` (``lora_scale``, the adapter's
    strength, 0 to 4), ``#n_ctx=N`` (the context length, e.g. 8192,
    SmolLM2's full context, for BFCL's long multi-turn and memory prompts) and
    ``#decider=NAME`` (how ``auto`` decides to call: :data:`~tooluse.local.decision.DECIDERS`)
    and ``#narrow=on|off|first`` (``narrow_tools``: the grammar allows only the best-ranked
    tool; ``first``: only for the first call of a request)
    and ``#grounding=on|off|chain`` (``grounding``: guessed ``auto`` calls answer in text;
    ``chain``: calls after tool results too, and a repeat of the turn before's calls)
    and ``#judge=model|base`` (``judge``: whether an adapter's call decisions and tool
    ranking are read from the base model) and ``#text=model|base`` (``text``: whether an
    adapter's text answers are written by the base model) and ``#weights=q8_0|f16``
    (``weights``: a copy of the model file in that number format, converted once)."""
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
        elif key == "text" and value in ("model", "base"):
            options["text"] = value
        elif key == "weights" and value in _weight_formats():
            options["weights"] = value
        elif key == "grounding" and value in ("on", "off", "chain"):
            from tooluse.local.grounding import GroundingCheck

            checks = {"on": GroundingCheck(), "chain": GroundingCheck(after_results=True)}
            options["grounding"] = checks.get(value)
        else:
            raise ValueError(
                f"#{suffix}: a local model string takes #lora=PATH, #n_ctx=N (a whole number), "
                "#lora_scale=X (0 to 4), #decider=NAME, #narrow=on|off|first, "
                "#grounding=on|off|chain, #judge=model|base, #text=model|base and "
                f"#weights={'|'.join(_weight_formats())}"
            )
    return model


def _weight_formats() -> tuple[str, ...]:
    from tooluse.local.weights import WEIGHT_FORMATS

    return tuple(WEIGHT_FORMATS)


def trained_options() -> dict[str, Any]:
    """The ``LlamaCppBackend`` options of ``local`` (also spelled ``local:trained``): the
    shipped adapter at half strength writing the calls, while the untouched model judges
    whether a request needs a call (its ``default`` decider for a request's first step, its
    scores, its tool ranking for the first call, its own call under the grounding check) and
    writes the text answers; calls after tool results are checked too (``#grounding=chain``)."""
    from tooluse.local.model_files import TRAINED_SETTINGS, trained_adapter_path

    options: dict[str, Any] = {}
    parse_local_options(f"#lora={trained_adapter_path()}{TRAINED_SETTINGS}", options)
    return options


def spell_local_model(backend: LocalModelSettings) -> str:
    """The model string that loads ``backend`` again: ``local`` for the embedded model with
    the shipped adapter and its settings, else ``local:base`` (or ``llama-cpp:PATH``) and
    every setting that differs from the backend's defaults, in a fixed order."""
    from tooluse.errors import MissingDependencyError
    from tooluse.local.model_files import default_model_path

    try:
        embedded = backend.model_path == default_model_path()
    except MissingDependencyError:
        embedded = False
    spec = "local:base" if embedded else f"llama-cpp:{backend.model_path}"
    suffixes = _suffixes(backend)
    weights = f"#weights={backend.weights}" if backend.weights is not None else ""
    if embedded and suffixes == _trained_suffixes():
        return f"local:{weights}" if weights else "local"
    return spec + suffixes + weights


def _suffixes(backend: LocalModelSettings) -> str:
    from tooluse.local.decision import DECIDERS

    adapted = backend.lora_path is not None
    suffixes = f"#lora={backend.lora_path}" if adapted else ""
    decider = getattr(backend.decider, "name", "")
    if decider in DECIDERS and decider != ("model" if adapted else "default"):
        suffixes += f"#decider={decider}"  # a decider chosen by name, kept by name
    if backend.narrow_tools != (not adapted):
        narrow = backend.narrow_tools
        suffixes += f"#narrow={'first' if narrow == 'first' else 'on' if narrow else 'off'}"
    if backend.grounding is None:
        suffixes += "#grounding=off"
    elif backend.grounding.after_results:
        suffixes += "#grounding=chain"
    if backend.judge == "base":
        suffixes += "#judge=base"
    if backend.text == "base" and adapted:
        suffixes += "#text=base"
    if adapted and backend.lora_scale != 1.0:
        suffixes += f"#lora_scale={backend.lora_scale:g}"
    return suffixes


def _trained_suffixes() -> str:
    """The model-string suffixes ``local`` stands for (on ``local:base``)."""
    from tooluse.errors import BackendError
    from tooluse.local.model_files import TRAINED_SETTINGS, trained_adapter_path

    try:
        path = trained_adapter_path()
    except BackendError:
        return "-"  # no shipped adapter: nothing is spelled "local"
    return f"#lora={path}{TRAINED_SETTINGS}"
