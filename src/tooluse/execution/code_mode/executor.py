"""``CodeModeExecutor``: the program tool over another executor's tools.

The model sees the program tool (``CodeMode.tool_name``, ``run_python`` by default), whose
description shows every tool a program may call as a typed ``async def`` stub, and the tools it
may call itself (``callers`` including ``"direct"``; terminal tools by default). A call of the
program tool runs a :class:`~tooluse.execution.code_mode.host.ProgramRun`: the program in a
fresh sandboxed interpreter, each of its tool calls run by the wrapped executor (so they pass
the same validation, hooks and timeouts as direct calls). Any other call goes to the wrapped
executor. Calls of one batch, programs and direct calls, run at the same time.

A run that resumes a program (after a pause for approval, or a crash) hands its journal over
with :meth:`CodeModeExecutor.resume_program` before the call runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence

from tooluse.execution.base import (
    AbstractToolExecutor,
    CancellationToken,
    traced_call,
)
from tooluse.execution.code_mode.host import (
    CallRunner,
    Policy,
    ProgramHost,
    ProgramRun,
    check_program,
)
from tooluse.execution.code_mode.journal import ProgramJournal, Resolution
from tooluse.execution.code_mode.sandboxes import spares_for
from tooluse.execution.code_mode.settings import CodeMode, callable_directly, callable_from_code
from tooluse.execution.code_mode.stubs import tool_stubs
from tooluse.execution.sandbox.limits import describe_limits
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

__all__ = ["CodeModeExecutor", "program_tool"]


def program_tool(settings: CodeMode, tools: Sequence[ToolDefinition]) -> ToolDefinition:
    """The program tool the model calls: its description holds the tools' stubs."""
    stubs = tool_stubs(tools)
    limits = describe_limits(settings.limits())
    finish = (
        " Call final_answer(text) to end with your answer to the user (no further turn)."
        if settings.final_answer
        else ""
    )
    text = (
        "Run a Python 3 program in a sandbox. The tools below are async functions: call them "
        "with await (several at once with await asyncio.gather(...)); each returns the tool's "
        "result (JSON values as dict, list, str or numbers) or raises ToolError (CallDenied "
        "when the call was refused). Only what the program prints and its return value (a "
        "top-level `return x`, or a last bare expression) come back to you, each cut at "
        f"{settings.max_output_chars} characters: filter, count and sum in the program instead "
        f"of printing whole results.{finish} Limits: {limits}, at most {settings.max_calls} "
        "tool calls; no files outside /sandbox."
    )
    if stubs:
        text += "\n\n```python\n" + "\n\n".join(s.shown() for s in stubs) + "\n```"
    return ToolDefinition(
        name=settings.tool_name,
        description=text,
        parameters=(
            ToolParameter(
                name="code",
                type=ToolParameterType.STRING,
                description="The Python program to run.",
            ),
        ),
        idempotent=True,  # the sandbox keeps nothing, and its calls are journaled
        callers=("direct",),
        metadata={"code_mode": settings, "code_tools": tuple(tools)},
    )


