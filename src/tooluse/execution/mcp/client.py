"""The MCP client: :class:`MCPToolExecutor` (one server) and :class:`MCPToolset` (several).

See :mod:`tooluse.execution.mcp` for what it guarantees.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from tooluse.errors import MCPError, ToolArgumentError, ToolDefinitionError, ToolNotFoundError
from tooluse.execution.mcp.config import MCPServerConfig, load_mcp_servers
from tooluse.execution.mcp.contract import MCPExecutorBase
from tooluse.execution.mcp.process import ServerProcess
from tooluse.execution.mcp.resources import MCPResources
from tooluse.execution.mcp.schema import (
    check_advertised_schema,
    check_arguments,
    make_tool_function,
)
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["MCPServerConfig", "MCPToolExecutor", "MCPToolset", "load_mcp_servers"]

logger = logging.getLogger("tooluse.mcp")

_STDERR_TAIL = 2000


class _Connection:
    """One live SDK client, owned by a background task.

    The SDK's client must be entered and exited in the same task; owning it in a task of its own
    lets calls come from any task and lets a broken connection be replaced at any time.
    """

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.client: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.process = ServerProcess()
        # A real file: the server writes its stderr there directly, and startup errors quote it.
        self.errlog: TextIO = tempfile.TemporaryFile(  # noqa: SIM115 - closed in close()
            "w+", encoding="utf-8", errors="replace"
        )
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        try:
            # Bytes from the end only: a chatty server may have written megabytes of logs.
            with open(self.errlog.fileno(), "rb", closefd=False) as raw:
                size = raw.seek(0, 2)
                raw.seek(max(0, size - 4 * _STDERR_TAIL))
                text = raw.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        return text[-_STDERR_TAIL:].strip()

    @property
    def alive(self) -> bool:
        if self._task is None or self._task.done() or self.client is None:
            return False
        from tooluse.execution.mcp import sdk as mcp_sdk

        return not mcp_sdk.session_closed(self.client)

    async def open(self) -> None:
        """Start the server (or reach the URL) and finish the handshake; raises MCPError."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        self.loop = asyncio.get_running_loop()
        config = self.config
        try:
            client = mcp_sdk.open_client(
                server=config.server,
                command=config.command,
                args=config.args,
                env=self.process.environment(dict(config.env or {}))
                if config.command is not None
                else None,
                cwd=config.cwd,
                url=config.url,
                headers=dict(config.headers) if config.headers else None,
                timeout=config.timeout,
                errlog=self.errlog,
                max_reply_bytes=config.max_reply_bytes,
            )
        except Exception as exc:
            error = self._start_error(exc)
            self._release_stderr()
            raise error from exc
        self._task = asyncio.get_running_loop().create_task(self._own(client))
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            done, _ = await asyncio.wait(
                {ready, self._task},
                timeout=config.startup_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            # The caller gave up (a loop timeout, Ctrl-C): stop the half-started server too.
            self.process.kill()
            ready.cancel()
            self._task.cancel()
            self._task.add_done_callback(lambda _task: self._release_stderr())
            raise
        if ready in done and not self._task.done():
            return
        ready.cancel()
        if self._task in done:
            failure = self._task.exception() or RuntimeError("the connection ended during startup")
            error = self._start_error(failure)
            await self.close()
            raise error from failure
        timeout = TimeoutError(f"no handshake within {config.startup_timeout:g}s")
        # A server stuck in its handshake gets no grace period: kill it now, then wind down.
        self.process.kill()
        await self.close(keep_stderr=True)  # stop the process first: its stderr is then complete
        error = self._start_error(timeout)
        self._release_stderr()
        raise error

    async def _own(self, client: Any) -> None:
        async with client:
            self.client = client
            self._ready.set()
            await self._stop.wait()

    def _start_error(self, exc: BaseException) -> MCPError:
        leaf = _leaf_exception(exc)
        if isinstance(leaf, FileNotFoundError):
            reason = f"command not found: {self.config.command!r}"
        else:
            reason = f"{type(leaf).__name__}: {leaf}"
        message = f"MCP server {self.config.label!r} failed to start: {reason}"
        stderr = self.stderr_tail()
        if stderr:
            message += f"\n--- server stderr ---\n{stderr}"
        return MCPError(message)

    def _release_stderr(self) -> None:
        with contextlib.suppress(OSError):
            self.errlog.close()

    async def close(self, *, keep_stderr: bool = False) -> None:
        """Stop the server; never raises (a broken connection is closed as best it can be)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            if not task.done() and not self._ready.is_set():
                task.cancel()  # still in the handshake: there is no session to end politely
            # The SDK bounds its own shutdown (stdin close, SIGTERM, SIGKILL: ~6 s at most);
            # asyncio.wait neither raises the task's error nor cancels it on our cancellation.
            await asyncio.wait({task}, timeout=15)
            if not task.done():
                task.cancel()
            elif not task.cancelled():
                task.exception()  # retrieved: a failed connection is reported elsewhere
        self.client = None
        if not keep_stderr:
            self._release_stderr()


def _coded(message: str, cause: Any, **metadata: Any) -> MCPError:
    """An MCPError whose failure result carries ``metadata`` and the SDK error's JSON-RPC
    code as ``error_code`` (for callers, and for traces)."""
    error = MCPError(message)
    error.mcp_metadata = {**metadata, "error_code": cause.code}  # type: ignore[attr-defined]
    return error


def _leaf_exception(exc: BaseException) -> BaseException:
    """The first non-group exception inside (nested) exception groups."""
    # Duck-typed: BaseExceptionGroup is a builtin only from Python 3.11.
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


class MCPToolExecutor(MCPResources, MCPExecutorBase):
    """Calls the tools of one MCP server; an async context manager.

    The tool list is fetched once and cached; :meth:`refresh_tools` fetches it again. Tools whose
    advertised input schema is not valid JSON Schema are left out of :meth:`list_tools` and
    recorded in :attr:`rejected_tools` (name -> reason); calls to them fail with that reason.
    """

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.rejected_tools: dict[str, str] = {}
        self._malformed: dict[str, str] = {}
        self._connection: _Connection | None = None
        self._opening: _Connection | None = None
        self._connect_lock: asyncio.Lock | None = None
        self._tools: tuple[ToolDefinition, ...] | None = None
        self._by_name: dict[str, ToolDefinition] = {}
        self._restarts = 0
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> MCPToolExecutor:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def connect(self) -> None:
        """Start the server (if not running) and finish the handshake; raises MCPError."""
        self._closed = False
        await self._ensure_connection()

    async def aclose(self) -> None:
        """Stop the server process (or end the HTTP session)."""
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    @property
    def restarts(self) -> int:
        """How many times a broken connection was replaced."""
        return self._restarts

    @property
    def server_stderr(self) -> str:
        """The tail of what the current server process wrote to stderr (stdio only)."""
        return self._connection.stderr_tail() if self._connection is not None else ""

    @property
    def protocol_version(self) -> str | None:
        """The negotiated MCP protocol version, once connected."""
        connection = self._connection
        if connection is None or connection.client is None:
            return None
        return str(connection.client.protocol_version)

    async def _ensure_connection(self) -> _Connection:
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            connection = self._connection
            if connection is not None and connection.alive:
                return connection
            if connection is not None:
                logger.info("MCP server %r is gone; restarting it", self.config.label)
                self._connection = None
                await connection.close()
                self._restarts += 1
            fresh = _Connection(self.config)
            self._opening = fresh
            try:
                await fresh.open()
            finally:
                self._opening = None
            self._connection = fresh
            return fresh

    def kill_servers(self) -> None:
        """Kill the server process now, from any thread (Ctrl-C: nothing may be left behind).

        The connection still has to be closed (:meth:`aclose`); that is quick afterwards.
        """
        for connection in (self._connection, self._opening):
            if connection is not None:
                connection.process.kill()

    # -- tools -------------------------------------------------------------------------------

    async def list_tools(self, *, refresh: bool = False) -> tuple[ToolDefinition, ...]:
        """The server's tools as ToolDefinitions (cached; ``refresh=True`` asks again)."""
        if self._tools is None or refresh:
            await self.refresh_tools()
        assert self._tools is not None
        return self._tools

    async def refresh_tools(self) -> tuple[ToolDefinition, ...]:
        """Fetch the tool list from the server again and replace the cache."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        connection = await self._ensure_connection()
        try:
            advertised = await self._fetch_all_tools(connection)
        except asyncio.TimeoutError as exc:
            raise MCPError(
                f"MCP server {self.config.label!r} did not list its tools within "
                f"{self.config.timeout:g}s"
            ) from exc
        except mcp_sdk.SDKError as exc:
            if not mcp_sdk.connection_lost(exc, connection.client):
                raise MCPError(
                    f"MCP server {self.config.label!r} could not list tools: {exc.message}"
                ) from exc
            # Listing is safe to repeat: restart a server that died while idle and ask again.
            connection = await self._ensure_connection()
            advertised = await self._fetch_all_tools(connection)
        tools: list[ToolDefinition] = []
        rejected = {n: why for n, why in self._malformed.items() if self.config.wants_tool(n)}
        for tool in advertised:
            if not self.config.wants_tool(tool.name):
                continue
            problem = check_advertised_schema(tool.input_schema)
            if problem is not None:
                rejected[tool.name] = problem
                continue
            try:
                definition = mcp_sdk.tool_definition_from_mcp(tool, prefix=self.config.tool_prefix)
            except ToolDefinitionError as exc:
                rejected[tool.name] = str(exc)[:500]
                continue
            except (ValueError, RecursionError) as exc:
                rejected[tool.name] = f"{type(exc).__name__}: {exc}"[:500]
                continue
            if any(known.name == definition.name for known in tools):
                rejected[tool.name] = f"its name becomes {definition.name!r}, which is taken"
                continue
            function = make_tool_function(self, definition.name)
            tools.append(dataclasses.replace(definition, function=function))
        for name, problem in rejected.items():
            logger.warning("MCP server %r: tool %r skipped, %s", self.config.label, name, problem)
        self._tools = tuple(tools)
        self._by_name = {tool.name: tool for tool in tools}
        self.rejected_tools = rejected
        return self._tools

    async def _fetch_all_tools(self, connection: _Connection) -> list[Any]:
        """Every advertised tool; malformed entries go to ``self._malformed`` one by one."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        tools: list[Any] = []
        self._malformed = {}
        cursor: str | None = None
        for _ in range(1000):  # a server that pages forever must not hang us
            try:
                page, malformed, cursor = await asyncio.wait_for(
                    mcp_sdk.list_tools_page(connection.client, cursor, self.config.timeout),
                    timeout=self.config.timeout,
                )
            except ValueError as exc:
                raise MCPError(
                    f"MCP server {self.config.label!r} sent a malformed tool list: {exc}"
                ) from exc
            tools.extend(page)
            self._malformed.update(malformed)
            if cursor is None:
                break
        return tools

    def _strip_prefix(self, name: str) -> str | None:
        prefix = self.config.tool_prefix
        if prefix and not name.startswith(prefix):
            return None
        return name[len(prefix) :]

    # -- calls -------------------------------------------------------------------------------

    async def execute_async(
        self, call: ToolCall, *, timeout: float | None = None, validate: bool = True
    ) -> ToolResult:
        """Run one call on the server; always returns exactly one ToolResult for ``call.id``.

        ``timeout`` overrides the config's per-call timeout; ``validate=False`` skips the
        argument check (for callers that validated already, like the tool loop). Traced when
        the program traces (:mod:`tooluse.telemetry`).
        """
        # Looked up without importing: a program that never traces never loads OpenTelemetry.
        telemetry = sys.modules.get("tooluse.telemetry")
        if telemetry is None:
            return await self._answer(call, timeout, validate)
        result: ToolResult = await telemetry.mcp_tool_call(
            call,
            self._remote_name(call.name),
            self._trace_attributes,
            lambda: self._answer(call, timeout, validate),
        )
        return result

    def _remote_name(self, name: str) -> str:
        definition = self._by_name.get(name)
        if definition is not None:
            return str(definition.metadata.get("mcp_name", name))
        return self._strip_prefix(name) or name

    def _trace_attributes(self) -> dict[str, Any]:
        attributes = self.config.trace_attributes()
        version = self.protocol_version
        if version:
            attributes["mcp.protocol.version"] = version
        return attributes

    async def _answer(self, call: ToolCall, timeout: float | None, validate: bool) -> ToolResult:
        """One call's result, whatever happened."""
        try:
            return await self._execute(call, timeout, validate)
        except MCPError as exc:
            metadata = {"source": "mcp", **getattr(exc, "mcp_metadata", {})}
            return ToolResult.failure(call.id, call.name, str(exc), **metadata)
        except (ToolArgumentError, ToolNotFoundError) as exc:
            return ToolResult.failure(call.id, call.name, exc, source="mcp")
        except Exception as exc:  # a transport fault the SDK let through: still one result
            logger.warning("MCP call %r failed unexpectedly", call.name, exc_info=True)
            text = f"the MCP call failed: {type(exc).__name__}: {exc}"
            return ToolResult.failure(call.id, call.name, text, source="mcp")

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> ToolResult:
        """Call a tool by its (prefixed) name; a shortcut for :meth:`execute_async`."""
        return await self.execute_async(
            ToolCall(name=name, arguments=dict(arguments or {})), timeout=timeout
        )

    async def _execute(self, call: ToolCall, timeout: float | None, validate: bool) -> ToolResult:
        from tooluse.execution.mcp import sdk as mcp_sdk

        if self._closed:
            raise MCPError(f"the MCP executor for {self.config.label!r} is closed")
        current = self._connection
        if current is not None and current.loop is not asyncio.get_running_loop():
            raise MCPError(
                f"MCP tool {call.name!r} was called from another event loop than the one its "
                "server connection lives in; from synchronous code use SyncMCPToolExecutor"
            )
        definition = await self._definition_for(call.name)
        connection = await self._ensure_connection()
        raw = call.raw_arguments
        if raw is not None and not call.arguments and raw.strip() not in ("", "null", "{}"):
            raise ToolArgumentError(
                f"arguments for {call.name} are not a JSON object",
                tool_name=call.name,
                model_message=f"arguments must be a JSON object, got: {raw[:200]}",
            )
        arguments = check_arguments(definition, call.arguments) if validate else call.arguments
        remote_name = str(definition.metadata.get("mcp_name", call.name))
        seconds = timeout if timeout is not None else self.config.timeout
        try:
            result = await connection.client.call_tool(
                remote_name, arguments, read_timeout_seconds=seconds
            )
        except mcp_sdk.SDKError as exc:
            if exc.code == mcp_sdk.REQUEST_TIMEOUT:
                raise _coded(f"tool {call.name!r} timed out after {seconds:g}s", exc) from exc
            if mcp_sdk.connection_lost(exc, connection.client):
                message = (
                    f"the MCP server closed the connection during {call.name!r} "
                    "(it is restarted on the next call)"
                )
                stderr = connection.stderr_tail()[-1000:]
                raise _coded(message, exc, server_stderr=stderr) from exc
            message = (
                f"MCP server {self.config.label!r} answered {call.name!r} with an error: "
                f"{exc.message}"
            )
            raise _coded(message, exc) from exc
        except (RuntimeError, ValueError) as exc:
            # pydantic's ValidationError is a ValueError: the reply did not match the protocol;
            # RuntimeError: structured content that contradicts the tool's output schema.
            raise MCPError(f"MCP server sent a malformed result for {call.name!r}: {exc}") from exc
        return mcp_sdk.tool_result_from_mcp(
            call.id, call.name, result, max_output_chars=self.config.max_output_chars
        )

    async def _definition_for(self, name: str) -> ToolDefinition:
        if self._tools is None:
            await self.refresh_tools()
        definition = self._by_name.get(name)
        if definition is not None:
            return definition
        remote = self._strip_prefix(name)
        if remote is not None and remote in self.rejected_tools:
            raise MCPError(
                f"tool {name!r} cannot be called: the server advertises an invalid input schema "
                f"({self.rejected_tools[remote]})"
            )
        # The server may have added tools since the list was cached.
        await self.refresh_tools()
        definition = self._by_name.get(name)
        if definition is None:
            raise ToolNotFoundError(name, sorted(self._by_name))
        return definition


@dataclass
class _Member:
    executor: MCPToolExecutor
    names: set[str] = field(default_factory=set)


class MCPToolset(MCPExecutorBase):
    """Several MCP servers used together; an async context manager.

    Servers start concurrently. Tool names must be unique across servers (use
    ``MCPServerConfig.tool_prefix``); a clash raises :class:`ToolDefinitionError` naming both.
    """

    def __init__(self, configs: Iterable[MCPServerConfig]) -> None:
        self._members = [_Member(MCPToolExecutor(config)) for config in configs]
        if not self._members:
            raise ValueError("MCPToolset needs at least one MCPServerConfig")
        self._route: dict[str, _Member] = {}
        self._tools: tuple[ToolDefinition, ...] | None = None

    @classmethod
    def from_config(
        cls,
        source: Mapping[str, Any] | str | Path,
        *,
        prefix_with_name: bool = True,
        timeout: float | None = None,
    ) -> MCPToolset:
        """A toolset from ``mcpServers`` JSON (mapping, text or file; see ``load_mcp_servers``).

        Tools are prefixed with ``<server name>_`` unless ``prefix_with_name=False``.
        """
        return cls(load_mcp_servers(source, prefix_with_name=prefix_with_name, timeout=timeout))

    @property
    def executors(self) -> tuple[MCPToolExecutor, ...]:
        """The per-server executors, in the order the configs were given."""
        return tuple(member.executor for member in self._members)

    async def __aenter__(self) -> MCPToolset:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def connect(self) -> None:
        """Start every server; if one fails, the others are stopped and its error is raised."""
        outcomes = await asyncio.gather(
            *(member.executor.connect() for member in self._members), return_exceptions=True
        )
        failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if failures:
            await self.aclose()
            raise failures[0]

    def kill_servers(self) -> None:
        """Kill every server process now, from any thread (see MCPToolExecutor.kill_servers)."""
        for member in self._members:
            member.executor.kill_servers()

    async def aclose(self) -> None:
        """Stop every server."""
        await asyncio.gather(*(member.executor.aclose() for member in self._members))

    async def list_tools(self, *, refresh: bool = False) -> tuple[ToolDefinition, ...]:
        """Every server's tools, in config order (cached; ``refresh=True`` asks again)."""
        if self._tools is not None and not refresh:
            return self._tools
        lists = await asyncio.gather(
            *(member.executor.list_tools(refresh=refresh) for member in self._members)
        )
        route: dict[str, _Member] = {}
        tools: list[ToolDefinition] = []
        for member, definitions in zip(self._members, lists, strict=True):
            member.names = {definition.name for definition in definitions}
            for definition in definitions:
                other = route.get(definition.name)
                if other is not None:
                    raise ToolDefinitionError(
                        f"tool {definition.name!r} is offered by both "
                        f"{other.executor.config.label!r} and {member.executor.config.label!r}; "
                        "give one of them a tool_prefix"
                    )
                route[definition.name] = member
                tools.append(definition)
        self._route = route
        self._tools = tuple(tools)
        return self._tools

    async def refresh_tools(self) -> tuple[ToolDefinition, ...]:
        """Fetch every server's tool list again."""
        return await self.list_tools(refresh=True)

    async def execute_async(
        self, call: ToolCall, *, timeout: float | None = None, validate: bool = True
    ) -> ToolResult:
        """Route one call to the server that offers the tool."""
        if self._tools is None:
            try:
                await self.list_tools()
            except (MCPError, ToolDefinitionError) as exc:
                return ToolResult.failure(call.id, call.name, exc, source="mcp")
        member = self._route.get(call.name)
        if member is None:
            return ToolResult.failure(
                call.id, call.name, ToolNotFoundError(call.name, sorted(self._route)), source="mcp"
            )
        return await member.executor.execute_async(call, timeout=timeout, validate=validate)
