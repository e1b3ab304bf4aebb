"""``docs/cli.md`` is what the commands say about themselves, so it cannot drift from
``--help``: regenerate it with ``python -m tooluse.cli.reference > docs/cli.md``."""

from __future__ import annotations

from pathlib import Path

from tooluse.cli.reference import cli_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == cli_reference(), (
        "docs/cli.md is stale: run `python -m tooluse.cli.reference > docs/cli.md`"
    )


def test_reference_covers_every_command():
    text = cli_reference()
    for command in ("chat", "demo", "schema", "serve", "models", "logs", "eval", "mcp", "parse"):
        assert f"`tooluse {command}`" in text
    assert "`--version`" in text