class CodeModeExecutor(AbstractToolExecutor):
    """Programs over ``inner``'s tools (see the module documentation).

    ``approve(call)`` is the run's approval policy, asked before each call a program makes
    (``True`` run, ``False`` refuse, ``None`` the tool's ``requires_approval`` decides).
    ``on_progress(journal)``, when set, gets a program's journal before each of its calls
    runs and after it ends.
    """

    def __init__(
        self,
        inner: AbstractToolExecutor,
        settings: CodeMode | None = None,
        *,
        approve: Policy | None = None,
        close_inner: bool = True,
    ) -> None:
        self.inner = inner
        self.settings = settings or CodeMode()
        self.approve = approve
        self.close_inner = close_inner
        self.on_progress: Callable[[ProgramJournal], None] | None = None
        self._spares = spares_for(self.settings)
        self._known: tuple[ToolDefinition, ...] | None = None
        self._definitions: tuple[ToolDefinition, ...] = ()
        self._code_tools: dict[str, ToolDefinition] = {}
        self._stubs_source = ""
        self._resumed: dict[str, tuple[ProgramJournal, dict[str, Resolution]]] = {}
        self._lock = threading.Lock()
        self._spares.refill()

    # -- description ---------------------------------------------------------------------------

    def _describe(self) -> None:
        tools = self.inner.definitions
        if tools is self._known:
            return
        names = {d.name for d in tools}
        if self.settings.tool_name in names:
            raise ValueError(
                f"a tool is already named {self.settings.tool_name!r}; give CodeMode another "
                "tool_name"
            )
        code = [d for d in tools if callable_from_code(d)]
        direct = tuple(d for d in tools if callable_directly(d))
        self._code_tools = {d.name: d for d in code}
        self._stubs_source = "\n".join(s.source() for s in tool_stubs(code))
        self._definitions = (program_tool(self.settings, code), *direct)
        self._known = tools

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        self._describe()
        return self._definitions

    @property
    def code_tools(self) -> Mapping[str, ToolDefinition]:
        """The tools a program may call, by name."""
        self._describe()
        return self._code_tools

    def get(self, name: str) -> ToolDefinition | None:
        return next((d for d in self.definitions if d.name == name), None)

    def resume_program(
        self,
        program_id: str,
        journal: ProgramJournal,
        resolutions: Mapping[str, Resolution] | None = None,
    ) -> None:
        """The journal (and the decisions on its waiting calls) for the next run of the
        program call ``program_id``."""
        with self._lock:
            self._resumed[program_id] = (journal, dict(resolutions or {}))

    # -- one call ------------------------------------------------------------------------------

    def _is_program(self, call: ToolCall) -> bool:
        return call.name == self.settings.tool_name

    def _refusal(self, call: ToolCall) -> ToolResult | None:
        """Why a direct call cannot run here (a tool only programs may call)."""
        if call.name in self.code_tools and self.get(call.name) is None:
            return ToolResult.failure(
                call.id,
                call.name,
                f"{call.name} can be called only from a program: call it inside "
                f"{self.settings.tool_name}",
            )
        return None

    def run_program(
        self, call: ToolCall, run_call: CallRunner, cancel: CancellationToken | None = None
    ) -> ToolResult:
        """Run one program call to its answer (blocking); ``run_call`` runs its tool calls."""
        source = call.arguments.get("code")
        problem = check_program(source, self.settings) if call.arguments else None
        if not call.arguments:
            problem = "the program tool takes one argument, code (the Python program)"
        if problem is not None:
            return ToolResult.failure(call.id, call.name, problem)
        with self._lock:
            journal, resolutions = self._resumed.pop(call.id, (None, {}))
        host = ProgramHost(
            settings=self.settings,
            definitions=self.code_tools,
            stubs_source=self._stubs_source,
            run_call=run_call,
            approve=self.approve,
            on_progress=self.on_progress,
        )
        with traced_call(call.id):
            run = ProgramRun(
                program=call,
                source=str(source),
                session=self._spares.take(),
                host=host,
                journal=journal,
                resolutions=resolutions,
            )
        if cancel is not None:
            cancel.add_callback(run.cancel)
        try:
            return run.run()
        finally:
            if cancel is not None:
                cancel.remove_callback(run.cancel)

    def execute(self, call: ToolCall) -> ToolResult:
        if self._is_program(call):
            return self.run_program(call, self.inner.execute)
        return self._refusal(call) or self.inner.execute(call)

    async def aexecute(self, call: ToolCall) -> ToolResult:
        if self._is_program(call):
            return await asyncio.to_thread(self.run_program, call, _on_loop(self.inner))
        return self._refusal(call) or await self.inner.aexecute(call)

    # -- batches -------------------------------------------------------------------------------

    def iter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> Iterator[tuple[int, ToolResult]]:
        """Programs in their own threads and the direct calls as one batch of the wrapped
        executor, all at once; ``(index, result)`` as each call ends. A consumer that stops
        early (Ctrl-C, a closed iterator) stops the programs still running."""
        programs = [i for i, c in enumerate(calls) if self._is_program(c)]
        direct = [i for i, c in enumerate(calls) if not self._is_program(c)]
        ended: queue.Queue[tuple[int, ToolResult] | BaseException] = queue.Queue()
        stop = _linked(cancel)

        def program(index: int) -> None:
            try:
                ended.put((index, self.run_program(calls[index], self.inner.execute, stop)))
            except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread
                ended.put(exc)

        def rest() -> None:
            try:
                for position, result in self._direct_batch([calls[i] for i in direct], stop):
                    ended.put((direct[position], result))
            except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread
                ended.put(exc)

        # Each worker runs in a copy of this context: a traced run's spans are found there.
        workers = [
            threading.Thread(target=contextvars.copy_context().run, args=(program, i), daemon=True)
            for i in programs
        ]
        if direct:
            context = contextvars.copy_context()
            workers.append(threading.Thread(target=context.run, args=(rest,), daemon=True))
        for worker in workers:
            worker.start()
        received = 0
        try:
            while received < len(calls):
                item = ended.get()
                if isinstance(item, BaseException):
                    raise item
                received += 1
                yield item
        finally:
            _unlink(cancel, stop, done=received == len(calls))

    def _direct_batch(
        self, calls: Sequence[ToolCall], cancel: CancellationToken | None
    ) -> Iterator[tuple[int, ToolResult]]:
        refused = {i: r for i, c in enumerate(calls) if (r := self._refusal(c)) is not None}
        yield from refused.items()
        runnable = [i for i in range(len(calls)) if i not in refused]
        if runnable:
            batch = self.inner.iter_batch([calls[i] for i in runnable], cancel=cancel)
            for position, result in batch:
                yield runnable[position], result

    def execute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        results = dict(self.iter_batch(calls, cancel=cancel))
        return tuple(results[i] for i in range(len(calls)))

    async def aiter_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> AsyncIterator[tuple[int, ToolResult]]:
        """The async :meth:`iter_batch`: programs in worker threads whose tool calls run on
        this event loop, the direct calls as one async batch of the wrapped executor."""
        ended: asyncio.Queue[tuple[int, ToolResult]] = asyncio.Queue()
        runner = _on_loop(self.inner)
        stop = _linked(cancel)

        async def program(index: int) -> None:
            result = await asyncio.to_thread(self.run_program, calls[index], runner, stop)
            await ended.put((index, result))

        async def rest(indices: list[int]) -> None:
            refused = [(i, self._refusal(calls[i])) for i in indices]
            for index, result in refused:
                if result is not None:
                    await ended.put((index, result))
            runnable = [i for i, r in refused if r is None]
            if runnable:
                batch = self.inner.aiter_batch([calls[i] for i in runnable], cancel=cancel)
                async with contextlib.aclosing(batch) as each:  # type: ignore[type-var]
                    async for position, result in each:
                        await ended.put((runnable[position], result))

        tasks = [
            asyncio.ensure_future(program(i)) for i, c in enumerate(calls) if self._is_program(c)
        ]
        direct = [i for i, c in enumerate(calls) if not self._is_program(c)]
        if direct:
            tasks.append(asyncio.ensure_future(rest(direct)))
        received = 0
        try:
            while received < len(calls):
                getter = asyncio.ensure_future(ended.get())
                done, _ = await asyncio.wait([getter, *tasks], return_when=asyncio.FIRST_COMPLETED)
                for task in tasks:
                    if task in done and task.exception() is not None:
                        getter.cancel()
                        raise task.exception()  # type: ignore[misc]
                received += 1
                yield await getter
        finally:
            _unlink(cancel, stop, done=received == len(calls))
            for task in tasks:
                task.cancel()

    async def aexecute_batch(
        self, calls: Sequence[ToolCall], *, cancel: CancellationToken | None = None
    ) -> tuple[ToolResult, ...]:
        results: dict[int, ToolResult] = {}
        async with contextlib.aclosing(self.aiter_batch(calls, cancel=cancel)) as each:  # type: ignore[type-var]
            async for index, result in each:
                results[index] = result
        return tuple(results[i] for i in range(len(calls)))

    def close(self) -> None:
        # The ready interpreter is the process's, for the next run with these settings.
        if self.close_inner:
            self.inner.close()


def _linked(cancel: CancellationToken | None) -> CancellationToken:
    """A batch's own token, fired with the run's (and when the batch is left early)."""
    stop = CancellationToken()
    if cancel is not None:
        cancel.add_callback(stop.cancel)
    return stop


def _unlink(cancel: CancellationToken | None, stop: CancellationToken, *, done: bool) -> None:
    if cancel is not None:
        cancel.remove_callback(stop.cancel)
    if not done:  # left early: the programs still running are stopped
        stop.cancel()


def _on_loop(inner: AbstractToolExecutor) -> CallRunner:
    """Runs a program's calls on the running event loop (async tools and MCP sessions live
    there), from the program's threads."""
    loop = asyncio.get_running_loop()

    def run(call: ToolCall) -> ToolResult:
        return asyncio.run_coroutine_threadsafe(inner.aexecute(call), loop).result()

    return run
