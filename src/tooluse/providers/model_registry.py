"""Model strings: ``load_model("openai:gpt-4o")`` and the registry of factories by prefix.

Built-in prefixes: ``openai``, ``openai-responses``, ``openai-compatible`` (a base URL, optionally
``#model``), ``ollama``, ``anthropic``, ``gemini``, ``bedrock``. Other parts of tooluse (or user
code) add prefixes with :func:`register_model_prefix`; a few well-known prefixes are registered
by importing the module that owns them on first use, so heavy packages load only when asked for.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from tooluse.providers.base import Backend

__all__ = ["ModelFactory", "load_model", "register_model_prefix", "registered_model_prefixes"]

# factory(rest_of_the_string, **options) -> backend
ModelFactory = Callable[..., Backend]

_FACTORIES: dict[str, ModelFactory] = {}
# Prefixes whose owning module registers them when imported (kept lazy: llama_cpp is heavy).
_LAZY_MODULES = {
    "local": "tooluse.local",
    "llama-cpp": "tooluse.local",
    "llama_cpp": "tooluse.local",
}


def register_model_prefix(prefix: str, factory: ModelFactory, *, replace: bool = False) -> None:
    """Make ``load_model(f"{prefix}:{rest}", **options)`` call ``factory(rest, **options)``.

    Registering a taken prefix raises ``ValueError`` unless ``replace=True``.
    """
    if not prefix or ":" in prefix:
        raise ValueError(f"a model prefix is a non-empty name without ':', got {prefix!r}")
    if prefix in _FACTORIES and not replace and _FACTORIES[prefix] is not factory:
        raise ValueError(f"model prefix {prefix!r} is already registered")
    _FACTORIES[prefix] = factory


def registered_model_prefixes() -> tuple[str, ...]:
    """The prefixes ``load_model`` understands (sorted), including those whose module is
    imported on first use (``local``, ``llama-cpp``)."""
    return tuple(sorted(set(_FACTORIES) | set(_LAZY_MODULES)))


def load_model(spec: str, **options: Any) -> Backend:
    """A backend from a model string such as ``"anthropic:claude-sonnet-4-5"``.

    ``options`` go to the backend (``timeout=``, ``max_retries=``, ``api_key=``...). A string
    without ``:`` is looked up as a whole prefix (for example ``"local"``).
    """
    prefix, _, rest = spec.partition(":")
    if prefix not in _FACTORIES and prefix in _LAZY_MODULES:
        try:
            importlib.import_module(_LAZY_MODULES[prefix])
        except ImportError as exc:
            raise ValueError(f"model prefix {prefix!r} is unavailable: {exc}") from exc
    factory = _FACTORIES.get(prefix)
    if factory is None:
        known = ", ".join(registered_model_prefixes())
        raise ValueError(f"unknown model prefix {prefix!r} in {spec!r}; known prefixes: {known}")
    return factory(rest, **options)


def _openai(rest: str, **options: Any) -> Backend:
    from tooluse.providers.openai_backend import OpenAIBackend

    return OpenAIBackend(rest or "gpt-4o", **options)


def _openai_responses(rest: str, **options: Any) -> Backend:
    from tooluse.providers.openai_backend import OpenAIBackend

    return OpenAIBackend(rest or "gpt-4o", api="responses", **options)


def _openai_compatible(rest: str, **options: Any) -> Backend:
    from tooluse.providers.openai_backend import OpenAIBackend

    url, _, model = rest.partition("#")
    if not url:
        raise ValueError(
            "openai-compatible needs a base URL: 'openai-compatible:http://host:port/v1'"
        )
    options.setdefault("model", model)
    options.setdefault("api_key", os.environ.get("OPENAI_COMPATIBLE_API_KEY", ""))
    return OpenAIBackend(base_url=url, **options)


def _ollama(rest: str, **options: Any) -> Backend:
    from tooluse.providers.openai_backend import OpenAIBackend

    host = os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434").rstrip("/")
    if not host.startswith("http"):
        host = f"http://{host}"
    options.setdefault("api_key", "")
    return OpenAIBackend(rest, base_url=f"{host}/v1", **options)


def _anthropic(rest: str, **options: Any) -> Backend:
    from tooluse.providers.anthropic_backend import AnthropicBackend

    return AnthropicBackend(rest, **options) if rest else AnthropicBackend(**options)


def _gemini(rest: str, **options: Any) -> Backend:
    from tooluse.providers.gemini_backend import GeminiBackend

    return GeminiBackend(rest, **options) if rest else GeminiBackend(**options)


def _bedrock(rest: str, **options: Any) -> Backend:
    from tooluse.providers.bedrock_backend import BedrockBackend

    return BedrockBackend(rest, **options) if rest else BedrockBackend(**options)


for _prefix, _factory in {
    "openai": _openai,
    "openai-responses": _openai_responses,
    "openai-compatible": _openai_compatible,
    "ollama": _ollama,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
}.items():
    register_model_prefix(_prefix, _factory)
