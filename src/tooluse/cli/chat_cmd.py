"""``tooluse chat``: a terminal chat with a model that can call the tools of a Python file.

Text streams as it is generated; tool calls show as they start and finish; line editing and
history come from readline. Ctrl-C stops the current generation (the turn is dropped); Ctrl-C
or Ctrl-D at the prompt ends the chat. The exit code is 1 when every turn failed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from tooluse.execution.mcp import SyncMCPToolExecutor
    from tooluse.providers.base import Backend

STOP_REASONS = {
    "max_tool_iters": "the tool-round limit was reached (--max-tool-iters)",
    "repeated_calls": "the model repeated the same call",
    "cancelled": "cancelled",
    "terminal_tool": "a terminal tool ended the turn",
}


class TurnPrinter:
    """Prints one turn's loop events as they come: streamed text, calls and their results."""

    def __init__(self, console: Any, program_tool: str | None = None) -> None:
        self.console = console
        self.program_tool = program_tool
        self.programs: set[str] = set()
        self.streamed = ""
        self._open_line = False

    def __call__(self, event: Any) -> None:
        from tooluse.events import TextDelta
        from tooluse.loop import ModelTurnFinished, ToolExecutionFinished, ToolExecutionStarted
        from tooluse.loop.types import ProgramFinished, ProgramStarted

        if isinstance(event, TextDelta) and event.text:
            if not self._open_line:
                self.console.print("[bold magenta]assistant>[/] ", end="")
                self._open_line = True
            self.console.print(event.text, end="", markup=False, highlight=False)
            self.streamed += event.text
        elif isinstance(event, ModelTurnFinished):
            self.end_line()
        elif isinstance(event, ProgramStarted):
            self.end_line()
            self.program(event.program_id, event.code, event.runner)
        elif isinstance(event, ProgramFinished) and event.runner != "tooluse":
            self.show_result(event.output, event.is_error, f"← {event.runner}'s program", "  ")
        elif isinstance(event, ToolExecutionStarted):
            self.end_line()
            self.started(event.call)
        elif isinstance(event, ToolExecutionFinished):
            indent = "    " if event.call.caller else "  "
            self.show_result(event.result.output, event.result.is_error, "← result", indent)

    def show_result(self, output: str, failed: bool, label: str, indent: str) -> None:
        style = "red" if failed else "green"
        short = output if len(output) <= 200 else output[:197] + "..."
        self.console.print(f"{indent}[{style}]{label}[/] ", end="")
        self.console.print(short, markup=False, highlight=False)

    def program(self, program_id: str, code: str, runner: str) -> None:
        """A program starts (tooluse's or the provider's): shown whole the first time."""
        where = "" if runner == "tooluse" else f" (run by {runner})"
        if program_id in self.programs:  # resumed after a decision
            self.console.print(f"  [cyan]→ program[/]{where} goes on")
            return
        self.programs.add(program_id)
        self.console.print(f"  [cyan]→ program[/]{where}", markup=True)
        for line in code.strip("\n").splitlines():
            self.console.print(f"    [dim]{line}[/]", markup=True, highlight=False)

    def started(self, call: Any) -> None:
        """A call starts; a call a program made is indented under the program."""
        if call.name == self.program_tool:
            return  # the program was shown as it started
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        if call.caller:
            self.console.print(f"    [cyan]↳ call[/] {call.name}({args})", markup=True)
        else:
            self.console.print(f"  [cyan]→ call[/] {call.name}({args})", markup=True)

    def end_line(self) -> None:
        if self._open_line:
            self.console.print()
            self._open_line = False


