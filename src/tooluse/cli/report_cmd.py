"""``tooluse report``: one self-contained HTML page of evaluation runs and traces.

::

    tooluse report runs/constrained runs/unconstrained -o report.html --png accuracy.png
    tooluse report run.json trajectories.jsonl -o traces.html
    tooluse report runs/a runs/b --markdown -            # the accuracy table for a README

Each argument is a run directory (``results.jsonl`` from ``tooluse eval bfcl --out``,
``trajectories.jsonl`` from ``tooluse eval env --out``), a saved ``RunResult``
(``RunResult.save``) or an environments' trajectory JSONL file. Runs holding BFCL categories
get BFCL v4's overall score; ``--combine`` scores them as one results set::

    tooluse report runs/single_turn runs/mt_base runs/mt_miss_func --combine -o bfcl.html
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Attach ``report`` to the main app."""

    @app.command("report")
    def report_command(
        paths: list[Path] = typer.Argument(
            ..., help="Run directories, RunResult JSON or trajectory JSONL."
        ),
        output: Path = typer.Option(Path("report.html"), "--output", "-o", help="The HTML file."),
        png: Path | None = typer.Option(
            None, "--png", help="Also write the accuracy chart as a PNG (headless Chromium)."
        ),
        title: str = typer.Option("tooluse evaluation", "--title"),
        markdown: Path | None = typer.Option(
            None, "--markdown", help="Also write the accuracy table as Markdown ('-': print it)."
        ),
        combine: bool = typer.Option(
            False,
            "--combine",
            help="Score all run directories as one BFCL results set (one model's single-turn "
            "and multi-turn runs); their categories must not overlap.",
        ),
    ) -> None:
        """Write an HTML report: accuracy per category, error types, latency, every item."""
        from tooluse.evals.browser import BrowserError, svg_to_png
        from tooluse.evals.report import accuracy_svg, load_run, markdown_table, render_report
        from tooluse.evals.trace_view import load_traces

        runs, traces = [], []
        for path in paths:
            try:
                if path.is_dir():
                    runs.append(load_run(path))
                elif path.is_file():
                    traces.extend(load_traces(path))
                else:
                    raise FileNotFoundError(f"{path} does not exist")
            except (OSError, ValueError) as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(2) from None
        try:
            page = render_report(runs, traces=traces, title=title, combine=combine)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        output.write_text(page, encoding="utf-8")
        typer.echo(f"report written to {output} ({len(runs)} runs, {len(traces)} traces)")
        if markdown is not None:
            if not runs:
                typer.echo("error: --markdown needs at least one run directory", err=True)
                raise typer.Exit(2)
            table = markdown_table(runs, combine=combine)
            if str(markdown) == "-":
                typer.echo(table, nl=False)
            else:
                markdown.write_text(table, encoding="utf-8")
                typer.echo(f"accuracy table written to {markdown}")
        if png is not None:
            if not runs:
                typer.echo("error: --png needs at least one run directory", err=True)
                raise typer.Exit(2)
            try:
                svg_to_png(accuracy_svg(runs), png, width=760, height=300)
            except BrowserError as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(1) from None
            typer.echo(f"accuracy chart written to {png} (rendered by headless Chromium)")
