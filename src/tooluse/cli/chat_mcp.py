"""``tooluse chat --mcp FILE``: the MCP servers' tools in the chat, and their questions asked
on the terminal.

A server may ask the user for input (elicitation: a small form, or a URL to open), ask to use
the chat's model (sampling: allowed only when the user says yes) and report progress. With no
terminal to ask on (input piped in), questions are declined and sampling refused, each with a
line saying so.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tooluse.execution.mcp import SyncMCPToolExecutor
    from tooluse.providers.base import Backend
    from tooluse.tools.definition import ToolDefinition

__all__ = ["TerminalAsker", "open_mcp_servers"]

_TRUE = {"y", "yes", "true", "1"}
_FALSE = {"n", "no", "false", "0"}


class TerminalAsker:
    """Answers servers' questions on the terminal (the handlers of the chat's MCP client).

    The handlers run in worker threads while the chat waits for a tool result; one lock keeps
    two questions from being asked at once.
    """

    def __init__(self, console: Any, interactive: bool) -> None:
        self.console = console
        self.interactive = interactive
        self._lock = threading.Lock()

    def _say(self, text: str) -> None:
        self.console.print(text, markup=True, highlight=False)

    def _read(self, prompt: str) -> str | None:
        """One answer line, or ``None`` when the user gave none (end of input, Ctrl-C)."""
        try:
            return input(prompt)
        except (EOFError, KeyboardInterrupt):
            self.console.print()
            return None

    def elicit(self, request: Any) -> Any:
        """A server's question (see :class:`~tooluse.execution.mcp.ElicitationRequest`)."""
        from tooluse.execution.mcp import ElicitationResponse

        with self._lock:
            self._say(f"  [cyan]? {request.server} asks:[/] {_escape(request.message)}")
            if not self.interactive:
                self._say("  [yellow]declined: there is no terminal to answer on[/]")
                return ElicitationResponse.decline()
            if request.mode == "url":
                self._say(f"  open this address to go on: {_escape(request.url or '')}")
                answer = self._read("  done / going there? [y/N] ")
                if answer is None:
                    return ElicitationResponse.cancel()
                agreed = answer.strip().lower() in _TRUE
                return ElicitationResponse.accept() if agreed else ElicitationResponse.decline()
            answer = self._read("  answer it? [Y/n] ")
            if answer is None:
                return ElicitationResponse.cancel()
            if answer.strip().lower() in _FALSE:
                return ElicitationResponse.decline()
            content = self._fill_form(request.schema)
            if content is None:
                return ElicitationResponse.cancel()
            return ElicitationResponse.accept(content)

    def _fill_form(self, schema: Mapping[str, Any]) -> dict[str, Any] | None:
        """Ask each field of a flat form schema until its answer reads; ``None``: cancelled."""
        required = set(schema.get("required", ()))
        content: dict[str, Any] = {}
        for name, field in dict(schema.get("properties", {})).items():
            while True:
                answer = self._read(f"  {_field_prompt(name, field, name in required)}: ")
                if answer is None:
                    return None
                text = answer.strip()
                if not text:
                    if "default" in field:
                        content[name] = field["default"]
                    if "default" in field or name not in required:
                        break
                    self._say("  [red]an answer is needed[/]")
                    continue
                value, problem = read_field(field, text)
                if problem is None:
                    content[name] = value
                    break
                self._say(f"  [red]{_escape(problem)}[/]")
        return content

    def allow_sampling(self, request: Any) -> bool:
        """Whether the server may use the chat's model for this request (the user decides)."""
        with self._lock:
            asked = request.messages[-1].content if request.messages else ""
            short = asked if len(asked) <= 200 else asked[:197] + "..."
            self._say(
                f"  [cyan]? {request.server} wants to use the model[/] "
                f"(up to {request.max_tokens} tokens): {_escape(short)}"
            )
            if not self.interactive:
                self._say("  [yellow]refused: there is no terminal to ask on[/]")
                return False
            answer = self._read("  allow it? [y/N] ")
            return answer is not None and answer.strip().lower() in _TRUE

    def show_progress(self, report: Any) -> None:
        """One progress report of a running call."""
        total = f"/{report.total:g}" if report.total is not None else ""
        message = f" {report.message}" if report.message else ""
        self.console.print(
            f"  [dim]… {report.tool_name}: {report.progress:g}{total}{_escape(message)}[/]",
            markup=True,
            highlight=False,
        )


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _field_prompt(name: str, field: Mapping[str, Any], required: bool) -> str:
    kind = "one of " + "|".join(str(v) for v in field["enum"]) if "enum" in field else None
    kind = kind or str(field.get("type", "string"))
    title = field.get("title") or field.get("description")
    parts = [f"{name} ({kind}{'' if required else ', optional'})"]
    if title and title.lower() != name.lower():
        parts.append(f"- {title}")
    if "default" in field:
        parts.append(f"[{field['default']}]")
    return " ".join(parts)


def read_field(field: Mapping[str, Any], text: str) -> tuple[Any, str | None]:
    """One typed answer of a form field: ``(value, None)``, or ``(None, why it does not read)``."""
    if "enum" in field:
        options = [str(v) for v in field["enum"]]
        if text not in options:
            return None, f"answer one of: {', '.join(options)}"
        return field["enum"][options.index(text)], None
    kind = field.get("type", "string")
    if kind == "boolean":
        lowered = text.lower()
        if lowered in _TRUE | _FALSE:
            return lowered in _TRUE, None
        return None, "answer y or n"
    if kind in ("integer", "number"):
        try:
            return (int(text) if kind == "integer" else float(text)), None
        except ValueError:
            return None, f"not {'an integer' if kind == 'integer' else 'a number'}: {text}"
    return text, None


#: Seconds an MCP call may take in the chat (unless the file sets a server's ``timeout``): a
#: call may wait for the user to answer a server's question.
CHAT_MCP_TIMEOUT = 600.0


def open_mcp_servers(
    path: Path, console: Any, backend: Backend, max_tokens: int
) -> tuple[SyncMCPToolExecutor, list[ToolDefinition], dict[str, float]]:
    """The chat's MCP client (a started ``SyncMCPToolExecutor``), its tools and their time
    limits for the loop; a server that cannot start ends the chat with exit code 1."""
    import typer

    from tooluse.errors import MCPError, ToolDefinitionError
    from tooluse.execution.mcp import MCPHandlers, MCPSampling, SyncMCPToolExecutor
    from tooluse.execution.mcp.config import load_mcp_servers

    try:
        configs = load_mcp_servers(path, timeout=CHAT_MCP_TIMEOUT)
        if len(configs) > 1:
            configs = load_mcp_servers(path, prefix_with_name=True, timeout=CHAT_MCP_TIMEOUT)
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--mcp") from exc
    asker = TerminalAsker(console, sys.stdin.isatty())
    handlers = MCPHandlers(
        elicitation=asker.elicit,
        sampling=MCPSampling(backend=backend, allow=asker.allow_sampling, max_tokens=max_tokens),
        on_progress=asker.show_progress,
    )
    client = SyncMCPToolExecutor(configs if len(configs) > 1 else configs[0], handlers=handlers)
    try:
        client.connect()
        tools = list(client.list_tools())
    except (MCPError, ToolDefinitionError) as exc:
        client.close()
        console.print(f"[red]error:[/] {_escape(str(exc))}", markup=True, highlight=False)
        raise typer.Exit(1) from None
    # The loop's own limit must not end a call the server's timeout still allows.
    limit = max(config.timeout for config in configs) + 5.0
    return client, tools, {tool.name: limit for tool in tools}
