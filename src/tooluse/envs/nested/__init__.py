"""Nested and multi-step calling benchmarks as tooluse environments: ``nestful`` (NESTFUL v1)
and ``complexfuncbench`` (ComplexFuncBench), both from the ``nestful-wrapper`` package's data
(:mod:`tooluse.envs.nested.data`), replayed instead of calling live APIs
(:mod:`tooluse.envs.nested.replay`) and scored as their papers score
(:mod:`tooluse.envs.nested.scoring`)."""

from __future__ import annotations

from tooluse.envs.nested.environment import (
    ComplexFuncBenchEnvironment,
    NestedCallEnvironment,
    NestfulEnvironment,
)

__all__ = ["ComplexFuncBenchEnvironment", "NestedCallEnvironment", "NestfulEnvironment"]
