"""Adapters: other libraries' environments as tooluse :class:`ToolEnvironment` objects.

::

    env = environment_registry.get(name="...", adapter="reasoning_gym", tool_types=("python",))

An adapter is a callable ``(name, *, tool_types, **options) -> ToolEnvironment`` registered by
name. The built-in ones live in one module each (``tooluse.envs.adapters.<name>``), imported
only when asked for, and each imports its library in one place with an error that names the
extra to install. A wrapped environment exposes its tools on the observation, gets the
always-on monitoring rewards and runs in :class:`~tooluse.envs.TrajectoryRunner` like a native
one.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from tooluse.envs.base import ToolEnvironment

__all__ = ["EnvironmentAdapter", "adapter_names", "get_adapter", "register_adapter"]


class EnvironmentAdapter(Protocol):
    """Builds a tooluse environment from another library's environment called ``name``."""

    def __call__(
        self, name: str, *, tool_types: tuple[str, ...], **options: Any
    ) -> ToolEnvironment: ...


#: Built-in adapters: name -> module whose ``build`` is the adapter (imported on first use).
BUILTIN_ADAPTERS: dict[str, str] = {
    "gem": "tooluse.envs.adapters.gem",
    "reasoning_gym": "tooluse.envs.adapters.reasoning_gym",
    "verifiers": "tooluse.envs.adapters.verifiers",
    "openenv": "tooluse.envs.adapters.openenv",
}

_registered: dict[str, EnvironmentAdapter] = {}


def register_adapter(name: str, adapter: EnvironmentAdapter, *, replace: bool = False) -> None:
    """Make ``environment_registry.get(name=..., adapter=name)`` use ``adapter``."""
    if (name in _registered or name in BUILTIN_ADAPTERS) and not replace:
        raise ValueError(f"adapter {name!r} is already registered")
    _registered[name] = adapter


def adapter_names() -> tuple[str, ...]:
    return tuple(sorted({*BUILTIN_ADAPTERS, *_registered}))


def get_adapter(name: str) -> EnvironmentAdapter:
    """The adapter called ``name`` (``ValueError`` naming the known ones otherwise)."""
    adapter = _registered.get(name)
    if adapter is not None:
        return adapter
    module = BUILTIN_ADAPTERS.get(name)
    if module is None:
        raise ValueError(f"unknown adapter {name!r}; known: {', '.join(adapter_names()) or 'none'}")
    built: EnvironmentAdapter = importlib.import_module(module).build
    return built
