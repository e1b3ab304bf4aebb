"""``tooluse eval env NAME``: play a tool environment's tasks on the run engine.

::

    tooluse eval env bfcl:multi_turn_base --model local --limit 20 --out runs/bfcl
    tooluse eval env math:gsm8k --data gsm8k.jsonl --model local --samples 4 --engine ray --out runs/g

Trajectories go to ``DIR/trajectories.jsonl`` as they finish (run the same command again to
resume), the figures to ``DIR/summary.json``, and the summary table is printed. ``-o FILE``
also writes the trajectories of this run, in task order, to one JSONL file.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import typer

MATH_PROMPT = "Use the tools to solve the problem, then call submit_answer with the answer."
BFCL_PROMPT = (
    "You can call the given functions to carry out the user's requests. Call them as needed; "
    "when a request is done, reply briefly without calling a function."
)


def default_system_prompt(environment: str) -> str:
    """The system prompt the command uses for an environment."""
    return BFCL_PROMPT if environment.startswith("bfcl:") else MATH_PROMPT


def register_env_command(eval_app: typer.Typer) -> None:
    """Attach ``env`` to the ``eval`` group."""

    @eval_app.command("env")
    def env_command(
        name: str | None = typer.Argument(
            None, help="Environment: math:arithmetic, math:gsm8k, bfcl:multi_turn_base, ..."
        ),
        model: str = typer.Option(
            ..., "--model", "-m", help="'local' (embedded model) or a model string."
        ),
        env: str = typer.Option("math:arithmetic", "--env", "-e", help="Same as NAME."),
        limit: int | None = typer.Option(
            None, "--limit", "-n", min=1, help="At most this many tasks."
        ),
        samples: int = typer.Option(1, "--samples", "-k", min=1, help="Trajectories per task."),
        engine: str = typer.Option("local", "--engine", help="local (threads) or ray."),
        concurrency: int = typer.Option(1, "--concurrency", "-j", min=1, help="Workers."),
        out: Path | None = typer.Option(
            None, "--out", help="Directory for trajectories.jsonl and summary.json (resumable)."
        ),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Also write this run's trajectories to this JSONL file."
        ),
        data: Path | None = typer.Option(None, "--data", help="Data file (math:gsm8k)."),
        no_python: bool = typer.Option(False, "--no-python", help="Offer only submit_answer."),
        format: str | None = typer.Option(
            None, "--format", "-f", help="Text tool-call format for models without native calls."
        ),
        max_turns: int | None = typer.Option(
            None, "--max-turns", min=1, help="Tool rounds per user turn."
        ),
        max_tokens: int | None = typer.Option(None, "--max-tokens", min=1, help="Per reply."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    ) -> None:
        """Run a model on a tool environment's tasks; print the summary table."""
        from tooluse.cli.shared import load_model_and_parser
        from tooluse.envs import (
            RunnerSpec,
            TrajectoryRunner,
            environment_registry,
            runner_from_spec,
        )
        from tooluse.evals.engine import EngineError
        from tooluse.evals.evaluation import format_summary
        from tooluse.providers.base import SamplingParams

        env_name = name or env
        if engine not in ("local", "ray"):
            typer.echo(f"error: unknown engine {engine!r}; use local or ray", err=True)
            raise typer.Exit(2)
        options: dict[str, Any] = {"data_path": str(data)} if data is not None else {}
        tool_types = () if no_python else ("python",)
        try:
            environment = environment_registry.get(name=env_name, tool_types=tool_types, **options)
        except (KeyError, ValueError, ImportError) as exc:
            typer.echo(f"error: {exc.args[0]}", err=True)
            raise typer.Exit(2) from None
        from tooluse.cli.shared import check_output_paths

        check_output_paths(out, output)
        backend, parser = load_model_and_parser(model, format)
        system_prompt = default_system_prompt(env_name)
        runner = TrajectoryRunner(
            environment=environment,
            backend=backend,
            sampling_params=SamplingParams(temperature=0.0, max_tokens=max_tokens),
            system_prompt=system_prompt,
            tool_call_parser=parser,
            max_turns=max_turns,
        )
        make_runner = None
        if engine == "ray":
            from functools import partial

            make_runner = partial(
                runner_from_spec,
                RunnerSpec(
                    environment=env_name,
                    model=model,
                    environment_options=options,
                    tool_types=tool_types,
                    tool_call_parser=format,
                    system_prompt=system_prompt,
                    max_tokens=max_tokens,
                    max_turns=max_turns,
                ),
            )
        count = len(environment) if limit is None else min(limit, len(environment))
        directory = out if out is not None else Path(tempfile.mkdtemp(prefix="tooluse-eval-"))
        try:
            with environment:
                result = runner.run_evaluation(
                    range(count),
                    out=directory,
                    samples_per_task=samples,
                    concurrency=concurrency,
                    engine=engine,  # type: ignore[arg-type]
                    make_runner=make_runner,
                    progress=not quiet,
                )
        except (EngineError, ImportError, ValueError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        summary = result.summary
        ok = [r for r in result.records if not r.get("error")]
        solved = sum(bool(r["success"]) for r in ok)
        for record in result.records:
            if record.get("error"):
                typer.echo(f"ERROR {record['key']}: {record['error']}", err=True)
        typer.echo(format_summary(summary))
        rate = solved / len(ok) if ok else 0.0
        typer.echo(f"{env_name}: solved {solved}/{len(ok)} ({rate:.1%})")
        typer.echo(f"trajectories and summary in {directory}")
        if output is not None:
            with output.open("w", encoding="utf-8") as handle:
                for record in result.records:
                    handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            typer.echo(f"trajectories written to {output}")