def _line_editing(history_file: Path | None) -> None:
    """Arrow keys, editing and history for ``input()`` (readline, where Python has it)."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        return
    if history_file is not None:
        history_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            readline.read_history_file(history_file)
        except OSError:
            pass
        import atexit

        readline.set_history_length(1000)
        atexit.register(readline.write_history_file, history_file)


def _read_message(interactive: bool, console: Any) -> str | None:
    """The next message, or ``None`` to quit (end of input, Ctrl-C, an empty line, exit)."""
    try:
        line = input("you> ") if interactive else sys.stdin.readline()
    except (EOFError, KeyboardInterrupt):
        console.print()
        return None
    if not interactive and not line:
        return None
    text = line.strip()
    return None if not text or text in ("exit", "quit") else text


def ask_decisions(console: Any, interactive: bool, calls: Any) -> dict[str, Any]:
    """Ask about each call that waits for approval: y (run it), n (deny it) or e (edit its
    arguments as JSON); no answer denies."""
    import json

    from tooluse.loop.run_state import Approve, Deny, Edit

    def read(prompt: str) -> str:
        if interactive:
            return input(prompt)
        console.print(prompt, end="", markup=False, highlight=False)
        return sys.stdin.readline()

    decisions: dict[str, Any] = {}
    for call in calls:
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        made_by = " (called by the program)" if call.caller else ""
        while call.id not in decisions:
            try:
                answer = read(f"approve {call.name}({arguments}){made_by}? [y/n/e] ")
                answer = answer.strip().lower()
            except (EOFError, KeyboardInterrupt):
                answer = "n"
            if answer in ("y", "yes"):
                decisions[call.id] = Approve()
            elif answer in ("n", "no", ""):
                decisions[call.id] = Deny(reason="the user said no")
                console.print(f"  [red]← denied[/] {call.name}: the user said no")
            elif answer in ("e", "edit"):
                try:
                    edited = json.loads(read("arguments (JSON)> ") or "{}")
                except ValueError as exc:
                    console.print(f"[red]not JSON:[/] {exc}")
                    continue
                if isinstance(edited, dict):
                    decisions[call.id] = Edit(arguments=edited)
    return decisions


def _show_answer(console: Any, result: Any, printer: TurnPrinter) -> None:
    """The final answer when streaming did not already show it, and why the turn stopped."""
    reason = STOP_REASONS.get(result.stop_reason.value)
    if result.final_text and result.final_text.strip() != printer.streamed.strip():
        console.print("[bold magenta]assistant>[/] ", end="")
        console.print(result.final_text, markup=False, highlight=False)
    elif not result.final_text:
        console.print(f"[yellow](no answer: {reason or 'the model said nothing'})[/]")
        reason = None
    if reason:
        console.print(f"[yellow](stopped: {reason})[/]")


def _turn(
    console: Any, history: list[Any], run_turn: Any, program_tool: str | None = None
) -> tuple[list[Any], bool | None]:
    """One user message through the loop: the new history and whether the turn succeeded
    (``None``: interrupted). A failed or interrupted turn leaves the history as it was."""
    from tooluse.errors import ToolUseError

    printer = TurnPrinter(console, program_tool)
    try:
        result = run_turn(history, printer)
    except KeyboardInterrupt:
        printer.end_line()
        console.print("[yellow]interrupted[/] (the message was dropped; Ctrl-C again quits)")
        return history[:-1], None
    except ToolUseError as exc:
        printer.end_line()
        console.print(f"[red]error:[/] {exc}", markup=True, highlight=False)
        return history[:-1], False
    printer.end_line()
    _show_answer(console, result, printer)
    return list(result.messages), True


def _start(
    console: Any, model: str, tools: Path | None, mcp: Path | None, max_tokens: int
) -> tuple[Backend, list[Any], bool, tuple[SyncMCPToolExecutor | None, dict[str, float]]]:
    """Load the tools and the model, start the MCP servers, set up line editing:
    ``(backend, tools, interactive, (MCP client or None, the MCP tools' time limits))``."""
    from tooluse.cli.local_cmd import load_module, tools_of
    from tooluse.cli.shared import load_backend

    tool_list = tools_of(load_module(tools)) if tools is not None else []
    if tools is not None and not tool_list:
        raise typer.BadParameter(f"{tools} defines no @tool functions", param_hint="--tools")
    backend = load_backend(model, console)
    client: SyncMCPToolExecutor | None = None
    timeouts: dict[str, float] = {}
    if mcp is not None:
        from tooluse.cli.chat_mcp import open_mcp_servers

        client, mcp_tools, timeouts = open_mcp_servers(mcp, console, backend, max_tokens)
        tool_list = [*tool_list, *mcp_tools]
    names = ", ".join(
        str(getattr(t, "__name__", None) or getattr(t, "name", "?")) for t in tool_list
    )
    interactive = sys.stdin.isatty()
    if interactive:
        from platformdirs import user_data_dir

        _line_editing(Path(user_data_dir("tooluse", appauthor=False)) / "chat_history")
    console.print(
        f"[dim]model {model}; tools: {names or 'none'}; "
        "empty line or Ctrl-D to quit, Ctrl-C stops an answer[/]"
    )
    return backend, tool_list, interactive, (client, timeouts)


def chat(
    model: str = typer.Option(
        "local",
        "--model",
        "-m",
        help="local, local:base, llama-cpp:PATH, openai:MODEL, anthropic:MODEL...",
    ),
    tools: Path = typer.Option(None, "--tools", "-t", help="A Python file with @tool functions."),
    mcp: Path = typer.Option(
        None, "--mcp", help="An mcpServers JSON file: its servers' tools join the chat."
    ),
    system: str = typer.Option(None, "--system", help="System prompt."),
    max_tokens: int = typer.Option(256, help="Tokens per model turn."),
    max_tool_iters: int = typer.Option(4, min=0, help="Tool rounds allowed per message."),
    log: bool = typer.Option(True, "--log/--no-log", help="Record each turn in the run log."),
    code_mode: bool = typer.Option(
        False,
        "--code-mode",
        help="The model writes one Python program that calls the tools (run in the sandbox).",
    ),
) -> None:
    """Chat in the terminal with a model that can call the tools of a Python file.

    Reads one message per line; an empty line, `exit`, Ctrl-D or Ctrl-C at the prompt quits.
    Ctrl-C during an answer stops it. With --mcp, a server's questions (elicitation) are asked
    here and its requests to use the model (sampling) need a yes; with input piped in, they
    are declined. With --code-mode the model gets one tool, run_python: its program runs in
    the sandbox and calls the tools, which run here (each shown under the program, each
    asking for approval when its tool requires it).
    """
    from tooluse import SamplingParams
    from tooluse.cli.shared import console as make_console

    console = make_console()
    backend, tool_list, interactive, (client, timeouts) = _start(
        console, model, tools, mcp, max_tokens
    )
    options: dict[str, Any] = {
        "tools": tool_list,
        "params": SamplingParams(max_tokens=max_tokens),
        "max_tool_iters": max_tool_iters,
        "stream": True,
        "tool_timeouts": timeouts,
    }
    if code_mode:
        from tooluse.execution.code_mode import CodeMode

        options["code_mode"] = CodeMode()
    try:
        _chat_loop(console, backend, options, interactive, system, log)
    finally:
        if client is not None:
            client.close()


def _chat_loop(
    console: Any,
    backend: Backend,
    loop_options: dict[str, Any],
    interactive: bool,
    system: str | None,
    log: bool,
) -> None:
    """Read messages and run a turn for each (with the loop's ``loop_options``) until the user
    quits."""
    from tooluse import ChatMessage
    from tooluse.loop import run
    from tooluse.loop.resume import resume

    def run_turn(history: list[ChatMessage], printer: TurnPrinter) -> Any:
        options: dict[str, Any] = {**loop_options, "on_event": printer}
        result = run(backend, history, log=log, **options)
        while result.stop_reason.value == "approval_required" and result.state is not None:
            printer.end_line()
            decisions = ask_decisions(console, interactive, result.pending)
            result = resume(backend, result.state, decisions=decisions, **options)
        return result

    history: list[ChatMessage] = [ChatMessage.system(system)] if system else []
    settings = loop_options.get("code_mode")
    program_tool = getattr(settings, "tool_name", None)
    succeeded = failed = 0
    while (text := _read_message(interactive, console)) is not None:
        history, ok = _turn(console, [*history, ChatMessage.user(text)], run_turn, program_tool)
        succeeded += ok is True
        failed += ok is False
    if failed and not succeeded:
        console.print(f"[red]every turn failed ({failed})[/]")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach ``chat`` to the main app."""
    app.command()(chat)
