"""Serve tooluse tools, resources and prompts as an MCP server (stdio or streamable HTTP).

::

    server = MCPToolServer([get_weather, add], name="my-tools", resources=[today])
    server.run()                                  # stdio
    server.run(transport="http", port=8765)       # http://127.0.0.1:8765/mcp

Calls are validated and run by tooluse's own :class:`~tooluse.execution.local.AsyncToolExecutor`
(so argument checking, timeouts and error texts match the tool loop); a failed call is
answered with ``isError: true`` and the error text, an unknown tool with the JSON-RPC
"invalid params" error. Resources and prompts are functions declared with
:func:`~tooluse.execution.mcp.served.mcp_resource` and
:func:`~tooluse.execution.mcp.served.mcp_prompt`. ``tooluse mcp serve module.py`` builds a
server from what a module declares (:func:`load_module_offer`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from tooluse.errors import ToolDefinitionError
from tooluse.execution.base import ToolsArg
from tooluse.execution.local import AsyncToolExecutor
from tooluse.execution.mcp.served import (
    ServedPrompt,
    ServedResource,
    TaskSupport,
    served_declaration,
    task_support_of,
)
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["MCPToolServer", "ModuleOffer", "load_module_offer", "load_module_tools"]


def _declared(values: Iterable[Any], kind: type, label: str) -> tuple[Any, ...]:
    """Resources (or prompts): :class:`ServedResource` objects or decorated functions."""
    found = []
    for value in values:
        declared = served_declaration(value)
        if not isinstance(declared, kind):
            raise ToolDefinitionError(
                f"{value!r} is not a served {label}: declare it with @mcp_{label}"
            )
        found.append(declared)
    keys = [getattr(item, "uri" if label == "resource" else "name") for item in found]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ToolDefinitionError(f"more than one {label} is served as {', '.join(repeated)}")
    return tuple(found)


class MCPToolServer:
    """tooluse tools (and resources and prompts) behind the MCP protocol.

    ``tools`` is anything the tool loop accepts (functions, ``@tool`` objects, ToolDefinitions
    with a ``function``, or ``{name: function}``); ``timeout`` bounds each call in seconds.
    ``resources`` and ``prompts`` are functions declared with ``@mcp_resource`` and
    ``@mcp_prompt`` (or :class:`ServedResource` / :class:`ServedPrompt` objects). ``tasks``
    says which tools a client of protocol 2025-11-25 may run as tasks (``optional``: every
    tool, by default; ``required``, ``forbidden``, or a mapping of tool names to these; see
    :mod:`~tooluse.execution.mcp.served_tasks`).
    """

    def __init__(  # noqa: PLR0913 - the server's parts and settings, all keyword-only
        self,
        tools: ToolsArg = (),
        *,
        resources: Sequence[Any] = (),
        prompts: Sequence[Any] = (),
        name: str = "tooluse",
        version: str = "",
        timeout: float | None = 60.0,
        tasks: TaskSupport | Mapping[str, TaskSupport] = "optional",
    ) -> None:
        self.name = name
        self.version = version
        self._executor = AsyncToolExecutor(tools, timeout=timeout)
        self.definitions: tuple[ToolDefinition, ...] = tuple(self._executor.definitions)
        try:
            self.task_support = task_support_of(tasks, [d.name for d in self.definitions])
        except ValueError as exc:
            raise ToolDefinitionError(str(exc)) from None
        self._served_tasks: Any = None
        self._subscriptions: Any = None
        self.resources: tuple[ServedResource, ...] = _declared(
            resources, ServedResource, "resource"
        )
        self.prompts: tuple[ServedPrompt, ...] = _declared(prompts, ServedPrompt, "prompt")
        if not (self.definitions or self.resources or self.prompts):
            raise ToolDefinitionError("an MCP server needs at least one tool, resource or prompt")

    async def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call exactly as the tool loop would; always one ToolResult."""
        return await self._executor.execute_async(ToolCall(name=name, arguments=arguments))

    def lowlevel_server(self) -> Any:
        """The SDK ``Server`` object (for mounting in another ASGI app, or in-process tests)."""
        from tooluse.execution.mcp import served_tools
        from tooluse.execution.mcp.served_handlers import ResourceSubscriptions, served_handlers
        from tooluse.execution.mcp.served_tasks import ServedTasks

        if self._subscriptions is None:  # one registry for every connection
            self._subscriptions = ResourceSubscriptions()
        server = served_tools.build_server(
            self.name,
            list(self.definitions),
            self.run_tool,
            version=self.version,
            handlers=served_handlers(self.resources, self.prompts, self._subscriptions),
            task_support=self.task_support,
            subscriptions=self._subscriptions,
        )
        if self._served_tasks is None:  # one store for every connection (stateless HTTP too)
            wrapped = {d.name for d in self.definitions if served_tools.served_output_schema(d)[1]}
            declared = {d.name for d in self.definitions if d.output_schema is not None}

            def wire_result(name: str, result: ToolResult) -> dict[str, Any]:
                answer = served_tools.call_tool_result_from_output(
                    result, wrap=name in wrapped, declares_output=name in declared
                )
                return dict(answer.model_dump(by_alias=True, mode="json", exclude_none=True))

            self._served_tasks = ServedTasks(self.run_tool, wire_result, self.task_support)
        self._served_tasks.install(server)
        return server

    async def serve_stdio(self) -> None:
        """Serve over this process's stdin/stdout until the client disconnects."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        await mcp_sdk.serve_stdio(self.lowlevel_server())

    async def serve_http(
        self, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp"
    ) -> None:
        """Serve streamable HTTP at ``http://host:port/path`` until cancelled; each event stream
        can be resumed (:mod:`~tooluse.execution.mcp.event_store`)."""
        from tooluse.execution.mcp import sdk as mcp_sdk
        from tooluse.execution.mcp.event_store import MemoryEventStore

        server = self.lowlevel_server()
        store = MemoryEventStore()  # a client that lost its event stream resumes it
        await mcp_sdk.serve_http(server, host=host, port=port, path=path, event_store=store)

    def run(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
    ) -> None:
        """Serve until stopped (blocking)."""
        import anyio

        if transport == "stdio":
            anyio.run(self.serve_stdio)
        elif transport == "http":
            anyio.run(lambda: self.serve_http(host=host, port=port, path=path))
        else:
            raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")


def _import_module(target: str) -> ModuleType:
    """Import ``target``: a ``.py`` file path or a dotted module name."""
    path = Path(target)
    if target.endswith(".py") or path.exists():
        if not path.is_file():
            raise ToolDefinitionError(f"no such Python file: {target}")
        module_name = f"tooluse_served_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path.resolve())
        if spec is None or spec.loader is None:
            raise ToolDefinitionError(f"cannot import {target}")
        module = importlib.util.module_from_spec(spec)
        # The file's own folder comes first, so its sibling imports resolve as when run directly.
        sys.path.insert(0, str(path.resolve().parent))
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            raise ToolDefinitionError(f"cannot import {target}: {_import_problem(exc)}") from exc
        return module
    try:
        return importlib.import_module(target)
    except Exception as exc:
        raise ToolDefinitionError(f"cannot import {target}: {_import_problem(exc)}") from exc


def _import_problem(exc: Exception) -> str:
    """One line saying why a tools module failed to import (with the line of a syntax error)."""
    if isinstance(exc, SyntaxError):
        where = f"{Path(exc.filename or '?').name}, line {exc.lineno}"
        return f"SyntaxError: {exc.msg} ({where})"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]


def _is_declared_tool(value: Any) -> bool:
    """A ToolDefinition, a function decorated with ``@tool`` or an instance of a ``Tool`` class."""
    from tooluse.tools import Tool
    from tooluse.tools.normalise import TOOL_ATTRIBUTE

    if isinstance(value, (ToolDefinition, Tool)):
        return True
    return isinstance(getattr(value, TOOL_ATTRIBUTE, None), ToolDefinition)


@dataclass(frozen=True, kw_only=True)
class ModuleOffer:
    """What a module offers to serve: its tools, resources and prompts."""

    tools: ToolsArg
    resources: tuple[ServedResource, ...] = ()
    prompts: tuple[ServedPrompt, ...] = ()


def _module_tools(module: ModuleType) -> ToolsArg:
    """The module's ``TOOLS`` (or ``__tools__``); else its ``@tool`` objects and
    ToolDefinitions; else the public functions defined in it that serve no resource or prompt."""
    for attribute in ("TOOLS", "__tools__"):
        declared = getattr(module, attribute, None)
        if isinstance(declared, Mapping):
            return dict(declared)
        if isinstance(declared, Sequence) and not isinstance(declared, str):
            return list(declared)
    public = {name: value for name, value in vars(module).items() if not name.startswith("_")}
    decorated = [value for value in public.values() if _is_declared_tool(value)]
    if decorated:
        return decorated
    return [
        value
        for value in public.values()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and served_declaration(value) is None
    ]


def _module_served(module: ModuleType, attribute: str, kind: type) -> list[Any]:
    """The module's ``RESOURCES`` (or ``PROMPTS``) sequence, else its decorated functions."""
    listed = getattr(module, attribute, None)
    if isinstance(listed, Sequence) and not isinstance(listed, str):
        return list(listed)
    public = [value for name, value in vars(module).items() if not name.startswith("_")]
    return [value for value in public if isinstance(served_declaration(value), kind)]


