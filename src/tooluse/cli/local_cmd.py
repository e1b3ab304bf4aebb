"""`tooluse` commands of the local part: ``demo``, ``chat`` and ``schema``."""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import typer

DEMO_QUESTIONS = (
    "What's the weather in Paris?",
    "What is 12 * (3 + 4)?",
    "What is the capital of France?",
)
SCHEMA_FORMATS = ("openai", "anthropic", "gemini", "bedrock", "mcp")


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@contextmanager
def _loading(console: Any, what: str) -> Iterator[None]:
    """A spinner while a model loads (only on a terminal)."""
    if console.is_terminal:
        with console.status(f"loading {what}..."):
            yield
    else:
        yield


def load_backend(spec: str, console: Any) -> Any:
    """A backend from ``local``, ``llama-cpp:PATH`` or any ``load_model`` string."""
    from tooluse.errors import ToolUseError
    from tooluse.providers.model_registry import load_model

    try:
        with _loading(console, spec):
            return load_model(spec)
    except (ToolUseError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from exc


def load_module(path: Path) -> ModuleType:
    """Import a Python file as a module (its directory first on ``sys.path``)."""
    if not path.is_file():
        raise typer.BadParameter(f"no such file: {path}")
    name = f"tooluse_user_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise typer.BadParameter(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise typer.BadParameter(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.pop(0)
    return module


def tools_of(module: ModuleType) -> list[Any]:
    """The ``@tool`` functions (and Tool objects/definitions) defined in ``module``."""
    from tooluse.tools import Tool, ToolDefinition
    from tooluse.tools.normalise import TOOL_ATTRIBUTE

    found = []
    for value in vars(module).values():
        if getattr(value, TOOL_ATTRIBUTE, None) is not None or isinstance(
            value, (Tool, ToolDefinition)
        ):
            found.append(value)
    return found


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_event(console: Any, event: Any) -> None:
    """One line of the trail per loop event."""
    from tooluse.loop import ToolExecutionFinished, ToolExecutionStarted

    if isinstance(event, ToolExecutionStarted):
        args = ", ".join(f"{k}={v!r}" for k, v in event.call.arguments.items())
        console.print(f"  [cyan]→ call[/] {event.call.name}({args})")
    elif isinstance(event, ToolExecutionFinished):
        style = "red" if event.result.is_error else "green"
        console.print(f"  [{style}]← result[/] {_short(event.result.output)}")


def demo(
    question: list[str] = typer.Option(
        None, "--question", "-q", help="Ask this instead of the built-in questions (repeatable)."
    ),
    max_tokens: int = typer.Option(96, help="Tokens per model turn."),
) -> None:
    """A short tool loop on the embedded SmolLM2 model with weather, time and calculator tools."""
    import time

    from tooluse import SamplingParams
    from tooluse.local.demo_tools import demo_tools
    from tooluse.loop import run

    console = _console()
    started = time.perf_counter()
    backend = load_backend("local", console)
    tools = demo_tools()
    console.print(
        f"[bold]model[/] {backend.model_name} ({backend.model_path.name}), "
        f"tools: {', '.join(t.name for t in tools)}"
    )
    for text in question or DEMO_QUESTIONS:
        console.print(f"\n[bold]user[/] {text}")
        result = run(
            backend,
            text,
            tools=tools,
            params=SamplingParams(max_tokens=max_tokens),
            max_tool_iters=2,
            on_event=lambda event: print_event(console, event),
        )
        console.print(f"  [bold magenta]answer[/] {result.final_text or '(no answer)'}")
    console.print(f"\n[dim]{time.perf_counter() - started:.1f} s in all[/]")


def chat(
    model: str = typer.Option(
        "local", "--model", "-m", help="local, llama-cpp:PATH, openai:MODEL, anthropic:MODEL..."
    ),
    tools: Path = typer.Option(None, "--tools", "-t", help="A Python file with @tool functions."),
    system: str = typer.Option(None, "--system", help="System prompt."),
    max_tokens: int = typer.Option(256, help="Tokens per model turn."),
) -> None:
    """Chat in the terminal with a model that can call the tools of a Python file.

    Reads one message per line from standard input; an empty line, `exit` or end of input quits.
    """
    from tooluse import ChatMessage, SamplingParams
    from tooluse.errors import ToolUseError
    from tooluse.loop import run

    console = _console()
    tool_list = tools_of(load_module(tools)) if tools is not None else []
    if tools is not None and not tool_list:
        raise typer.BadParameter(f"{tools} defines no @tool functions", param_hint="--tools")
    backend = load_backend(model, console)
    names = ", ".join(
        str(getattr(t, "__name__", None) or getattr(t, "name", "?")) for t in tool_list
    )
    console.print(f"[dim]model {model}; tools: {names or 'none'}; empty line to quit[/]")
    history: list[ChatMessage] = [ChatMessage.system(system)] if system else []
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            console.print("[bold]you>[/] ", end="")
        line = sys.stdin.readline()
        if not line or not line.strip() or line.strip() in ("exit", "quit"):
            break
        history.append(ChatMessage.user(line.strip()))
        try:
            result = run(
                backend,
                history,
                tools=tool_list,
                params=SamplingParams(max_tokens=max_tokens),
                on_event=lambda event: print_event(console, event),
            )
        except ToolUseError as exc:
            console.print(f"[red]error:[/] {exc}")
            history.pop()
            continue
        history = list(result.messages)
        console.print(f"[bold magenta]assistant>[/] {result.final_text}")


def schema(
    target: str = typer.Argument(..., help="module.py:function (or module.py:ClassName)."),
    format: str = typer.Option("openai", "--format", "-f", help="|".join(SCHEMA_FORMATS)),
    strict: bool = typer.Option(False, help="Strict mode schema (openai, anthropic, bedrock)."),
) -> None:
    """Print the tool schema of a Python function in a provider's format."""
    from tooluse.errors import ToolUseError
    from tooluse.tools.normalise import as_tool

    if format not in SCHEMA_FORMATS:
        raise typer.BadParameter(
            f"unknown format {format!r}; use one of {', '.join(SCHEMA_FORMATS)}",
            param_hint="--format",
        )
    file_part, sep, name = target.rpartition(":")
    if not sep or not file_part or not name:
        raise typer.BadParameter("expected module.py:function", param_hint="TARGET")
    module = load_module(Path(file_part))
    obj = getattr(module, name, None)
    if obj is None:
        raise typer.BadParameter(f"{file_part} has no attribute {name!r}", param_hint="TARGET")
    try:
        definition = as_tool(obj)
        if format == "gemini":
            out = definition.to_gemini_schema()
        elif format == "mcp":
            out = definition.to_mcp_schema()
        else:
            method = getattr(definition, f"to_{format}_schema")
            kwargs = {"strict": strict} if "strict" in inspect.signature(method).parameters else {}
            out = method(**kwargs)
    except ToolUseError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(json.dumps(out, indent=2, ensure_ascii=False))


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
    app.command()(demo)
    app.command()(chat)
    app.command()(schema)
