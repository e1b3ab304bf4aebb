"""`tooluse mcp ...`: list and call the tools of an MCP server, or serve tooluse tools over MCP.

::

    tooluse mcp list -- python -m mcp_server_time
    tooluse mcp call get_current_time --args '{"timezone": "UTC"}' -- python -m mcp_server_time
    tooluse mcp list --url http://127.0.0.1:8000/mcp
    tooluse mcp list --config mcp_servers.json          # the mcpServers JSON of MCP clients
    tooluse mcp serve my_tools.py [--http --port 8765]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

mcp_app = typer.Typer(
    name="mcp",
    help="Use tools from MCP servers, or serve tooluse tools as an MCP server.",
    no_args_is_help=True,
)

_CONFIG_HELP = "An mcpServers JSON file; with several servers, tools are prefixed <server>_."
_SERVER_HELP = (
    "The server command and its arguments, after `--` (e.g. -- python -m mcp_server_time)."
)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
    app.add_typer(mcp_app, name="mcp")


def _config(server: list[str] | None, url: str | None, config: str | None, timeout: float) -> Any:
    """One MCPServerConfig, or several from an ``mcpServers`` file (prefixed when several).

    Bad options end the command with one ``error:`` line and exit status 2.
    """
    from tooluse.execution.mcp import MCPServerConfig, load_mcp_servers

    if sum(map(bool, (server, url, config))) != 1:
        raise _fail("give exactly one of: a server command after `--`, --url, or --config", 2)
    if not timeout > 0:
        raise _fail(f"--timeout must be a positive number of seconds, got {timeout:g}", 2)
    if config:
        try:
            single = len(load_mcp_servers(Path(config))) == 1
            return load_mcp_servers(Path(config), prefix_with_name=not single, timeout=timeout)
        except (OSError, ValueError) as exc:
            raise _fail(f"--config {config}: {_one_line(exc)}", 2) from None
    try:
        if url:
            return MCPServerConfig(url=url, timeout=timeout, startup_timeout=timeout)
        assert server
        return MCPServerConfig(
            command=server[0], args=tuple(server[1:]), timeout=timeout, startup_timeout=timeout
        )
    except ValueError as exc:
        raise _fail(_one_line(exc).removeprefix("MCPServerConfig."), 2) from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` (no traceback) and return the Exit to raise."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def _interrupted() -> typer.Exit:
    # The servers were killed already (SyncMCPToolExecutor does that on Ctrl-C).
    return _fail("interrupted; the MCP server was stopped", 130)


@mcp_app.command("list")
def list_command(
    server: list[str] = typer.Argument(None, help=_SERVER_HELP),
    url: str = typer.Option(
        None, "--url", help="A streamable HTTP server URL instead of a command."
    ),
    config: str = typer.Option(None, "--config", help=_CONFIG_HELP),
    timeout: float = typer.Option(30.0, help="Seconds allowed for startup and for the listing."),
    as_json: bool = typer.Option(False, "--json", help="Print the tools as JSON."),
) -> None:
    """List the tools an MCP server offers."""
    from tooluse.errors import MCPError
    from tooluse.execution.mcp.sync import SyncMCPToolExecutor

    server_config = _config(server, url, config, timeout)
    try:
        with SyncMCPToolExecutor(server_config) as executor:
            tools = executor.list_tools()
            rejected = executor.rejected_tools
    except MCPError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _interrupted() from None
    if as_json:
        payload = [
            {
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.parameters_schema,
                "output_schema": tool.output_schema,
                "annotations": tool.annotations,
            }
            for tool in tools
        ]
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        _print_table(tools)
    for name, reason in rejected.items():
        typer.secho(f"error: skipped tool {name}: {reason}", err=True, fg=typer.colors.YELLOW)
    if rejected:  # the usable tools are listed, but the server is not all right
        raise typer.Exit(1)


def _print_table(tools: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("tool", "parameters", "description")
    for tool in tools:
        schema = tool.parameters_schema
        required = set(schema.get("required", ()))
        params = ", ".join(
            f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
            for name, spec in schema.get("properties", {}).items()
            if isinstance(spec, dict)
        )
        table.add_row(tool.name, params, (tool.description or "").strip().split("\n")[0])
    Console(soft_wrap=True).print(table)


@mcp_app.command("call")
def call_command(
    tool: str = typer.Argument(..., help="The tool to call."),
    server: list[str] = typer.Argument(None, help=_SERVER_HELP),
    args: str = typer.Option("{}", "--args", help="The arguments as a JSON object."),
    url: str = typer.Option(
        None, "--url", help="A streamable HTTP server URL instead of a command."
    ),
    config: str = typer.Option(None, "--config", help=_CONFIG_HELP),
    timeout: float = typer.Option(30.0, help="Seconds allowed for startup and for the call."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON."),
) -> None:
    """Call one tool of an MCP server and print its result (exit code 1 when it failed).

    A tool that requires a task (protocol 2025-11-25) runs as one, polled until it ends; a
    tool for which a task is optional runs as one when --timeout is over 60 seconds.
    """
    from tooluse.errors import MCPError
    from tooluse.execution.mcp.sync import SyncMCPToolExecutor
    from tooluse.messages import ToolCall

    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as exc:
        raise _fail(f"--args is not valid JSON: {exc}", 2) from None
    if not isinstance(arguments, dict):
        raise _fail("--args must be a JSON object", 2)
    server_config = _config(server, url, config, timeout)
    try:
        with SyncMCPToolExecutor(server_config) as executor:
            result = executor.execute(ToolCall(name=tool, arguments=arguments))
    except MCPError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _interrupted() from None
    if as_json:
        payload = {
            "tool": result.tool_name,
            "is_error": result.is_error,
            "output": result.output,
            "structured": result.structured,
        }
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
    elif result.is_error:
        typer.secho(result.output, err=True, fg=typer.colors.RED)
    else:
        typer.echo(result.output)
    if result.is_error:
        raise typer.Exit(1)


@mcp_app.command("serve")
def serve_command(
    target: str = typer.Argument(..., help="A Python file (or dotted module) defining tools."),
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
    host: str = typer.Option("127.0.0.1", help="HTTP host."),
    port: int = typer.Option(8000, help="HTTP port."),
    path: str = typer.Option("/mcp", help="HTTP endpoint path."),
    name: str = typer.Option(None, help="Server name (defaults to the module name)."),
    timeout: float = typer.Option(60.0, help="Seconds allowed for each call."),
    tasks: str = typer.Option(
        "optional",
        "--tasks",
        help="Whether clients (protocol 2025-11-25) may run the tools as tasks: "
        "optional, required or forbidden.",
    ),
) -> None:
    """Serve a module's tools, resources and prompts as an MCP server (stdio by default).

    The tools are the module's TOOLS list if it has one, else its @tool functions, else its
    public functions; the resources and prompts are its @mcp_resource and @mcp_prompt
    functions (or its RESOURCES and PROMPTS lists). A client may run a call as a task
    (tools/call with a task, then tasks/get, tasks/result, tasks/cancel) unless --tasks
    forbidden; with --tasks required it must.
    """
    from tooluse.errors import ToolDefinitionError
    from tooluse.execution.mcp.server import MCPToolServer, load_module_offer

    if not 0 < port < 65536:
        raise _fail(f"--port must be between 1 and 65535, got {port}", 2)
    if not timeout > 0:
        raise _fail(f"--timeout must be a positive number of seconds, got {timeout:g}", 2)
    if tasks not in ("optional", "required", "forbidden"):
        raise _fail(f"--tasks must be optional, required or forbidden, got {tasks!r}", 2)
    try:
        offer = load_module_offer(target)
        server = MCPToolServer(
            offer.tools,
            resources=offer.resources,
            prompts=offer.prompts,
            name=name or Path(target).stem,
            timeout=timeout,
            tasks=tasks,  # type: ignore[arg-type]  # checked above
        )
    except ToolDefinitionError as exc:
        raise _fail(_one_line(exc), 2) from None
    except Exception as exc:  # an invalid schema, a bad TOOLS entry...: the user's to fix
        raise _fail(f"cannot serve {target}: {type(exc).__name__}: {_one_line(exc)}", 2) from None
    if http:
        parts = f"{len(server.definitions)} tools"
        if server.resources or server.prompts:
            parts += f", {len(server.resources)} resources, {len(server.prompts)} prompts"
        typer.secho(f"serving {parts} at http://{host}:{port}{path}", err=True)
        server.run("http", host=host, port=port, path=path)
    else:
        server.run("stdio")
