"""``tooluse logs``: the run log (``tooluse.loop.run_log``) from the command line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer


def _when(created: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created))


def logs_list(
    context: typer.Context,
    count: int = typer.Option(10, "--count", "-n", min=0, help="Newest N runs (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a table."),
) -> None:
    """List the newest runs (`tooluse logs show ID` prints one)."""
    if context.invoked_subcommand is not None:
        return
    from tooluse.loop.run_log import RunLog

    entries = RunLog().entries(count or None)
    if as_json:
        for entry in entries:
            typer.echo(json.dumps(entry.to_dict(), ensure_ascii=False))
        return
    if not entries:
        typer.echo("no runs logged yet")
        return
    _print_table(entries)


def _print_table(entries: list[Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "when", "source", "model", "prompt", "calls", "stop", box=None)
    table.columns[0].no_wrap = True
    for entry in entries:
        table.add_row(
            entry.id,
            _when(entry.created),
            entry.source,
            entry.model,
            entry.prompt[:50],
            str(len(entry.calls)),
            entry.error or entry.stop_reason,
        )
    console = Console()
    if not console.is_terminal:  # piped: one row per run, never squeezed to 80 columns
        console = Console(width=240)
    console.print(table)


def logs_show(
    entry_id: str = typer.Argument(..., help="A log id (or a unique start of one)."),
    as_json: bool = typer.Option(False, "--json", help="The whole record as JSON."),
    save: Path | None = typer.Option(
        None, "--save", help="Also write the run as a saved RunResult (`tooluse report` it)."
    ),
) -> None:
    """Print one run: prompt, each tool call with arguments and output, the answer."""
    from tooluse.loop.run_log import RunLog

    try:
        entry = RunLog().get(entry_id)
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0]), param_hint="ID") from None
    if save is not None:
        if not entry.result:
            raise typer.BadParameter("this run failed before it had a result", param_hint="ID")
        save.write_text(json.dumps(entry.result, ensure_ascii=False, indent=1) + "\n")
    if as_json:
        typer.echo(json.dumps({**entry.to_dict(), "result": entry.result}, indent=2))
        return
    _print_entry(entry)


def _print_entry(entry: Any) -> None:
    typer.echo(f"id       {entry.id}  ({_when(entry.created)}, {entry.source})")
    typer.echo(f"model    {entry.model}")
    typer.echo(f"tools    {', '.join(entry.tools) or 'none'}")
    typer.echo(f"prompt   {entry.prompt}")
    for call in entry.calls:
        flag = "error" if call.get("error") else "ok"
        arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
        typer.echo(f"call     {call.get('name')}({arguments}) -> [{flag}] {call.get('output')}")
        typer.echo(f"         {call.get('duration', 0):.3f} s")
    usage = entry.result.get("usage") or {}
    typer.echo(f"answer   {entry.final_text}")
    typer.echo(
        f"stop     {entry.stop_reason}; {entry.duration:.2f} s; "
        f"tokens in {usage.get('input_tokens', 0)}, out {usage.get('output_tokens', 0)}"
        + (f"; cost ${usage['cost']:.6f}" if usage.get("cost") is not None else "")
    )
    if entry.error:
        typer.echo(f"error    {entry.error}")


def logs_path() -> None:
    """Print where the log is kept (`TOOLUSE_LOG_PATH` changes it)."""
    from tooluse.loop.run_log import default_log_path

    typer.echo(str(default_log_path()))


def register(app: typer.Typer) -> None:
    """Attach ``logs`` to the main app."""
    logs_app = typer.Typer(help="The log of runs: list, show one, or where it is kept.")
    app.add_typer(logs_app, name="logs")
    logs_app.callback(invoke_without_command=True)(logs_list)
    logs_app.command("show")(logs_show)
    logs_app.command("path")(logs_path)
