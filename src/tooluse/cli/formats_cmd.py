"""`tooluse` commands of the formats part: ``parse`` (model text on stdin -> tool calls as JSON)
and ``formats`` (the registered format names)."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

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


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""

    @app.command("parse")
    def parse_command(
        format: str = typer.Option(
            ..., "--format", "-f", help="Format name (see `tooluse formats`)."
        ),
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
    ) -> None:
        """Read model output on stdin and print its tool calls as JSON."""
        from tooluse.formats import get_parser
        from tooluse.tools.definition import ToolDefinition

        try:
            parser = get_parser(format, reasoning_started=reasoning_started)
        except KeyError as exc:
            typer.echo(f"error: {exc.args[0]}", err=True)
            raise typer.Exit(2) from None
        tools = [ToolDefinition(name=name) for name in tool]
        if stream:
            machine = parser.stream(tools)
            while True:
                piece = sys.stdin.read(chunk_size)
                events = machine.feed(piece) if piece else machine.close()
                for event in events:
                    typer.echo(json.dumps(_event_json(event), ensure_ascii=False))
                sys.stdout.flush()
                if not piece:
                    break
            return
        result = parser.parse(sys.stdin.read(), tools)
        out = {
            "text": result.text,
            "reasoning": result.reasoning,
            "tool_calls": [_call_json(call) for call in result.tool_calls],
            "errors": [dataclasses.asdict(error) for error in result.errors],
        }
        typer.echo(json.dumps(out, ensure_ascii=False, indent=2))

    @app.command("formats")
    def formats_command() -> None:
        """List the tool-call formats that `tooluse parse --format` accepts."""
        from tooluse.formats import available_formats

        for name in available_formats():
            typer.echo(name)
