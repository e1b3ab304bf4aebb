"""`tooluse` commands of the local part: ``demo`` and ``schema`` (``chat`` is in chat_cmd)."""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import typer

from tooluse.cli.shared import console as _console
from tooluse.cli.shared import load_backend

#: The demo's questions and what a right answer contains (``None``: the number the tool gave).
DEMO_QUESTIONS: dict[str, str | None] = {
    "What's the weather in Paris?": None,
    "What is 12 * (3 + 4)?": "84",
    "What is the capital of France?": "Paris",
}
SCHEMA_FORMATS = ("openai", "openai-responses", "anthropic", "gemini", "bedrock", "mcp")


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


def expected_answer(question: str, result: Any) -> str | None:
    """What a right answer to a demo question must contain: the built-in question's answer, else
    the number a tool returned (``None``: nothing to check)."""
    known = DEMO_QUESTIONS.get(question)
    if known is not None:
        return known
    for step in reversed(result.trail):
        if step.is_error:
            continue
        numbers = re.findall(r"-?\d+(?:\.\d+)?", step.output)
        if numbers:
            return numbers[0]
    return None


def answer_problem(question: str, result: Any) -> str | None:
    """Why the answer to a demo question is wrong (``None``: right, or nothing to check). A
    built-in question whose answer is a tool's number (the weather) is wrong when no tool gave
    one: an answer made up without the tool is not right."""
    expected = expected_answer(question, result)
    if expected is None:
        return "no tool gave a number to answer with" if question in DEMO_QUESTIONS else None
    if expected.lower() in (result.final_text or "").lower():
        return None
    return f"the answer does not contain {expected!r}"


def demo(
    question: list[str] = typer.Option(
        None, "--question", "-q", help="Ask this instead of the built-in questions (repeatable)."
    ),
    model: str = typer.Option(
        "local", "--model", "-m", help="local, local:base, llama-cpp:PATH or any model string."
    ),
    max_tokens: int = typer.Option(96, help="Tokens per model turn."),
    seed: int | None = typer.Option(None, help="Sampling seed (with --temperature)."),
    temperature: float = typer.Option(0.0, help="Sampling temperature (0: deterministic)."),
    argument_check: bool = typer.Option(
        False,
        "--argument-check/--no-argument-check",
        help="Put back the brackets a calculator expression dropped from the question "
        "(the untouched model, local:base, drops them).",
    ),
) -> None:
    """A short tool loop on the embedded SmolLM2 model (with its shipped adapter) and weather,
    time and calculator tools.

    Each step is shown with its timing; an argument the system corrected and an answer that
    misses the tool's result are shown too.
    """
    import time

    from tooluse import SamplingParams
    from tooluse.local.demo_tools import demo_tools, expression_check
    from tooluse.loop import run

    console = _console()
    started = time.perf_counter()
    backend = load_backend(model, console)
    tools = demo_tools()
    name = getattr(backend, "display_name", None) or model
    console.print(
        f"[bold]model[/] {name}, tools: {', '.join(t.name for t in tools)} "
        f"[dim](loaded in {time.perf_counter() - started:.1f} s)[/]"
    )
    right = 0
    questions = question or list(DEMO_QUESTIONS)
    for text in questions:
        console.print(f"\n[bold]user[/] {text}")
        check = expression_check(text) if argument_check else None
        asked = time.perf_counter()

        def show(event: Any, check: Any = check) -> None:
            from tooluse.loop import ToolExecutionFinished

            # the check runs once the call has started, so its note comes before the result
            corrections = check.corrections if check is not None else {}
            if isinstance(event, ToolExecutionFinished) and event.call.id in corrections:
                written, fixed = corrections[event.call.id]
                console.print(
                    f"  [yellow]argument check[/] the model wrote {written!r}, which drops the "
                    f"question's brackets; corrected to {fixed!r}",
                    highlight=False,
                )
            print_event(console, event)

        result = run(
            backend,
            text,
            tools=tools,
            params=SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed),
            max_tool_iters=2,
            before_tool_call=check,
            on_event=show,
            log=True,
        )
        answer = result.final_text or "(no answer)"
        console.print(f"  [bold magenta]answer[/] {answer}", highlight=False)
        problem = answer_problem(text, result)
        seconds = time.perf_counter() - asked
        if problem is None:
            right += 1
            console.print(f"  [green]✓[/] [dim]{seconds:.1f} s[/]")
        else:
            console.print(f"  [red]✗ {problem}[/] [dim]{seconds:.1f} s[/]", highlight=False)
    console.print(
        f"\n{right}/{len(questions)} answers right "
        f"[dim]({time.perf_counter() - started:.1f} s in all)[/]"
    )


