"""The MCP client: :class:`MCPToolExecutor` (one server) and :class:`MCPToolset` (several).

See :mod:`tooluse.execution.mcp` for what it guarantees.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from tooluse.errors import MCPError, ToolArgumentError, ToolDefinitionError, ToolNotFoundError
from tooluse.execution.mcp.config import MCPServerConfig, load_mcp_servers
from tooluse.execution.mcp.connection import Connection
from tooluse.execution.mcp.contract import MCPExecutorBase
from tooluse.execution.mcp.output_check import result_problem
from tooluse.execution.mcp.resources import MCPResources
from tooluse.execution.mcp.schema import (
    check_advertised_schema,
    check_arguments,
    make_tool_function,
)
from tooluse.execution.mcp.server_requests import MCPHandlers
from tooluse.execution.mcp.tasks import MCPTasks, ToolCallTask, wants_task
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["MCPServerConfig", "MCPToolExecutor", "MCPToolset", "load_mcp_servers"]

logger = logging.getLogger("tooluse.mcp")


def _coded(message: str, cause: Any, **metadata: Any) -> MCPError:
    """An MCPError whose failure result carries ``metadata`` and the SDK error's JSON-RPC
    code as ``error_code`` (for callers, and for traces)."""
    error = MCPError(message)
    error.mcp_metadata = {**metadata, "error_code": cause.code}  # type: ignore[attr-defined]
    return error


class MCPToolExecutor(MCPResources, MCPTasks, MCPExecutorBase):
    """Calls the tools of one MCP server; an async context manager.

    The tool list is fetched once and cached; :meth:`refresh_tools` fetches it again. Tools whose
    advertised input schema is not valid JSON Schema are left out of :meth:`list_tools` and
    recorded in :attr:`rejected_tools` (name -> reason); calls to them fail with that reason.

    ``handlers`` answer what the server asks of the client (sampling, elicitation, roots) and
    receive its progress reports; see :class:`MCPHandlers`.
    """

    def __init__(self, config: MCPServerConfig, *, handlers: MCPHandlers | None = None) -> None:
        self.config = config
        self.handlers = handlers
        self.rejected_tools: dict[str, str] = {}
        self._malformed: dict[str, str] = {}
        self._connection: Connection | None = None
        self._opening: Connection | None = None
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

    async def _ensure_connection(self) -> Connection:
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
            fresh = Connection(self.config, self.handlers)
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

    async def _fetch_all_tools(self, connection: Connection) -> list[Any]:
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
        the program traces (:mod:`tooluse.loop.telemetry`).
        """
        # Looked up without importing: a program that never traces never loads OpenTelemetry.
        telemetry = sys.modules.get("tooluse.loop.telemetry")
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
        seconds = timeout if timeout is not None else self.config.timeout
        task = self._as_task(connection, call, definition, arguments, seconds)
        try:
            if task is not None:
                result = await task.run()
            else:
                result = await connection.client.call_tool(
                    str(definition.metadata.get("mcp_name", call.name)),
                    arguments,
                    read_timeout_seconds=seconds,
                    progress_callback=self._progress(call),
                )
        except (mcp_sdk.SDKError, RuntimeError, ValueError) as exc:
            raise self._failure(exc, call, definition, connection, seconds, task) from exc
        answer = mcp_sdk.tool_result_from_mcp(
            call.id, call.name, result, max_output_chars=self.config.max_output_chars
        )
        if task is not None and task.task is not None:
            metadata = {**answer.metadata, "mcp_task_id": task.task.task_id}
            answer = dataclasses.replace(answer, metadata=metadata)
        return answer

    def _progress(self, call: ToolCall) -> Any:
        from tooluse.execution.mcp.server_answers import progress_callback

        return progress_callback(self.handlers, self.config.label, call)

    def _as_task(  # noqa: PLR0913 - the call and where it goes
        self,
        connection: Connection,
        call: ToolCall,
        definition: ToolDefinition,
        arguments: dict[str, Any],
        seconds: float,
    ) -> ToolCallTask | None:
        """The call as a task, when the tool and the server allow it and the rule of
        :mod:`~tooluse.execution.mcp.tasks` says so; ``None`` for a plain ``tools/call``."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        offered, can_cancel = mcp_sdk.server_task_support(connection.client)
        support = definition.metadata.get("mcp_task_support")
        threshold = self.config.task_threshold
        if not wants_task(support, offered=offered, seconds=seconds, threshold=threshold):
            return None
        return ToolCallTask(
            connection.client,
            str(definition.metadata.get("mcp_name", definition.name)),
            arguments,
            seconds=seconds,
            can_cancel=can_cancel,
            on_progress=self._progress(call),
        )

    def _failure(  # noqa: PLR0913 - what went wrong and with which call
        self,
        exc: Exception,
        call: ToolCall,
        definition: ToolDefinition,
        connection: Connection,
        seconds: float,
        task: ToolCallTask | None,
    ) -> MCPError:
        """The MCPError (becoming a failed result) for a call the SDK raised ``exc`` for."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        extra = {"mcp_task_id": task.task.task_id} if task is not None and task.task else {}
        if isinstance(exc, mcp_sdk.SDKError):
            if exc.code == mcp_sdk.REQUEST_TIMEOUT:
                return _coded(f"tool {call.name!r} timed out after {seconds:g}s", exc, **extra)
            if mcp_sdk.connection_lost(exc, connection.client):
                message = (
                    f"the MCP server closed the connection during {call.name!r} "
                    "(it is restarted on the next call)"
                )
                stderr = connection.stderr_tail()[-1000:]
                return _coded(message, exc, server_stderr=stderr, **extra)
            message = (
                f"MCP server {self.config.label!r} answered {call.name!r} with an error: "
                f"{exc.message}"
            )
            return _coded(message, exc, **extra)
        # pydantic's ValidationError is a ValueError: the reply did not match the protocol;
        # RuntimeError: the SDK's output-schema check, or a server that kept asking for input.
        text, metadata = result_problem(exc, call.name, definition)
        error = MCPError(text)
        error.mcp_metadata = {**metadata, **extra}  # type: ignore[attr-defined]
        return error

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
    ``handlers`` serve every server (each request names its server).
    """

    def __init__(
        self, configs: Iterable[MCPServerConfig], *, handlers: MCPHandlers | None = None
    ) -> None:
        self._members = [_Member(MCPToolExecutor(c, handlers=handlers)) for c in configs]
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
        handlers: MCPHandlers | None = None,
    ) -> MCPToolset:
        """A toolset from ``mcpServers`` JSON (mapping, text or file; see ``load_mcp_servers``).

        Tools are prefixed with ``<server name>_`` unless ``prefix_with_name=False``.
        """
        configs = load_mcp_servers(source, prefix_with_name=prefix_with_name, timeout=timeout)
        return cls(configs, handlers=handlers)

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
