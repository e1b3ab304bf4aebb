"""`tooluse` commands of the local part."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
