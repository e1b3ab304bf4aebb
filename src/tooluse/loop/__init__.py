"""The tool loop: call the model, run its tools, repeat until it answers.

The modules, in the order they build on each other:

- ``message_data`` and ``run_state``: messages as lossless JSON, and a run's saved state;
- ``types``: the requests the core makes of its driver, the events it yields, ``RunResult``;
- ``core``: the loop as a generator with no I/O (``loop_steps``);
- ``setup``: the options every entry point takes and their checks (``build_setup``);
- ``run_log`` and ``telemetry``: the run log (SQLite) and OpenTelemetry spans;
- ``drivers``: the sync and async drivers and ``run`` / ``arun`` / ``iter_run`` / ``aiter_run``;
- ``resume``: ``resume`` / ``aresume`` from a ``RunState``;
- ``structured`` and ``conversation``: extraction through a forced call, and conversations
  between several participants, both built on ``run``.

This package offers what the module ``tooluse.loop`` offered: the drivers and the names of
a run's setup, events and result. It imports neither ``structured``, ``conversation`` nor
``telemetry`` (``tooluse`` loads them on first use).
"""

from __future__ import annotations

from tooluse.loop.drivers import (
    AfterHooks,
    ApprovalRequested,
    Hooks,
    LoopEvent,
    ModelTurnFinished,
    Prompt,
    ResultCollector,
    RunFinished,
    RunOptions,
    RunResult,
    StopReason,
    ToolExecutionFinished,
    ToolExecutionStarted,
    TrailEntry,
    aiter_run,
    arun,
    backend_label,
    build_setup,
    choose_mode,
    drive_async,
    drive_sync,
    initial_history,
    iter_run,
    run,
)

__all__ = [
    "AfterHooks",
    "ApprovalRequested",
    "Hooks",
    "LoopEvent",
    "ModelTurnFinished",
    "Prompt",
    "ResultCollector",
    "RunFinished",
    "RunOptions",
    "RunResult",
    "StopReason",
    "ToolExecutionFinished",
    "ToolExecutionStarted",
    "TrailEntry",
    "aiter_run",
    "arun",
    "backend_label",
    "build_setup",
    "choose_mode",
    "drive_async",
    "drive_sync",
    "initial_history",
    "iter_run",
    "run",
]
