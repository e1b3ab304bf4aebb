"""Tool execution: run model tool calls and answer every call id with exactly one result.

:class:`AbstractToolExecutor` is the contract (``definitions`` and ``aexecute_batch``; the base
class derives the blocking and per-call variants). :class:`ToolExecutor` runs Python tools, a
batch in parallel with per-tool timeouts, a concurrency bound and cooperative cancellation;
:class:`SimpleToolExecutor` runs them one after another. MCP toolsets and environments
implement the same contract.
"""

from tooluse.execution.base import (
    DEFAULT_MAX_OUTPUT_CHARS,
    AbstractToolExecutor,
    AfterHook,
    BeforeHook,
    CancellationToken,
    PreparedCall,
    ToolsArg,
    Veto,
    normalize_tools,
    truncate_output,
)
from tooluse.execution.local import AsyncToolExecutor, SimpleToolExecutor, ToolExecutor
from tooluse.sync_bridge import run_coroutine_blocking

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "AbstractToolExecutor",
    "AfterHook",
    "AsyncToolExecutor",
    "BeforeHook",
    "CancellationToken",
    "PreparedCall",
    "SimpleToolExecutor",
    "ToolExecutor",
    "ToolsArg",
    "Veto",
    "normalize_tools",
    "run_coroutine_blocking",
    "truncate_output",
]