def load_module_offer(target: str) -> ModuleOffer:
    """The tools, resources and prompts a module (a ``.py`` file or a dotted name) declares.

    Tools, in order of preference: the module's ``TOOLS`` (or ``__tools__``) sequence or
    mapping; else its ``@tool``-decorated objects and ToolDefinitions; else the public functions
    defined in the module itself (not imported ones, nor resources or prompts). Resources and
    prompts: its ``RESOURCES`` / ``PROMPTS`` sequences, else its functions decorated with
    ``@mcp_resource`` / ``@mcp_prompt``.
    """
    module = _import_module(target)
    offer = ModuleOffer(
        tools=_module_tools(module),
        resources=_declared(
            _module_served(module, "RESOURCES", ServedResource), ServedResource, "resource"
        ),
        prompts=_declared(_module_served(module, "PROMPTS", ServedPrompt), ServedPrompt, "prompt"),
    )
    if not (offer.tools or offer.resources or offer.prompts):
        raise ToolDefinitionError(
            f"{target} defines no tools, resources or prompts (no @tool objects, TOOLS, "
            "functions, @mcp_resource or @mcp_prompt)"
        )
    return offer


def load_module_tools(target: str) -> ToolsArg:
    """The tools a module offers, for serving (see :func:`load_module_offer`)."""
    tools = load_module_offer(target).tools
    if not tools:
        raise ToolDefinitionError(
            f"{target} defines no tools (no @tool objects, TOOLS or functions)"
        )
    return tools