def _schema_of(definition: Any, format: str, strict: bool) -> Any:
    if format == "gemini":
        return definition.to_gemini_schema()
    if format == "mcp":
        return definition.to_mcp_schema()
    method = getattr(definition, f"to_{format.replace('-', '_')}_schema")
    kwargs = {"strict": strict} if "strict" in inspect.signature(method).parameters else {}
    return method(**kwargs)


def schema(
    target: str = typer.Argument(
        ..., help="module.py (every tool in it) or module.py:function (or :ClassName)."
    ),
    format: str = typer.Option("openai", "--format", "-f", help="|".join(SCHEMA_FORMATS)),
    strict: bool = typer.Option(False, help="Strict mode schema (openai, anthropic, bedrock)."),
    tokens: bool = typer.Option(
        False, "--tokens", help="Print each tool's size in tokens (the embedded model's tokenizer)."
    ),
) -> None:
    """Print tool schemas of a Python file in a provider's format (one object, or a list)."""
    from tooluse.errors import ToolUseError
    from tooluse.tools.normalise import as_tool

    if format not in SCHEMA_FORMATS:
        raise typer.BadParameter(
            f"unknown format {format!r}; use one of {', '.join(SCHEMA_FORMATS)}",
            param_hint="--format",
        )
    file_part, sep, name = target.rpartition(":")
    if not sep or not file_part.endswith(".py"):  # a path alone (which may hold a colon)
        file_part, name = target, ""
    module = load_module(Path(file_part))
    if name:
        obj = getattr(module, name, None)
        if obj is None:
            raise typer.BadParameter(f"{file_part} has no attribute {name!r}", param_hint="TARGET")
        objects = [obj]
    else:
        objects = tools_of(module)
        if not objects:
            raise typer.BadParameter(f"{file_part} defines no @tool function", param_hint="TARGET")
    try:
        out = [_schema_of(as_tool(obj), format, strict) for obj in objects]
    except ToolUseError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    if tokens:
        _print_token_costs([as_tool(obj).name for obj in objects], out)
        return
    typer.echo(json.dumps(out[0] if name else out, indent=2, ensure_ascii=False))


def _print_token_costs(names: list[str], schemas: list[Any]) -> None:
    """Each schema's size in tokens of the embedded model's tokenizer (its vocabulary only
    is loaded), the largest first, and the total a request offering them all carries."""
    from tooluse.local.model_files import default_model_path
    from tooluse.local.runtime import import_llama_cpp

    llama_cpp = import_llama_cpp()
    # llama.cpp writes a context notice to stderr even for a vocabulary-only load
    with llama_cpp._utils.suppress_stdout_stderr(disable=False):
        vocabulary = llama_cpp.Llama(
            model_path=str(default_model_path()), vocab_only=True, verbose=False
        )
    counts = [
        len(vocabulary.tokenize(json.dumps(s, ensure_ascii=False).encode(), add_bos=False))
        for s in schemas
    ]
    width = max(len(n) for n in names)
    for count, tool_name in sorted(zip(counts, names, strict=True), reverse=True):
        typer.echo(f"{tool_name:<{width}}  {count:>6} tokens")
    typer.echo(f"{'total':<{width}}  {sum(counts):>6} tokens ({len(names)} tools)")


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
    app.command()(demo)
    app.command()(schema)
