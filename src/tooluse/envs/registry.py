"""The environment registry: environments by name (``environment_registry.get(name=...)``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse.envs.arithmetic import arithmetic_environment, word_problems_environment
from tooluse.envs.base import ToolEnvironment
from tooluse.envs.splits import check_split

__all__ = ["EnvironmentFactory", "EnvironmentRegistry", "LazyFactory", "environment_registry"]

#: Builds an environment from ``tool_types`` and keyword options.
EnvironmentFactory = Callable[..., ToolEnvironment]


class EnvironmentRegistry:
    """Named environment factories; ``get`` builds a fresh environment each time."""

    def __init__(self) -> None:
        self._factories: dict[str, EnvironmentFactory] = {}

    def register(self, name: str, factory: EnvironmentFactory, *, replace: bool = False) -> None:
        """Make ``get(name=name, ...)`` call ``factory(tool_types=..., **options)``."""
        if name in self._factories and not replace:
            raise ValueError(f"environment {name!r} is already registered")
        self._factories[name] = factory

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._factories))

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def get(
        self,
        name: str,
        *,
        tool_types: Sequence[str] = ("python",),
        adapter: str | None = None,
        split: str | None = None,
        **options: Any,
    ) -> ToolEnvironment:
        """A new environment called ``name`` with the tools ``tool_types`` enables.

        ``split="train"`` or ``"test"`` gives that split's tasks (disjoint and seeded, see
        :mod:`tooluse.envs.splits`); without it, the environment's own default set.

        With ``adapter``, ``name`` names an environment of another library, wrapped by that
        adapter (see :mod:`tooluse.envs.adapters`); ``"ADAPTER:NAME"`` (the name the wrapped
        environment reports, e.g. ``reasoning_gym:chain_sum``) is the same as
        ``adapter="ADAPTER"``. ``math:GSM8K`` is native here and reads a local file
        (``data_path=``).
        """
        if check_split(split) is not None:
            options["split"] = split
        if adapter is None and name not in self._factories:
            adapter, name = _adapter_prefix(name)
        if adapter is not None:
            from tooluse.envs.adapters import get_adapter

            return get_adapter(adapter)(name, tool_types=tuple(tool_types), **options)
        factory = self._factories.get(name)
        if factory is None:
            raise KeyError(
                f"unknown environment {name!r}; registered: {', '.join(self.names()) or 'none'}"
            )
        return factory(tool_types=tuple(tool_types), **options)


def _adapter_prefix(name: str) -> tuple[str | None, str]:
    """``("reasoning_gym", "chain_sum")`` for ``"reasoning_gym:chain_sum"`` (the name an
    adapter's environment reports), ``(None, name)`` when the prefix names no adapter."""
    from tooluse.envs.adapters import adapter_names

    prefix, colon, rest = name.partition(":")
    if colon and rest and prefix in adapter_names():
        return prefix, rest
    return None, name


@dataclass(frozen=True)
class LazyFactory:
    """A factory named by module path, imported on first use: ``"package.module:Class"``,
    called with ``args`` first. Lets a package above envs (BFCL's environments live in
    :mod:`tooluse.evals.bfcl`) offer environments here without envs importing it."""

    target: str
    args: tuple[Any, ...] = ()

    def __call__(self, **options: Any) -> ToolEnvironment:
        module_name, _, attribute = self.target.partition(":")
        factory = getattr(importlib.import_module(module_name), attribute)
        return factory(*self.args, **options)


def _gsm8k(**options: Any) -> ToolEnvironment:
    from tooluse.envs.gsm8k import GSM8KEnvironment

    return GSM8KEnvironment(**options)


environment_registry = EnvironmentRegistry()
environment_registry.register("math:arithmetic", arithmetic_environment)
environment_registry.register("arithmetic", arithmetic_environment)
environment_registry.register("math:word_problems", word_problems_environment)
environment_registry.register("math:gsm8k", _gsm8k)
environment_registry.register("math:GSM8K", _gsm8k)  # the llenvs spelling
for _category in (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
):
    environment_registry.register(
        f"bfcl:{_category}",
        LazyFactory("tooluse.evals.bfcl.multi_turn:BFCLMultiTurnEnvironment", (_category,)),
    )
for _category in ("memory_kv", "memory_rec_sum", "memory_vector"):
    environment_registry.register(
        f"bfcl:{_category}",
        LazyFactory("tooluse.evals.bfcl.memory:BFCLMemoryEnvironment", (_category,)),
    )
for _category in ("web_search_base", "web_search_no_snippet"):
    environment_registry.register(
        f"bfcl:{_category}",
        LazyFactory("tooluse.evals.bfcl.web_search:BFCLWebSearchEnvironment", (_category,)),
    )
for _domain in ("airline", "retail", "telecom", "mock"):
    environment_registry.register(
        f"tau2:{_domain}",
        LazyFactory("tooluse.envs.tau2.environment:Tau2Environment", (_domain,)),
    )
for _domain in ("telecom", "mock"):  # the domains whose tasks carry a ticket
    environment_registry.register(
        f"tau2:{_domain}:solo",
        LazyFactory("tooluse.envs.tau2.environment:solo_environment", (_domain,)),
    )
environment_registry.register(
    "nestful", LazyFactory("tooluse.envs.nested.environment:NestfulEnvironment")
)
environment_registry.register(
    "complexfuncbench",
    LazyFactory("tooluse.envs.nested.environment:ComplexFuncBenchEnvironment"),
)
for _category in (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
):
    environment_registry.register(
        f"bfcl:{_category}",
        LazyFactory("tooluse.evals.bfcl.single_turn:BFCLSingleTurnEnvironment", (_category,)),
    )
