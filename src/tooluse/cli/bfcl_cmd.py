"""``tooluse eval bfcl``: function-calling accuracy on real BFCL data (or the shipped sample).

::

    tooluse eval bfcl -m local -c simple_python,parallel --sample 20 --seed 0 --out runs/a
    tooluse eval bfcl -m local -c live_multiple --tools-top-k 5 --engine ray --workers 2 --out runs/b
    tooluse eval bfcl -m local -c single_turn --out runs/full   # all 13 single-turn categories
    tooluse eval bfcl -m local --limit 2          # the shipped 21-entry sample, offline

Results land in ``DIR/results.jsonl`` as each entry finishes, and ``DIR/summary.json``; the
same command on the same DIR resumes. The summary ends with BFCL v4's overall score of the
categories run, computed as bfcl-eval does, naming the categories it lacks (the multi-turn ones
are run with ``tooluse eval env bfcl:multi_turn_base`` ...; ``tooluse report --combine`` scores
such runs together). Everything that can be checked (data files, options,
the model string, the format) is checked before the first model call.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from tooluse.cli.shared import EMBEDDED_MODEL_SPECS


def _categories(values: list[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _load_entries(
    categories: list[str], data: Path | None, answers: Path | None, shipped: bool
) -> list[Any]:
    from tooluse.evals.bfcl.data import (
        NO_ANSWER_CATEGORIES,
        category_of,
        load_bfcl_categories,
        load_bfcl_entries,
        load_sample,
    )

    if answers is not None and data is None:
        raise ValueError("--answers needs --data (the prompt file it answers)")
    if data is not None:
        if not data.is_file():
            raise FileNotFoundError(f"data file {data} does not exist")
        if answers is not None and not answers.is_file():
            raise FileNotFoundError(f"answers file {answers} does not exist")
        category = category_of("", data)
        if answers is None and category not in NO_ANSWER_CATEGORIES:
            raise ValueError(f"{data.name} needs its answers file: pass --answers")
        entries = load_bfcl_entries(data, answers)
        if categories:
            entries = [e for e in entries if e.category in categories]
        return entries
    if shipped or not categories:
        return load_sample(categories or None)
    return load_bfcl_categories(categories)


def format_summary(summary: dict[str, Any]) -> str:
    """A plain-text table: one row per category, then the totals and error types."""
    lines = [
        f"BFCL evaluation of {summary['model']}",
        f"{'category':<24}{'correct':>9}{'accuracy':>10}",
    ]
    for name, score in summary["categories"].items():
        counts = f"{score['correct']}/{score['total']}"
        lines.append(f"{name:<24}{counts:>9}{score['accuracy']:>10.1%}")
    total = f"{summary['correct']}/{summary['total']}"
    lines.append(f"{'all entries':<24}{total:>9}{summary['accuracy']:>10.1%}")
    if summary.get("ast_mean") is not None:
        lines.append(f"{'AST mean (no irr.)':<24}{'':>9}{summary['ast_mean']:>10.1%}")
    if summary.get("bfcl_score"):
        from tooluse.evals.bfcl.overall import format_bfcl_score

        lines.extend(format_bfcl_score(summary["bfcl_score"]))
    sensitivity = summary.get("format_sensitivity")
    if sensitivity:
        lines.append(
            f"format_sensitivity (apart from the score): {len(sensitivity['formats'])} of 26 "
            f"formats, max delta {sensitivity['max_delta']:.2f} points, "
            f"std {sensitivity['std']:.2f} points"
        )
    for name, count in sorted(summary["error_types"].items()):
        lines.append(f"  error {name}: {count}")
    if summary.get("unconvertible"):
        lines.append(f"  not expressible as tools: {', '.join(summary['unconvertible'])}")
    if summary.get("items_per_minute"):
        lines.append(f"  {summary['items_per_minute']:.1f} items/min")
    return "\n".join(lines)


def _check_model(model: str, format: str | None) -> None:
    """Fail before any work on a model string or format that cannot load (exit 2)."""
    if format is not None:
        from tooluse.formats import get_parser

        try:
            get_parser(format)
        except KeyError as exc:
            typer.echo(f"error: {exc.args[0]}", err=True)
            raise typer.Exit(2) from None
    try:
        if model in EMBEDDED_MODEL_SPECS:
            from tooluse.local.model_files import default_model_path, trained_adapter_path

            default_model_path()
            trained_adapter_path()
        else:
            from tooluse.providers import load_model

            load_model(model)
    except Exception as exc:  # a bad model string or a missing extra: say so, exit 2
        typer.echo(f"error: cannot load model {model!r}: {exc}", err=True)
        raise typer.Exit(2) from None


def _check_prompt_style(entries: list[Any], prompt_style: str) -> None:
    """Exit 2 before any model call when the prompt style cannot score some entries."""
    from tooluse.evals.bfcl.java_js import language_of
    from tooluse.evals.bfcl.scorer import BFCL_STYLE_PYTHON_ONLY

    if prompt_style != "bfcl":
        return
    others = sorted({e.category for e in entries if language_of(e.category) != "python"})
    if others:
        raise _fail(
            f"{BFCL_STYLE_PYTHON_ONLY} (drop {', '.join(others)} or use --prompt-style native)"
        )


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _entries_or_exit(
    category: list[str],
    data: Path | None,
    answers: Path | None,
    shipped: bool,
    sample: int | None,
    seed: int,
    limit: int | None,
    split: str | None,
) -> list[Any]:
    """The entries the options select; exit 2 on a bad file or option, or when none are left."""
    from tooluse.evals.bfcl.data import select_entries

    try:
        entries = _load_entries(_categories(category), data, answers, shipped)
        entries = select_entries(entries, sample=sample, seed=seed, limit=limit, split=split)
    except (OSError, ValueError) as exc:
        raise _fail(str(exc)) from None
    if not entries:
        raise _fail("no entries to run (an empty category or filter)")
    return entries


def _run_and_report(
    entries: list[Any],
    model: str,
    options: Any,
    out: Path | None,
    output: Path | None,
    engine_options: dict[str, Any],
) -> None:
    """Run the job (into ``out`` or a scratch directory), write ``--output``, print the table."""
    from tooluse.cli.shared import interruptible_run
    from tooluse.evals.bfcl.job import run_bfcl_job
    from tooluse.evals.engine import EngineError, read_results

    with tempfile.TemporaryDirectory(prefix="tooluse-bfcl-") as scratch:
        directory = out if out is not None else Path(scratch)
        try:
            with interruptible_run(out):
                summary = run_bfcl_job(entries, model, options, directory, **engine_options)
        except EngineError as exc:
            raise _fail(str(exc), 1) from None
        if output is not None:
            wanted = {e.id for e in entries}
            rows = [r for k, r in read_results(directory / "results.jsonl").items() if k in wanted]
            payload = {**summary, "entries": rows}
            output.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    typer.echo(format_summary(summary))
    if out is not None:
        typer.echo(f"results in {out}/results.jsonl, summary in {out}/summary.json")
    if output is not None:
        typer.echo(f"report written to {output}")


ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="'local' (embedded model and adapter), 'local:base' (without the adapter) or a "
        "model string like openai:gpt-4o.",
    ),
]
CategoryOption = Annotated[
    list[str],
    typer.Option(
        "--category",
        "-c",
        help="BFCL v4 categories (comma-separated or repeated), e.g. simple_python,simple_java,"
        "live_multiple, format_sensitivity (reported apart), or collections: single_turn, "
        "non_live, live, python, non_python; "
        "without it, the shipped sample.",
    ),
]
DataOption = Annotated[Path | None, typer.Option("--data", help="A BFCL prompt file (JSON Lines).")]
AnswersOption = Annotated[
    Path | None, typer.Option("--answers", help="The answer file for --data.")
]
ShippedOption = Annotated[
    bool, typer.Option("--shipped", help="Use the shipped sample even with --category.")
]
SampleOption = Annotated[
    int | None, typer.Option("--sample", min=1, help="A random sample of N entries per category.")
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of --sample.")]
LimitOption = Annotated[
    int | None,
    typer.Option("--limit", "-n", min=1, help="The first N entries per category (after --sample)."),
]
SplitOption = Annotated[
    str | None,
    typer.Option("--split", help="train or test: that split of each category (before --sample)."),
]
ToolChoiceOption = Annotated[str, typer.Option("--tool-choice", help="auto or required.")]
ParallelOption = Annotated[
    bool | None,
    typer.Option(
        "--parallel/--no-parallel",
        help="Allow parallel calls [default: only in parallel categories].",
    ),
]
ConstrainedOption = Annotated[
    bool,
    typer.Option("--constrained/--no-constrained", help="Grammar-constrained calls (local model)."),
]
FormatOption = Annotated[
    str | None,
    typer.Option("--format", "-f", help="Text tool-call format for models without native calls."),
]
PromptStyleOption = Annotated[
    str,
    typer.Option("--prompt-style", help="native (tools as the backend takes them) or bfcl."),
]
MaxTokensOption = Annotated[int | None, typer.Option("--max-tokens", min=1)]
TemperatureOption = Annotated[float, typer.Option("--temperature")]
TopKOption = Annotated[
    int | None,
    typer.Option("--tools-top-k", min=1, help="Offer only the K most relevant tools (BM25)."),
]
FewShotOption = Annotated[
    bool, typer.Option("--few-shot/--no-few-shot", help="Worked examples in the system prompt.")
]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Run directory: results.jsonl + summary.json; resumes."),
]
OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Also write the summary and every record as one JSON."),
]
EngineOption = Annotated[str, typer.Option("--engine", help="local or ray.")]
AddressOption = Annotated[str | None, typer.Option("--address", help="Ray cluster address.")]
WorkersOption = Annotated[int | None, typer.Option("--workers", min=1, help="Ray workers.")]
ConcurrencyOption = Annotated[
    int, typer.Option("--concurrency", min=1, help="Local worker threads.")
]
ItemTimeoutOption = Annotated[
    float | None,
    typer.Option("--item-timeout", help="Seconds per entry before it is recorded as timed out."),
]
ProgressOption = Annotated[bool, typer.Option("--progress/--no-progress")]


def bfcl_command(  # noqa: PLR0913 - one parameter per command-line option
    model: ModelOption,
    category: CategoryOption = [],  # noqa: B006 - typer's empty default, never mutated
    data: DataOption = None,
    answers: AnswersOption = None,
    shipped: ShippedOption = False,
    sample: SampleOption = None,
    seed: SeedOption = 0,
    limit: LimitOption = None,
    split: SplitOption = None,
    tool_choice: ToolChoiceOption = "auto",
    parallel: ParallelOption = None,
    constrained: ConstrainedOption = True,
    format: FormatOption = None,
    prompt_style: PromptStyleOption = "native",
    max_tokens: MaxTokensOption = None,
    temperature: TemperatureOption = 0.0,
    tools_top_k: TopKOption = None,
    few_shot: FewShotOption = False,
    out: OutOption = None,
    output: OutputOption = None,
    engine: EngineOption = "local",
    address: AddressOption = None,
    workers: WorkersOption = None,
    concurrency: ConcurrencyOption = 1,
    item_timeout: ItemTimeoutOption = None,
    progress: ProgressOption = True,
) -> None:
    """Score a model on BFCL entries: accuracy per category, results as they happen."""
    from tooluse.cli.shared import check_output_paths
    from tooluse.evals.bfcl.scorer import BFCLOptions

    if engine not in ("local", "ray"):
        raise _fail(f"unknown engine {engine!r}; use local or ray")
    try:
        options = BFCLOptions(
            tool_choice=tool_choice,  # type: ignore[arg-type]
            parallel=parallel,
            constrained=constrained,
            format=format,
            prompt_style=prompt_style,  # type: ignore[arg-type]
            max_tokens=max_tokens,
            temperature=temperature,
            tools_top_k=tools_top_k,
            few_shot=few_shot,
        )
    except ValueError as exc:
        raise _fail(str(exc)) from None
    entries = _entries_or_exit(category, data, answers, shipped, sample, seed, limit, split)
    _check_prompt_style(entries, options.prompt_style)
    check_output_paths(out, output)
    _check_model(model, format)
    engine_options = {
        "engine": engine,
        "concurrency": concurrency,
        "workers": workers,
        "ray_address": address,
        "progress": progress,
        "item_timeout": item_timeout,
    }
    _run_and_report(entries, model, options, out, output, engine_options)


def register_bfcl_command(eval_app: typer.Typer) -> None:
    """Attach ``bfcl`` to the ``tooluse eval`` group."""
    eval_app.command("bfcl")(bfcl_command)
