"""The ``tooluse`` command: a thin layer over the library.

Each command group lives in its own module (``*_cmd.py``) and attaches itself here.
"""

from __future__ import annotations

import typer

from tooluse.cli import evals_cmd, formats_cmd, local_cmd, mcp_cmd

app = typer.Typer(
    name="tooluse",
    help="LLM tool calling end to end: schemas, parsing, execution, local models, MCP.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def root() -> None:
    """LLM tool calling end to end: schemas, parsing, execution, local models, MCP."""


@app.command()
def version() -> None:
    """Print the tooluse version."""
    from tooluse import __version__

    typer.echo(__version__)


for _module in (formats_cmd, local_cmd, mcp_cmd, evals_cmd):
    _module.register(app)


def main() -> None:
    """Entry point of the ``tooluse`` script."""
    app()
