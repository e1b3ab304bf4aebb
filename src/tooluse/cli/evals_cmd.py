"""`tooluse eval` commands.

- ``tooluse eval bfcl --model local --limit 3``: BFCL-style function-calling accuracy;
- ``tooluse eval env --model local --env math:arithmetic -o runs.jsonl``: play a tool
  environment's tasks, report the success rate and save the trajectories (training data).
"""

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


def load_model_and_parser(model: str, format: str | None) -> tuple[Any, Any]:
    """The backend for ``--model`` and the text parser for ``--format``; exit 2 on a bad one."""
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
    return backend, parser


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
        backend, parser = load_model_and_parser(model, format)

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

    @eval_app.command("env")
    def env_command(
        model: str = typer.Option(
            ...,
            "--model",
            "-m",
            help="'local' (embedded model) or a model string like openai:gpt-4o.",
        ),
        env: str = typer.Option("math:arithmetic", "--env", "-e", help="Environment name."),
        limit: int | None = typer.Option(
            None, "--limit", "-n", min=1, help="At most this many tasks."
        ),
        no_python: bool = typer.Option(False, "--no-python", help="Offer only submit_answer."),
        format: str | None = typer.Option(
            None, "--format", "-f", help="Text tool-call format for models without native calls."
        ),
        max_turns: int | None = typer.Option(
            None, "--max-turns", min=1, help="Tool rounds per task."
        ),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Write the trajectories here as JSON Lines."
        ),
    ) -> None:
        """Run a model on a tool environment's tasks and report how many it solved."""
        from tooluse.envs import TrajectoryRunner, environment_registry, write_trajectories
        from tooluse.providers.base import SamplingParams

        try:
            environment = environment_registry.get(
                name=env, tool_types=() if no_python else ("python",)
            )
        except (KeyError, ValueError) as exc:
            typer.echo(f"error: {exc.args[0]}", err=True)
            raise typer.Exit(2) from None
        backend, parser = load_model_and_parser(model, format)
        runner = TrajectoryRunner(
            environment=environment,
            backend=backend,
            sampling_params=SamplingParams(temperature=0.0),
            system_prompt="Use the tools to solve the problem, then call submit_answer with the answer.",
            tool_call_parser=parser,
            max_turns=max_turns,
        )
        count = len(environment) if limit is None else min(limit, len(environment))
        trajectories = []
        with environment:
            for index in range(count):
                trajectory = runner.run_trajectory(task_index=index)
                trajectories.append(trajectory)
                mark = "ok  " if trajectory.success else "FAIL"
                typer.echo(
                    f"{mark} {trajectory.task_id}: answer={trajectory.answer!r} "
                    f"steps={len(trajectory.steps)} reward={trajectory.total_reward:g}",
                    err=True,
                )
        solved = sum(t.success for t in trajectories)
        typer.echo(f"{env}: solved {solved}/{len(trajectories)} ({solved / len(trajectories):.1%})")
        if output is not None:
            write_trajectories(trajectories, output)
            typer.echo(f"trajectories written to {output}")
