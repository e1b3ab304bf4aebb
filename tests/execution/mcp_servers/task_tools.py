"""Tools that ``tooluse mcp serve`` runs as tasks in the tests."""

from __future__ import annotations

import asyncio
from pathlib import Path


async def wait_then_echo(text: str, seconds: float = 0.0, marker: str = "") -> str:
    """Wait, then answer with the text.

    Args:
        text: What to answer.
        seconds: How long to wait first.
        marker: A file to write "finished" or "cancelled" to when the call ends.
    """
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _mark(marker, "cancelled")
        raise
    _mark(marker, "finished")
    return text


def _mark(marker: str, how: str) -> None:
    if marker:
        Path(marker).write_text(how)


def refuse(reason: str) -> str:
    """Always fails.

    Args:
        reason: The error text.
    """
    raise ValueError(reason)
