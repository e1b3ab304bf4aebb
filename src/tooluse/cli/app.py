"""The ``tooluse`` command: a thin layer over the library.

Each command group lives in its own module (``*_cmd.py``) and attaches itself here.
"""

from __future__ import annotations

from pathlib import Path

import typer

from tooluse.cli import (
    chat_cmd,
    evals_cmd,
    export_cmd,
    formats_cmd,
    local_cmd,
    logs_cmd,
    mcp_cmd,
    report_cmd,
    serve_cmd,
    train_cmd,
)

app = typer.Typer(
    name="tooluse",
    help="LLM tool calling end to end: schemas, parsing, execution, local models, MCP.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        from tooluse import __version__

        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """LLM tool calling end to end: schemas, parsing, execution, local models, MCP."""


@app.command()
def models(
    directory: list[Path] = typer.Option(
        [], "--dir", "-d", help="Also list the GGUF files in this directory (repeatable)."
    ),
) -> None:
    """List the model prefixes `--model` accepts and the local models found."""
    from tooluse.errors import BackendError, MissingDependencyError
    from tooluse.providers.model_registry import registered_model_prefixes

    typer.echo("model prefixes (use as PREFIX:NAME):")
    for prefix in registered_model_prefixes():
        typer.echo(f"  {prefix}")
    typer.echo("local models:")
    try:
        from tooluse.local.model_files import default_model_path, trained_adapter_path

        typer.echo(
            f"  local       (embedded SmolLM2-135M-Instruct with the shipped adapter "
            f"{trained_adapter_path().name})"
        )
        typer.echo(f"  local:base  (embedded SmolLM2-135M-Instruct: {default_model_path()})")
    except (MissingDependencyError, BackendError) as exc:
        typer.echo(f"  local  (not installed: {exc})")
    for folder in directory:
        for path in sorted(folder.glob("*.gguf")):
            typer.echo(f"  llama-cpp:{path}")


@app.command()
def version() -> None:
    """Print the tooluse version."""
    from tooluse import __version__

    typer.echo(__version__)


for _module in (
    formats_cmd,
    local_cmd,
    chat_cmd,
    mcp_cmd,
    evals_cmd,
    serve_cmd,
    export_cmd,
    report_cmd,
    logs_cmd,
    train_cmd,
):
    _module.register(app)


def main() -> None:
    """Entry point of the ``tooluse`` script.

    A missing optional extra is one line naming the ``pip install`` to run, exit code 2, from
    any command (the import that needs it may happen deep inside the command).
    Errors have one style: a single ``error: ...`` line on stderr, exit code 2 for usage errors
    (bad options, files, a missing extra) and 1 for failures while running.
    """
    from tooluse.errors import MissingDependencyError

    try:
        code = app(standalone_mode=False)
    except _CLI_ERRORS as exc:  # usage errors carry exit code 2, others 1
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        typer.echo(f"error: {_one_line(message)}", err=True)
        raise SystemExit(getattr(exc, "exit_code", 1)) from None
    except typer.Abort:
        typer.echo("error: interrupted", err=True)
        raise SystemExit(130) from None
    except MissingDependencyError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
    except OSError as exc:  # a file or folder the user named: one line, not a traceback
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        typer.echo(f"error: {exc.strerror or exc}{where}", err=True)
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)


try:  # typer >= 0.20 ships its own copy of click, whose errors derive from this class
    from typer.exceptions import TyperException as _CLI_ERRORS
except ImportError:  # pragma: no cover - older typer on the real click
    from click import ClickException as _CLI_ERRORS  # type: ignore[assignment]


def _one_line(message: str) -> str:
    return " ".join(message.split())
