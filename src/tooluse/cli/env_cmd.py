"""``tooluse eval env NAME``: play a tool environment's tasks on the run engine.

::

    tooluse eval env bfcl:multi_turn_base --model local --limit 20 --out runs/bfcl
    tooluse eval env math:gsm8k --data gsm8k.jsonl --model local --samples 4 --engine ray --out runs/g
    tooluse eval env bfcl:memory_kv --model local --limit 5 --out runs/m   # memory filled first
    tooluse eval env tau2:airline --model local --user-model local --split test -k 4 --out runs/a
    tooluse eval env tau2:telecom --solo --model local --split test --out runs/t
    tooluse eval env nestful --model local --split test --out runs/n

Trajectories go to ``DIR/trajectories.jsonl`` as they finish (run the same command again to
resume), the figures to ``DIR/summary.json`` (pass@k and pass^k for k up to ``-k``), and the
summary table is printed. ``-o FILE`` also writes the trajectories of this run, in task order,
to one JSONL file (after Ctrl-C: those that finished). τ²-bench environments
(``tau2:<domain>``) take ``--user-model`` (the model playing the customer) or ``--solo``
(telecom and mock: no customer, the agent works from the ticket), and ``--task-set`` (one of
the package's task sets when no ``--split`` is given).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

NameArgument = Annotated[
    str | None,
    typer.Argument(help="Environment: math:arithmetic, math:gsm8k, bfcl:multi_turn_base, ..."),
]
ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="'local' (embedded model and adapter), 'local:base' or a model string.",
    ),
]
EnvOption = Annotated[str, typer.Option("--env", "-e", help="Same as NAME.")]
LimitOption = Annotated[
    int | None, typer.Option("--limit", "-n", min=1, help="At most this many tasks.")
]
SamplesOption = Annotated[
    int, typer.Option("--samples", "-k", min=1, help="Trajectories per task.")
]
EngineOption = Annotated[str, typer.Option("--engine", help="local (threads) or ray.")]
ConcurrencyOption = Annotated[int, typer.Option("--concurrency", "-j", min=1, help="Workers.")]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Directory for trajectories.jsonl and summary.json (resumable)."),
]
OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Also write this run's trajectories to this JSONL file."),
]
DataOption = Annotated[Path | None, typer.Option("--data", help="Data file (math:gsm8k).")]
NoPythonOption = Annotated[bool, typer.Option("--no-python", help="Offer only submit_answer.")]
FormatOption = Annotated[
    str | None,
    typer.Option("--format", "-f", help="Text tool-call format for models without native calls."),
]
MaxTurnsOption = Annotated[
    int | None, typer.Option("--max-turns", min=1, help="Tool rounds per user turn.")
]
MaxTokensOption = Annotated[int | None, typer.Option("--max-tokens", min=1, help="Per reply.")]
ToolChoiceOption = Annotated[
    str,
    typer.Option(
        "--tool-choice",
        help="auto, or required: each user turn's first reply must call a tool.",
    ),
]
SplitOption = Annotated[
    str | None,
    typer.Option("--split", help="train or test: that split's tasks (procedural: test is fixed)."),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
UserModelOption = Annotated[
    str | None,
    typer.Option("--user-model", help="tau2: the model that plays the customer (any model)."),
]
SoloOption = Annotated[
    bool, typer.Option("--solo", help="tau2 telecom/mock: no customer; work from the ticket.")
]
TaskSetOption = Annotated[
    str | None,
    typer.Option("--task-set", help="tau2: the package's task set (base, full, small, all)."),
]
TemperatureOption = Annotated[
    float,
    typer.Option(
        "--temperature",
        min=0.0,
        help="Sampling temperature (above 0, each of the -k samples draws differently).",
    ),
]


@dataclass(frozen=True, kw_only=True)
class _EnvRun:
    """What the command line asks for, once the environment is known."""

    env_name: str
    model: str
    format: str | None
    environment_options: dict[str, Any]
    tool_types: tuple[str, ...]
    max_tokens: int | None
    max_turns: int | None
    tool_choice: str = "auto"
    temperature: float = 0.0

    @property
    def system_prompt(self) -> str:
        from tooluse.envs.prompts import default_system_prompt

        return default_system_prompt(self.env_name)

    def runner(self, environment: Any) -> Any:
        """The runner of this process (loads the model; exit 2 when it cannot)."""
        from tooluse.cli.shared import load_model_and_parser
        from tooluse.envs import TrajectoryRunner
        from tooluse.providers.base import SamplingParams

        backend, parser = load_model_and_parser(self.model, self.format)
        return TrajectoryRunner(
            environment=environment,
            backend=backend,
            sampling_params=SamplingParams(
                temperature=self.temperature, max_tokens=self.max_tokens
            ),
            system_prompt=self.system_prompt,
            tool_call_parser=parser,
            max_turns=self.max_turns,
            tool_choice=self.tool_choice,
        )

    def make_runner(self) -> Any:
        """A picklable factory building the same runner inside each Ray worker."""
        from tooluse.envs import RunnerSpec, runner_from_spec

        return partial(
            runner_from_spec,
            RunnerSpec(
                environment=self.env_name,
                model=self.model,
                environment_options=self.environment_options,
                tool_types=self.tool_types,
                tool_call_parser=self.format,
                system_prompt=self.system_prompt,
                max_tokens=self.max_tokens,
                max_turns=self.max_turns,
                tool_choice=self.tool_choice,
                temperature=self.temperature,
            ),
        )


def _environment_or_exit(plan: _EnvRun) -> Any:
    from tooluse.envs import environment_registry

    try:
        return environment_registry.get(
            name=plan.env_name, tool_types=plan.tool_types, **plan.environment_options
        )
    except TypeError:
        given = ", ".join(sorted(k for k in plan.environment_options if k != "data_path"))
        typer.echo(
            f"error: environment {plan.env_name!r} does not take these options: {given}", err=True
        )
        raise typer.Exit(2) from None
    except (KeyError, ValueError, ImportError) as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None


def _print_result(result: Any, env_name: str, directory: Path, output: Path | None) -> None:
    from tooluse.evals.evaluation import format_summary

    ok = [r for r in result.records if not r.get("error")]
    solved = sum(bool(r["success"]) for r in ok)
    for record in result.records:
        if record.get("error"):
            typer.echo(f"ERROR {record['key']}: {record['error']}", err=True)
    typer.echo(format_summary(result.summary))
    rate = solved / len(ok) if ok else 0.0
    typer.echo(f"{env_name}: solved {solved}/{len(ok)} ({rate:.1%})")
    typer.echo(f"trajectories and summary in {directory}")
    if output is not None:
        _write_records(output, result.records)
        typer.echo(f"trajectories written to {output}")


def _write_records(output: Path, records: Sequence[dict[str, Any]]) -> Path:
    """``records`` as JSON Lines in ``output`` (also what an interrupted run finished)."""
    with output.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    return output


def env_command(  # noqa: PLR0913 - one parameter per command-line option
    name: NameArgument = None,
    model: ModelOption = ...,  # type: ignore[assignment]
    env: EnvOption = "math:arithmetic",
    limit: LimitOption = None,
    samples: SamplesOption = 1,
    engine: EngineOption = "local",
    concurrency: ConcurrencyOption = 1,
    out: OutOption = None,
    output: OutputOption = None,
    data: DataOption = None,
    no_python: NoPythonOption = False,
    format: FormatOption = None,
    max_turns: MaxTurnsOption = None,
    max_tokens: MaxTokensOption = None,
    split: SplitOption = None,
    quiet: QuietOption = False,
    tool_choice: ToolChoiceOption = "auto",
    user_model: UserModelOption = None,
    solo: SoloOption = False,
    task_set: TaskSetOption = None,
    temperature: TemperatureOption = 0.0,
) -> None:
    """Run a model on a tool environment's tasks; print the summary table."""
    from tooluse.cli.shared import check_output_paths, interruptible_run
    from tooluse.evals.engine import EngineError

    if engine not in ("local", "ray"):
        typer.echo(f"error: unknown engine {engine!r}; use local or ray", err=True)
        raise typer.Exit(2)
    if tool_choice not in ("auto", "required"):
        typer.echo(f"error: --tool-choice is auto or required, not {tool_choice!r}", err=True)
        raise typer.Exit(2)
    environment_options: dict[str, Any] = {"data_path": str(data)} if data is not None else {}
    if split is not None:
        environment_options["split"] = split
    options = {"user_model": user_model, "task_set": task_set, "solo": solo or None}
    environment_options.update({k: v for k, v in options.items() if v is not None})
    plan = _EnvRun(
        env_name=name or env,
        model=model,
        format=format,
        environment_options=environment_options,
        tool_types=() if no_python else ("python",),
        max_tokens=max_tokens,
        max_turns=max_turns,
        tool_choice=tool_choice,
        temperature=temperature,
    )
    environment = _environment_or_exit(plan)
    check_output_paths(out, output)
    runner = plan.runner(environment)
    count = len(environment) if limit is None else min(limit, len(environment))
    directory = out if out is not None else Path(tempfile.mkdtemp(prefix="tooluse-eval-"))
    try:
        save = partial(_write_records, output) if output is not None else None
        with interruptible_run(out, scratch=directory, save=save), environment:
            result = runner.run_evaluation(
                range(count),
                out=directory,
                samples_per_task=samples,
                concurrency=concurrency,
                engine=engine,
                make_runner=plan.make_runner() if engine == "ray" else None,
                progress=not quiet,
            )
    except (EngineError, ImportError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    _print_result(result, plan.env_name, directory, output)


def register_env_command(eval_app: typer.Typer) -> None:
    """Attach ``env`` to the ``eval`` group."""
    eval_app.command("env")(env_command)
