"""`tooluse eval` commands.

- ``tooluse eval bfcl --model local --limit 3``: BFCL-style function-calling accuracy;
- ``tooluse eval env NAME --model local --out DIR``: play a tool environment's tasks on the
  run engine (see :mod:`tooluse.cli.env_cmd`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer


def load_backend(spec: str) -> Any:
    """The backend a ``--model`` value names: ``local`` is the embedded model, anything else
    goes to ``tooluse.load_model`` (``openai:gpt-4o``, ``anthropic:...``)."""
    if spec in ("local", "local:default", "local:"):
        from tooluse.local import LlamaCppBackend

        return LlamaCppBackend.default()
    from tooluse.providers import load_model

    return load_model(spec)


def load_model_and_parser(model: str, format: str | None) -> tuple[Any, Any]:
    """The backend for ``--model`` and the text parser for ``--format``; exit 2 on a bad one."""
    parser = None
    if format is not None:
        from tooluse.formats import get_parser

        try:
            parser = get_parser(format)
        except KeyError as exc:
            typer.echo(f"error: {exc.args[0]}", err=True)
            raise typer.Exit(2) from None
    try:
        backend = load_backend(model)
    except Exception as exc:  # a bad model string or a missing extra: say so, exit 2
        typer.echo(f"error: cannot load model {model!r}: {exc}", err=True)
        raise typer.Exit(2) from None
    return backend, parser


def check_output_paths(out_dir: Path | None, output_file: Path | None) -> None:
    """Make sure the results can be written before any model is loaded: ``out_dir`` is
    created (and must be writable), ``output_file``'s folder must exist. Exit 2 otherwise."""
    problem = None
    if out_dir is not None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            probe = out_dir / ".tooluse-write-check"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            problem = f"cannot write to --out {out_dir}: {exc.strerror or exc}"
    if problem is None and output_file is not None:
        folder = output_file.parent if str(output_file.parent) else Path(".")
        if output_file.is_dir():
            problem = f"--output {output_file} is a directory"
        elif not folder.is_dir():
            problem = f"--output {output_file}: the folder {folder} does not exist"
        elif not os.access(folder, os.W_OK):
            problem = f"--output {output_file}: the folder {folder} is not writable"
    if problem is not None:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
    eval_app = typer.Typer(
        help="Evaluate models: `eval bfcl` (function-calling accuracy on BFCL data) and "
        "`eval env` (trajectories in tool environments, pass@k and rewards)."
    )
    app.add_typer(eval_app, name="eval")

    # `tooluse eval bfcl`: real BFCL data, resumable runs, local or Ray engine.
    from tooluse.cli.bfcl_cmd import register_bfcl_command

    register_bfcl_command(eval_app)

    # `tooluse eval env NAME`: the tool environments' command lives with the environments.
    from tooluse.cli.env_cmd import register_env_command

    register_env_command(eval_app)
