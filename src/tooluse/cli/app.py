"""The ``tooluse`` command: a thin layer over the library.

Each command group lives in its own module and is attached here.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="tooluse",
    help="LLM tool calling end to end: schemas, parsing, execution, local models, MCP.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command()
def version() -> None:
    """Print the tooluse version."""
    from tooluse import __version__

    typer.echo(__version__)


def main() -> None:
    """Entry point of the ``tooluse`` script."""
    app()
