"""Tool execution: run model tool calls and answer every call id with exactly one result.

``SimpleToolExecutor`` runs calls one after another; ``AsyncToolExecutor`` runs a batch in
parallel with per-tool timeouts, a concurrency bound and cooperative cancellation.
"""

from tooluse.execution.local import (
    DEFAULT_MAX_OUTPUT_CHARS,
    AfterHook,
    BeforeHook,
    CancellationToken,
    SimpleToolExecutor,
    Veto,
    normalize_tools,
    run_coroutine_blocking,
    truncate_output,
)
from tooluse.execution.parallel import AsyncToolExecutor

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "AfterHook",
    "AsyncToolExecutor",
    "BeforeHook",
    "CancellationToken",
    "SimpleToolExecutor",
    "Veto",
    "normalize_tools",
    "run_coroutine_blocking",
    "truncate_output",
]
