"""``tooluse export sft|rl``: training data from recorded trajectories.

::

    tooluse export sft runs/bfcl --out sft.jsonl --min-reward 1.0 [--chat-template t.jinja]
    tooluse export rl runs/bfcl --out rl.jsonl

The source is a run directory (``tooluse eval env ... --out DIR``) or a trajectories JSONL
file. See :mod:`tooluse.envs.export` for the line formats.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import typer


def _template(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        typer.echo(f"error: cannot read the chat template {path}: {exc.strerror}", err=True)
        raise typer.Exit(2) from None


def _records(source: Path) -> list[dict[str, Any]]:
    from tooluse.envs.export import read_trajectories

    try:
        return read_trajectories(source)
    except FileNotFoundError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _write(rows: Iterable[dict[str, Any]], out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def register(app: typer.Typer) -> None:
    """Attach ``export`` to the main app."""
    export_app = typer.Typer(help="Training data from recorded trajectories.")
    app.add_typer(export_app, name="export")

    source_help = "A run directory (with trajectories.jsonl) or a trajectories JSONL file."
    template_help = "Also render each line with this chat template (a Jinja file)."
    arguments_help = "Tool call arguments as 'dict' (chat templates) or 'json' (OpenAI API)."

    @export_app.command("sft")
    def sft_command(
        source: Path = typer.Argument(..., help=source_help),
        out: Path = typer.Option(..., "--out", "-o", help="The JSONL file to write."),
        min_reward: float | None = typer.Option(
            None, "--min-reward", help="Keep trajectories with at least this total reward."
        ),
        only_success: bool = typer.Option(False, "--only-success", help="Solved ones only."),
        chat_template: Path | None = typer.Option(None, "--chat-template", help=template_help),
        arguments_as: str = typer.Option("dict", "--arguments", help=arguments_help),
    ) -> None:
        """Chat examples ({"messages", "tools"}) for supervised fine-tuning."""
        from tooluse.envs.export import sft_examples

        if arguments_as not in ("dict", "json"):
            typer.echo("error: --arguments must be 'dict' or 'json'", err=True)
            raise typer.Exit(2)
        records = _records(source)
        count = _write(
            sft_examples(
                records,
                min_reward=min_reward,
                only_success=only_success,
                arguments_as=arguments_as,  # type: ignore[arg-type]
                chat_template=_template(chat_template),
            ),
            out,
        )
        typer.echo(f"wrote {count} of {len(records)} trajectories to {out}")

    @export_app.command("rl")
    def rl_command(
        source: Path = typer.Argument(..., help=source_help),
        out: Path = typer.Option(..., "--out", "-o", help="The JSONL file to write."),
        chat_template: Path | None = typer.Option(None, "--chat-template", help=template_help),
        arguments_as: str = typer.Option("dict", "--arguments", help=arguments_help),
    ) -> None:
        """Per-step lines ({"prompt", "completion", "reward", "signals"}) for RL."""
        from tooluse.envs.export import rl_steps

        if arguments_as not in ("dict", "json"):
            typer.echo("error: --arguments must be 'dict' or 'json'", err=True)
            raise typer.Exit(2)
        records = _records(source)
        count = _write(
            rl_steps(
                records,
                arguments_as=arguments_as,  # type: ignore[arg-type]
                chat_template=_template(chat_template),
            ),
            out,
        )
        typer.echo(f"wrote {count} steps of {len(records)} trajectories to {out}")
