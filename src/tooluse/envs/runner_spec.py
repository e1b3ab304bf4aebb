"""``RunnerSpec``: everything needed to build a :class:`TrajectoryRunner` in another process.

``runner_from_spec(spec)`` builds it (``model="local"`` is the embedded model with its shipped
adapter, ``"local:base"`` the untouched one; any model string goes through
:func:`tooluse.providers.load_model`). Picklable, so that a Ray worker or a subprocess can build
its own runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tooluse.envs.registry import environment_registry
from tooluse.envs.trajectory import TrajectoryRunner
from tooluse.providers.base import Backend, SamplingParams
from tooluse.providers.model_registry import load_model

__all__ = ["RunnerSpec", "runner_from_spec"]


@dataclass(frozen=True, kw_only=True)
class RunnerSpec:
    """Everything needed to build a :class:`TrajectoryRunner` in another process (picklable)."""

    environment: str
    model: str = "local"
    environment_options: Mapping[str, Any] = field(default_factory=dict)
    tool_types: tuple[str, ...] = ("python",)
    tool_call_parser: str | None = None
    system_prompt: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    max_turns: int | None = None
    tool_choice: str = "auto"


def runner_from_spec(spec: RunnerSpec) -> TrajectoryRunner:
    """A runner built from ``spec`` (``model="local"`` is the embedded model)."""
    options: dict[str, Any] = {}
    if spec.max_tokens and spec.model.partition(":")[0] == "local":
        options["max_tokens"] = spec.max_tokens  # the embedded model's own default
    backend: Backend = load_model(spec.model, **options)
    parser = None
    if spec.tool_call_parser:
        from tooluse.formats import get_parser

        parser = get_parser(spec.tool_call_parser)
    environment = environment_registry.get(
        name=spec.environment, tool_types=spec.tool_types, **dict(spec.environment_options)
    )
    return TrajectoryRunner(
        environment=environment,
        backend=backend,
        sampling_params=SamplingParams(temperature=spec.temperature, max_tokens=spec.max_tokens),
        system_prompt=spec.system_prompt,
        tool_call_parser=parser,
        max_turns=spec.max_turns,
        tool_choice=spec.tool_choice,
    )
