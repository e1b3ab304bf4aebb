"""The executor seam: :class:`AbstractToolExecutor`, the contract every executor implements, and
the types its callers share (cancellation, hooks, prepared calls).

An executor knows its tools (``definitions``) and answers a batch of calls with exactly one
:class:`ToolResult` per call, in call order (``aexecute_batch``). The base class derives the
rest: the blocking ``execute_batch``, per-call results as they end (``aiter_batch`` /
``iter_batch``), single calls (``aexecute`` / ``execute``) and argument checks (``prepare``).
The local :class:`~tooluse.execution.local.ToolExecutor`, the MCP toolsets and the
environments' executors all implement it; the tool loop calls nothing else.
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
import dataclasses
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar, Union

from tooluse.errors import ToolDefinitionError, ToolNotFoundError
from tooluse.messages import ToolCall, ToolResult
from tooluse.sync_bridge import run_coroutine_blocking
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "AbstractToolExecutor",
    "AfterHook",
    "BeforeHook",
    "CancellationToken",
    "PreparedCall",
    "ToolsArg",
    "Veto",
    "call_arguments",
    "current_call_token",
    "normalize_tools",
    "run_with_call_token",
    "traced_call",
    "truncate_output",
]

T = TypeVar("T")

#: Tool outputs longer than this (in characters) are cut, keeping the head and the tail.
DEFAULT_MAX_OUTPUT_CHARS = 20_000

#: What callers may pass as tools: ``{name: function}`` or a sequence of tool-like objects
#: (functions, ``Tool`` objects, ``ToolDefinition``s with a ``function``).
ToolsArg = Union[Mapping[str, Any], Iterable[Any]]


@dataclass(frozen=True, kw_only=True)
class Veto:
    """Returned by a ``before`` hook to refuse a call; ``reason`` goes to the model."""

    reason: str = "refused by policy"


BeforeHook = Callable[[ToolCall], Any]
"""``hook(call)`` -> ``None`` (run as is), a rewritten ``ToolCall``, a ``ToolResult`` or a
:class:`Veto` (possibly awaitable)."""

AfterHook = Callable[[ToolCall, ToolResult], Any]
"""``hook(call, result)`` -> ``None`` (keep) or a replacement ``ToolResult`` (possibly awaitable)."""


class CancellationToken:
    """A thread-safe flag that asks running tool calls (and the loop) to stop.

    Calls still running when it fires are answered with ``error: cancelled`` results, so a
    history built from them stays valid.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Fire the token (idempotent); registered callbacks run once, in this thread."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the token fires (right away if it already has)."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def remove_callback(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)


_CALL_TOKEN: contextvars.ContextVar[CancellationToken | None] = contextvars.ContextVar(
    "tooluse_call_token", default=None
)


def current_call_token() -> CancellationToken | None:
    """The token of the blocking tool call running in this thread, or ``None``.

    The executor fires it when it gives the call up (its batch was cancelled, or it timed out):
    a thread cannot be stopped from outside, so a blocking tool that waits on other work (an
    MCP request, say) can stop that work when the token fires.
    """
    return _CALL_TOKEN.get()


