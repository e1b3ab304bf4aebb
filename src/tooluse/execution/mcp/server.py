"""Serve tooluse tools as an MCP server (stdio or streamable HTTP), for any MCP client.

::

    server = MCPToolServer([get_weather, add], name="my-tools")
    server.run()                                  # stdio
    server.run(transport="http", port=8765)       # http://127.0.0.1:8765/mcp

Calls are validated and run by tooluse's own :class:`~tooluse.execution.local.AsyncToolExecutor`
(so argument checking, timeouts and error texts match the tool loop); a failed call is
answered with ``isError: true`` and the error text, an unknown tool with the JSON-RPC
"invalid params" error. ``tooluse mcp serve module.py`` builds one from a module's tools.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from tooluse.errors import ToolDefinitionError
from tooluse.execution.base import ToolsArg
from tooluse.execution.local import AsyncToolExecutor
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["MCPToolServer", "load_module_tools"]


class MCPToolServer:
    """tooluse tools behind the MCP protocol.

    ``tools`` is anything the tool loop accepts (functions, ``@tool`` objects, ToolDefinitions
    with a ``function``, or ``{name: function}``); ``timeout`` bounds each call in seconds.
    """

    def __init__(
        self,
        tools: ToolsArg,
        *,
        name: str = "tooluse",
        version: str = "",
        timeout: float | None = 60.0,
    ) -> None:
        self.name = name
        self.version = version
        self._executor = AsyncToolExecutor(tools, timeout=timeout)
        self.definitions: tuple[ToolDefinition, ...] = tuple(self._executor.definitions)
        if not self.definitions:
            raise ToolDefinitionError("an MCP server needs at least one tool")

    async def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call exactly as the tool loop would; always one ToolResult."""
        return await self._executor.execute_async(ToolCall(name=name, arguments=arguments))

    def lowlevel_server(self) -> Any:
        """The SDK ``Server`` object (for mounting in another ASGI app, or in-process tests)."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        return mcp_sdk.build_server(
            self.name, list(self.definitions), self.run_tool, version=self.version
        )

    async def serve_stdio(self) -> None:
        """Serve over this process's stdin/stdout until the client disconnects."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        await mcp_sdk.serve_stdio(self.lowlevel_server())

    async def serve_http(
        self, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp"
    ) -> None:
        """Serve streamable HTTP at ``http://host:port/path`` until cancelled."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        await mcp_sdk.serve_http(self.lowlevel_server(), host=host, port=port, path=path)

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


def load_module_tools(target: str) -> ToolsArg:
    """The tools a module offers, for serving.

    In order of preference: the module's ``TOOLS`` (or ``__tools__``) sequence or mapping;
    else its ``@tool``-decorated objects and ToolDefinitions; else the public functions
    defined in the module itself (not imported ones).
    """
    module = _import_module(target)
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
    functions = [
        value
        for value in public.values()
        if inspect.isfunction(value) and value.__module__ == module.__name__
    ]
    if not functions:
        raise ToolDefinitionError(
            f"{target} defines no tools (no @tool objects, TOOLS or functions)"
        )
    return functions
