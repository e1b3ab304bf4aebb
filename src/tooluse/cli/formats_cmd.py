"""`tooluse` commands of the formats part: ``parse`` (model text on stdin -> tool calls as JSON)
and ``formats`` (the registered format names)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import typer

from tooluse.events import StreamEvent
from tooluse.messages import ToolCall


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "raw_arguments": call.raw_arguments,
    }


def _event_json(event: StreamEvent) -> dict[str, Any]:
    data: dict[str, Any] = {"event": type(event).__name__}
    for field in dataclasses.fields(event):
        value = getattr(event, field.name)
        data[field.name] = _call_json(value) if isinstance(value, ToolCall) else value
    return data


_SURROGATE = re.compile("[\ud800-\udfff]")


def _dumps(value: Any, indent: int | None = None) -> str:
    """JSON text that any terminal can print: non-ASCII stays readable, but lone surrogates
    (which no encoding can write, and which JSON escapes from models can produce) become
    ``\\uXXXX`` escapes, as JSON allows inside strings."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@contextlib.contextmanager
def _stdin() -> Iterator[TextIO]:
    """Standard input as text; bytes that are not UTF-8 become U+FFFD instead of an error."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:
        yield sys.stdin
        return
    wrapper = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    try:
        yield wrapper
    finally:
        wrapper.detach()  # leave sys.stdin itself open


def parse_command(
    format: str = typer.Option(..., "--format", "-f", help="Format name (see `tooluse formats`)."),
    stream: bool = typer.Option(
        False, "--stream", help="Read stdin incrementally and print one JSON event per line."
    ),
    tool: list[str] = typer.Option(
        [], "--tool", "-t", help="A known tool name (repeatable); other names are reported."
    ),
    chunk_size: int = typer.Option(
        16, "--chunk-size", min=1, help="Characters read from stdin per delta with --stream."
    ),
    reasoning_started: bool = typer.Option(
        False, "--reasoning-started", help="The prompt already opened the reasoning block."
    ),
    template: str | None = typer.Option(
        None,
        "--template",
        help="The model's Jinja2 chat template (a file): whether its generation prompt "
        "opens the reasoning block is read from it.",
    ),
    lenient: bool = typer.Option(
        False, "--lenient", help="hermes only: also read calls wrapped in other tags."
    ),
) -> None:
    """Read model output on stdin and print its tool calls as JSON."""
    from tooluse.tools.definition import ToolDefinition

    if template is not None and not reasoning_started:
        reasoning_started = _template_opens_reasoning(template)
    parser = _parser_or_exit(format, reasoning_started=reasoning_started, lenient=lenient)
    tools = [ToolDefinition(name=name) for name in tool]
    if stream:
        _print_stream(parser, tools, chunk_size)
        return
    with _stdin() as source:
        text = source.read()
    result = parser.parse(text, tools)
    out = {
        "text": result.text,
        "reasoning": result.reasoning,
        "tool_calls": [_call_json(call) for call in result.tool_calls],
        "errors": [dataclasses.asdict(error) for error in result.errors],
    }
    typer.echo(_dumps(out, indent=2))


def _template_opens_reasoning(template: str) -> bool:
    """Whether the chat template file's generation prompt opens the reasoning block."""
    from pathlib import Path

    from tooluse.formats.prompt_reasoning import reasoning_started_from_template

    try:
        template_text = Path(template).read_text(encoding="utf-8")
    except OSError as exc:
        typer.echo(f"error: cannot read the template: {exc}", err=True)
        raise typer.Exit(2) from None
    return reasoning_started_from_template(template_text)


def _parser_or_exit(format: str, *, reasoning_started: bool, lenient: bool) -> Any:
    from tooluse.formats import get_parser

    options: dict[str, Any] = {"reasoning_started": reasoning_started}
    if lenient:
        options["lenient"] = True
    try:
        return get_parser(format, **options)
    except KeyError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None
    except TypeError:
        typer.echo(f"error: format {format!r} has no lenient mode", err=True)
        raise typer.Exit(2) from None


def _print_stream(parser: Any, tools: list[Any], chunk_size: int) -> None:
    """Feed stdin to the parser ``chunk_size`` characters at a time; one JSON event a line."""
    machine = parser.stream(tools)
    with _stdin() as source:
        while True:
            piece = source.read(chunk_size)
            events = machine.feed(piece) if piece else machine.close()
            for event in events:
                typer.echo(_dumps(_event_json(event)))
            sys.stdout.flush()
            if not piece:
                break


def formats_command() -> None:
    """List the tool-call formats that `tooluse parse --format` accepts, with aliases."""
    from tooluse.formats.registry import format_aliases

    for name, aliases in format_aliases().items():
        typer.echo(f"{name}  ({', '.join(aliases)})" if aliases else name)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
    app.command("parse")(parse_command)
    app.command("formats")(formats_command)