def run_with_call_token(token: CancellationToken, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` with ``token`` as this thread's :func:`current_call_token`."""
    reset = _CALL_TOKEN.set(token)
    try:
        return function(*args)
    finally:
        _CALL_TOKEN.reset(reset)


_UNTRACED = contextlib.nullcontext()


def traced_call(call_id: str) -> contextlib.AbstractContextManager[Any]:
    """Around the body of call ``call_id``: inside a traced run, the call's span is the current
    OpenTelemetry span there, so what the tool traces nests under it (nothing otherwise)."""
    # Looked up without importing: a program that never traces never loads OpenTelemetry.
    telemetry = sys.modules.get("tooluse.loop.telemetry")
    if telemetry is None:
        return _UNTRACED
    return telemetry.running_call(call_id)  # type: ignore[no-any-return]


def truncate_output(text: str, limit: int) -> tuple[str, int]:
    """Cut ``text`` to about ``limit`` characters, keeping head and tail around a marker.

    Returns the text and the number of characters removed (0 when nothing was cut).
    """
    if limit <= 0 or len(text) <= limit:
        return text, 0
    removed = len(text) - limit
    marker = f"\n[... output truncated: {removed} of {len(text)} characters removed ...]\n"
    head = (limit * 3) // 4
    tail = limit - head
    return text[:head] + marker + (text[-tail:] if tail else ""), removed


def normalize_tools(tools: ToolsArg | None) -> tuple[ToolDefinition, ...]:
    """Tool-like objects as ``ToolDefinition``s; ``{name: fn}`` names each tool by its key.

    Raises :class:`ToolDefinitionError` when two tools share a name.
    """
    if tools is None:
        return ()
    definitions: list[ToolDefinition] = []
    if isinstance(tools, Mapping):
        for name, obj in tools.items():
            if isinstance(obj, ToolDefinition):
                definition = obj if obj.name == name else dataclasses.replace(obj, name=name)
            elif callable(obj) and not hasattr(obj, "schema") and not isinstance(obj, type):
                # The key names the tool, so lambdas and partials work too (as in llenvs).
                definition = ToolDefinition.from_callable(obj, name=name)
            else:
                definition = _as_tool(obj)
                if definition.name != name:
                    definition = dataclasses.replace(definition, name=name)
            definitions.append(definition)
    else:
        definitions = [d if isinstance(d, ToolDefinition) else _as_tool(d) for d in tools]
    seen: set[str] = set()
    for definition in definitions:
        if definition.name in seen:
            raise ToolDefinitionError(
                f"two tools are named {definition.name!r}; names must be unique"
            )
        seen.add(definition.name)
    return tuple(definitions)


def _as_tool(obj: Any) -> ToolDefinition:
    # Imported on use: the normaliser pulls in the schema and validation stack.
    from tooluse.tools import as_tool

    definition: ToolDefinition = as_tool(obj)
    return definition


@dataclass(frozen=True, kw_only=True)
class PreparedCall:
    """A call that passed lookup and validation and is ready to run."""

    call: ToolCall
    definition: ToolDefinition
    arguments: dict[str, Any]


def call_arguments(call: ToolCall) -> Any:
    """What to validate: the decoded object, or the raw text when the model's JSON was broken."""
    raw = call.raw_arguments
    if not call.arguments and raw is not None and raw.strip() not in ("", "null", "{}"):
        return raw
    return call.arguments


class AbstractToolExecutor(abc.ABC):
    """Runs the tool calls of a model turn: the contract of every executor.

    Implement ``definitions`` and :meth:`aexecute_batch`; override the blocking
    :meth:`execute_batch` when the executor has a native blocking path, and
    :meth:`aiter_batch` / :meth:`iter_batch` when it can report each call as it ends.
    Whatever happens, every call gets exactly one result.
    """

    @property
    @abc.abstractmethod
    def definitions(self) -> tuple[ToolDefinition, ...]:
        """The tools this executor runs."""

    @abc.abstractmethod
    async def aexecute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """Run ``calls``; one result per call, in call order."""

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        """The blocking :meth:`aexecute_batch`."""
        return run_coroutine_blocking(self.aexecute_batch(calls, cancel=cancel))

    async def aiter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> AsyncIterator[tuple[int, ToolResult]]:
        """``(index, result)`` for each call as it ends (here: all once the batch is done)."""
        for index, result in enumerate(await self.aexecute_batch(calls, cancel=cancel)):
            yield index, result

    def iter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> Iterator[tuple[int, ToolResult]]:
        """The blocking :meth:`aiter_batch`."""
        yield from enumerate(self.execute_batch(calls, cancel=cancel))

    async def aexecute(self, call: ToolCall) -> ToolResult:
        """Run one call; its result."""
        return (await self.aexecute_batch((call,)))[0]

    def execute(self, call: ToolCall) -> ToolResult:
        """The blocking :meth:`aexecute`."""
        return self.execute_batch((call,))[0]

    def get(self, name: str) -> ToolDefinition | None:
        """The tool named ``name``, if this executor has it."""
        for definition in self.definitions:
            if definition.name == name:
                return definition
        return None

    def has_tool(self, name: str) -> bool:
        return self.get(name) is not None

    def prepare(self, call: ToolCall) -> PreparedCall | ToolResult:
        """Look the tool up and validate the arguments; a failure result when either fails."""
        definition = self.get(call.name)
        if definition is None:
            names = tuple(d.name for d in self.definitions)
            return ToolResult.failure(call.id, call.name, ToolNotFoundError(call.name, names))
        try:
            arguments = definition.validate_arguments(call_arguments(call))
        except Exception as exc:  # every validation problem is the model's to fix
            return ToolResult.failure(call.id, call.name, exc)
        return PreparedCall(call=call, definition=definition, arguments=dict(arguments))

    def close(self) -> None:  # noqa: B027 - an optional hook: most executors hold nothing
        """Release what the executor holds (nothing by default)."""

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> AbstractToolExecutor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
