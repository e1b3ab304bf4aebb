"""`tooluse eval` commands: ``tooluse eval bfcl --model local --limit 3``."""

from __future__ import annotations

import json
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


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
    eval_app = typer.Typer(help="Evaluate models: BFCL-style function-calling accuracy.")
    app.add_typer(eval_app, name="eval")

    @eval_app.command("bfcl")
    def bfcl_command(
        model: str = typer.Option(
            ...,
            "--model",
            "-m",
            help="'local' (embedded model) or a model string like openai:gpt-4o.",
        ),
        limit: int | None = typer.Option(
            None, "--limit", "-n", min=1, help="At most this many entries per category."
        ),
        category: list[str] = typer.Option(
            [], "--category", "-c", help="Only these categories (repeatable)."
        ),
        data: Path | None = typer.Option(
            None, "--data", help="A BFCL prompt file (JSON Lines) instead of the shipped sample."
        ),
        answers: Path | None = typer.Option(
            None, "--answers", help="The answer file paired with --data."
        ),
        format: str | None = typer.Option(
            None, "--format", "-f", help="Text tool-call format for models without native calls."
        ),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Write the full report (every entry) as JSON here."
        ),
        temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    ) -> None:
        """Score a model on BFCL-format entries (the shipped sample by default)."""
        from tooluse.evals import load_bfcl_entries, load_sample, run_bfcl
        from tooluse.providers.base import SamplingParams

        try:
            if data is not None:
                entries = load_bfcl_entries(data, answers)
                if category:
                    entries = [e for e in entries if e.category in category]
            else:
                entries = load_sample(category or None)
        except (OSError, ValueError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
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

        def progress(outcome: Any) -> None:
            mark = "ok  " if outcome.passed else "FAIL"
            typer.echo(f"{mark} {outcome.id} {outcome.check.error_type}".rstrip(), err=True)

        report = run_bfcl(
            backend,
            entries,
            limit=limit,
            tool_call_parser=parser,
            params=SamplingParams(temperature=temperature),
            model=model,
            on_outcome=progress,
        )
        typer.echo(report.format_table())
        if output is not None:
            output.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
            typer.echo(f"report written to {output}")
