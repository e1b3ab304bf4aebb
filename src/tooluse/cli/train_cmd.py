"""``tooluse train``: fine-tune the local model on tooluse's own environments.

::

    tooluse train sft --env math:arithmetic --size 1000 --steps 300 --out runs/sft
    tooluse train sft --data sft.jsonl --out runs/sft --max-minutes 60
    tooluse train data --recipe src/tooluse/train/recipes/generalist.toml --out runs/data
    tooluse train sft --recipe src/tooluse/train/recipes/generalist.toml --out runs/sft
    tooluse train rft --env math:arithmetic --env bfcl:simple_python=40 --rounds 3 --out runs/rft
    tooluse train grpo --env math:arithmetic --steps 20 --generations 4 --out runs/grpo
    tooluse train merge --out smollm2-trained.gguf   # the shipped adapter merged into the model

Writes ``OUT/adapter.gguf`` (a llama.cpp LoRA adapter: ``LlamaCppBackend(...,
lora_path=...)``) and ``OUT/card.json``; checkpoints go to ``OUT/checkpoints`` and the same
command run again resumes from the last one. Only the train split is used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

DataOption = Annotated[
    Path | None, typer.Option("--data", help="An SFT JSONL file (tooluse export sft writes them).")
]
EnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--env",
        "-e",
        help=(
            "An environment with a scripted teacher (math:arithmetic); repeat to mix several; "
            "NAME=N takes N tasks of it instead of --size; relevance:NAME asks the yes/no "
            "decider's question of NAME's requests."
        ),
    ),
]
SplitOption = Annotated[str, typer.Option("--split", help="The tasks' split (train only).")]
SizeOption = Annotated[
    int, typer.Option("--size", min=1, help="Teacher tasks per environment (with --env).")
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the tasks and the run.")]
StepsOption = Annotated[int, typer.Option("--steps", min=1, help="Optimiser steps.")]
BatchOption = Annotated[int, typer.Option("--batch-size", min=1, help="Examples per step.")]
RateOption = Annotated[float, typer.Option("--learning-rate", help="AdamW learning rate.")]
RankOption = Annotated[int, typer.Option("--rank", min=1, help="LoRA rank (alpha is twice it).")]
LengthOption = Annotated[int, typer.Option("--max-length", min=16, help="Tokens per example.")]
WindowOption = Annotated[
    int,
    typer.Option(
        "--length-window",
        min=1,
        help="Batches sorted by length together, so a batch pads little (1: random batches).",
    ),
]
SaveOption = Annotated[int, typer.Option("--save-steps", min=1, help="Checkpoint every N steps.")]
MinutesOption = Annotated[
    float | None, typer.Option("--max-minutes", help="Stop (with a checkpoint) after this long.")
]
BaseOption = Annotated[
    Path | None,
    typer.Option(
        "--base",
        help="Base model: a GGUF file or a transformers folder [default: the embedded SmolLM2].",
    ),
]
OutOption = Annotated[Path, typer.Option("--out", "-o", help="Run directory (resumable).")]
RecipeOption = Annotated[
    Path | None,
    typer.Option("--recipe", help="A recipe file: sources, counts, seed, leak check (TOML)."),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
CheckpointingOption = Annotated[
    bool,
    typer.Option(
        "--activation-checkpointing/--keep-activations",
        help="Recompute each layer's activations in the backward pass, or keep them (more memory).",
    ),
]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Errors a user can act on (bad data, a model that will not load, a bad option) as one
    line and exit code 2, not a traceback."""
    from tooluse.errors import BackendError
    from tooluse.train.data import TrainDataError

    try:
        yield
    except (TrainDataError, BackendError, KeyError, ValueError) as exc:
        raise _fail(str(exc.args[0] if isinstance(exc, KeyError) else exc)) from None


def _echo_adapter(card: Mapping[str, Any], out: Path) -> None:
    typer.echo(
        f"adapter {card['adapter']} ({card['adapter_bytes']} bytes), card {out / 'card.json'}"
    )


def _conversations(
    data: Path | None, envs: list[str] | None, split: str, size: int, seed: int
) -> Any:
    from tooluse.train.data import read_sft_jsonl, teacher_conversations

    if (data is None) == (not envs):
        raise _fail("give one of --data FILE, --env NAME or --recipe FILE")
    if data is not None:
        return read_sft_jsonl(data), {"file": str(data), "split": split}
    assert envs
    described = {
        "environment": envs[0] if len(envs) == 1 else list(envs),
        "split": split,
        "size": size,
        "seed": seed,
    }
    conversations = []
    for env in envs:
        name, count = _sized(env, size)
        conversations += teacher_conversations(name, split=split, size=count, seed=seed)
    return conversations, described


def _recipe_data(recipe_path: Path, out: Path) -> tuple[Any, dict[str, Any]]:
    """The recipe's dataset, built into ``out`` (or read back), and what the card says of it."""
    from tooluse.train.dataset import build_dataset
    from tooluse.train.recipe import load_recipe

    built = build_dataset(load_recipe(recipe_path), out, report=typer.echo)
    report = built.report
    _echo_shares(report)
    described = {
        "recipe": report["recipe"],
        "recipe_digest": report["recipe_digest"],
        "data": str(out / "data.jsonl"),
        "data_sha256": report["data_sha256"],
        "split": "train",
        "sources": {name: counts["conversations"] for name, counts in report["sources"].items()},
        "shares": report["shares"],
    }
    return list(built.conversations), described


def _echo_shares(report: Mapping[str, Any]) -> None:
    shares = report["shares"]
    typer.echo(
        f"{report['conversations']} conversations, {shares['turns']} training turns: "
        f"{shares['no_call']:.1%} with no call, {shares['several_calls']:.1%} with several "
        f"calls, {shares['text_after_tool_results']:.1%} answering in text after tool results"
    )


def _sized(env: str, size: int) -> tuple[str, int]:
    """``NAME=N`` as (NAME, N); a bare NAME with ``size``."""
    name, equals, count = env.rpartition("=")
    if not equals:
        return env, size
    if not count.isdigit() or int(count) < 1:
        raise _fail(f"--env {env}: the count after '=' must be a whole number of 1 or more")
    return name, int(count)


def _render(conversations: Any, base: Path | None) -> Any:
    """The training text, written as the model reads it: for a GGUF by the local backend, for
    a transformers folder with its tokenizer's special tokens and the profile its name calls for."""
    from tooluse.train.base_model import folder_turn_text, is_transformers_model
    from tooluse.train.data import render_examples

    if base is not None and is_transformers_model(base):
        from tooluse.train.runtime import import_training_stack

        return render_examples(conversations, folder_turn_text(import_training_stack(), base))
    from tooluse.local.backend import LlamaCppBackend

    backend = LlamaCppBackend(base, n_ctx=512) if base else LlamaCppBackend.default(n_ctx=512)
    try:
        return render_examples(conversations, backend)
    finally:
        backend.close()


def sft_command(  # noqa: PLR0913 - one parameter per command-line option
    out: OutOption,
    data: DataOption = None,
    env: EnvOption = None,
    split: SplitOption = "train",
    size: SizeOption = 200,
    seed: SeedOption = 0,
    steps: StepsOption = 200,
    batch_size: BatchOption = 8,
    learning_rate: RateOption = 2e-4,
    rank: RankOption = 16,
    max_length: LengthOption = 1024,
    save_steps: SaveOption = 50,
    max_minutes: MinutesOption = None,
    base: BaseOption = None,
    adapter: Annotated[
        Path | None,
        typer.Option("--adapter", help="Go on from a train sft adapter (GGUF); its rank wins."),
    ] = None,
    recipe: RecipeOption = None,
    length_window: WindowOption = 4,
    activation_checkpointing: CheckpointingOption = True,
    quiet: QuietOption = False,
) -> None:
    """Fine-tune a LoRA adapter on SFT data; write OUT/adapter.gguf and OUT/card.json."""
    from tooluse.train.data import refuse_test_split
    from tooluse.train.runtime import import_training_stack
    from tooluse.train.sft import SFTOptions, check_start_adapter, run_sft

    with _one_line_errors():
        refuse_test_split(split)
        import_training_stack()  # a missing extra is named before any work is done
        if adapter is not None:
            check_start_adapter(adapter, base)
        if recipe is not None:
            if data is not None or env:
                raise _fail("give one of --data FILE, --env NAME or --recipe FILE")
            conversations, described = _recipe_data(recipe, out / "data")
        else:
            conversations, described = _conversations(data, env, split, size, seed)
        examples = _render(conversations, base)
    typer.echo(f"{len(examples)} training turns from {len(conversations)} conversations")
    options = SFTOptions(
        out=out,
        steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        lora_rank=rank,
        lora_alpha=2.0 * rank,
        max_length=max_length,
        seed=seed,
        save_steps=save_steps,
        max_minutes=max_minutes,
        base_model=base,
        start_adapter=adapter,
        progress=not quiet,
        length_window=length_window,
        activation_checkpointing=activation_checkpointing,
    )
    with _one_line_errors():
        card = run_sft(examples, options, data=described)
    metrics = card["metrics"]
    typer.echo(
        f"{metrics['steps']} steps in {card['wall_seconds']} s, loss {metrics['loss_first']} -> "
        f"{metrics['loss_last']}, {metrics['tokens_per_second']} tokens/s"
    )
    _echo_adapter(card, out)


def data_command(
    recipe: Annotated[Path, typer.Option("--recipe", help="The recipe file (TOML).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where data.jsonl and report.json go.")],
) -> None:
    """Build a recipe's training data: each source's gold conversations on its train split,
    checked against every test split; OUT/data.jsonl and OUT/report.json."""
    from tooluse.train.dataset import build_dataset
    from tooluse.train.recipe import load_recipe

    with _one_line_errors():
        built = build_dataset(load_recipe(recipe), out, report=typer.echo)
    _echo_shares(built.report)
    typer.echo(f"data {out / 'data.jsonl'}, report {out / 'report.json'}")


RoundsOption = Annotated[int, typer.Option("--rounds", min=1, help="Sample-filter-train rounds.")]
SamplesOption = Annotated[int, typer.Option("--samples", "-k", min=1, help="Samples per task.")]
ThresholdOption = Annotated[
    float, typer.Option("--threshold", help="Keep trajectories with at least this reward.")
]
HeldOutOption = Annotated[
    int,
    typer.Option("--held-out", min=1, help="The last N train tasks, never sampled: the report."),
]
TemperatureOption = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]


def rft_command(  # noqa: PLR0913 - one parameter per command-line option
    out: OutOption,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            "-e",
            help="An environment (BFCL categories too); repeat to mix several; NAME=N takes N "
            "train tasks of it instead of --size.",
        ),
    ] = None,
    size: Annotated[int, typer.Option("--size", min=2, help="Train tasks per environment.")] = 64,
    held_out: HeldOutOption = 16,
    rounds: RoundsOption = 4,
    patience: Annotated[
        int,
        typer.Option("--patience", min=1, help="Stop after N rounds without a better validation."),
    ] = 1,
    samples: SamplesOption = 4,
    threshold: ThresholdOption = 1.0,
    temperature: TemperatureOption = 0.8,
    seed: SeedOption = 0,
    steps: StepsOption = 50,
    batch_size: BatchOption = 8,
    learning_rate: RateOption = 2e-4,
    rank: RankOption = 16,
    max_length: LengthOption = 1024,
    max_minutes: MinutesOption = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Tool rounds per trajectory.")
    ] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Per reply.")] = 160,
    adapter: Annotated[
        Path | None,
        typer.Option("--adapter", help="Round 1 samples with it (a train sft adapter)."),
    ] = None,
    recipe: Annotated[
        Path | None,
        typer.Option("--recipe", help="A recipe whose gold conversations join every round."),
    ] = None,
    rollout_model: Annotated[
        str | None,
        typer.Option(
            "--rollout-model",
            help="Sample and validate with this tooluse model instead of llama.cpp; "
            "{adapter} in it becomes the current adapter's path.",
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Trajectories at once (rollout model).")
    ] = 1,
    base: BaseOption = None,
    length_window: WindowOption = 4,
    activation_checkpointing: CheckpointingOption = True,
    quiet: QuietOption = False,
) -> None:
    """Rejection sampling over several environments: sample, keep what each task's checker
    accepts, fine-tune with the recipe's gold data; each round's validation success."""
    from tooluse.train.rft import RFTOptions, run_rft
    from tooluse.train.runtime import import_training_stack
    from tooluse.train.sft import SFTOptions

    with _one_line_errors():
        import_training_stack()  # a missing extra is named before any work is done
        environments = tuple(_sized(name, size) for name in env or ["math:arithmetic"])
    sft = SFTOptions(
        out=out,
        steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        lora_rank=rank,
        lora_alpha=2.0 * rank,
        max_length=max_length,
        seed=seed,
        save_steps=max(1, steps // 4),
        max_minutes=max_minutes,
        base_model=base,
        progress=not quiet,
        length_window=length_window,
        activation_checkpointing=activation_checkpointing,
    )
    options = RFTOptions(
        environments=environments,
        sft=sft,
        held_out=held_out,
        rounds=rounds,
        patience=patience,
        samples=samples,
        threshold=threshold,
        temperature=temperature,
        max_turns=max_turns,
        max_tokens=max_tokens,
        start_adapter=adapter,
        recipe=recipe,
        rollout_model=rollout_model,
        concurrency=concurrency,
    )
    with _one_line_errors():
        card = run_rft(options, report=typer.echo)
    typer.echo(
        f"best round {card['best_round']} ({card['stopped']}); adapter {card['adapter']}, "
        f"card {out / 'card.json'}"
    )


GenerationsOption = Annotated[
    int, typer.Option("--generations", "-g", help="Episodes per task in a group (GRPO's G, >= 2).")
]
CompletionOption = Annotated[
    int,
    typer.Option(
        "--max-completion-length",
        help="Tokens after the prompt: the model's turns and the tool results between them.",
    ),
]


def grpo_command(  # noqa: PLR0913 - one parameter per command-line option
    out: OutOption,
    env: Annotated[str, typer.Option("--env", "-e", help="The environment.")] = "math:arithmetic",
    split: SplitOption = "train",
    size: Annotated[int, typer.Option("--size", help="Train tasks.")] = 64,
    seed: SeedOption = 0,
    steps: Annotated[int, typer.Option("--steps", help="Optimiser steps.")] = 20,
    generations: GenerationsOption = 4,
    prompts_per_step: Annotated[
        int, typer.Option("--prompts-per-step", help="Tasks per step (each played G times).")
    ] = 1,
    max_completion_length: CompletionOption = 160,
    max_turns: Annotated[int, typer.Option("--max-turns", help="Model turns per episode.")] = 3,
    temperature: TemperatureOption = 1.0,
    learning_rate: RateOption = 1e-5,
    rank: RankOption = 16,
    save_steps: Annotated[int, typer.Option("--save-steps", help="Checkpoint every N steps.")] = 10,
    max_minutes: MinutesOption = None,
    adapter: Annotated[
        Path | None,
        typer.Option("--adapter", help="Go on from a train sft adapter (GGUF); its rank wins."),
    ] = None,
    base: BaseOption = None,
    quiet: QuietOption = False,
) -> None:
    """GRPO with the environment's own rewards; write OUT/adapter.gguf and OUT/card.json."""
    from tooluse.train.grpo import GRPOOptions, check_grpo_options, run_grpo
    from tooluse.train.runtime import import_training_stack

    options = GRPOOptions(
        out=out,
        environment=env,
        split=split,
        size=size,
        steps=steps,
        generations=generations,
        prompts_per_step=prompts_per_step,
        max_completion_length=max_completion_length,
        max_turns=max_turns,
        temperature=temperature,
        learning_rate=learning_rate,
        lora_rank=rank,
        lora_alpha=2.0 * rank,
        seed=seed,
        save_steps=save_steps,
        max_minutes=max_minutes,
        start_adapter=adapter,
        base_model=base,
        progress=not quiet,
    )
    with _one_line_errors():
        check_grpo_options(options)
        import_training_stack()  # a missing extra is named before any work is done
        from tooluse.local.backend import LlamaCppBackend

        renderer = LlamaCppBackend(base, n_ctx=512) if base else LlamaCppBackend.default(n_ctx=512)
        try:
            card = run_grpo(options, renderer=renderer)
        finally:
            renderer.close()
    metrics = card["metrics"]
    typer.echo(
        f"{metrics['steps']} steps in {card['wall_seconds']} s ({metrics['seconds_per_step']} s "
        f"a step), reward {metrics['reward_first']} -> {metrics['reward_last']}"
    )
    _echo_adapter(card, out)


def merge_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="The merged GGUF model to write.")],
    adapter: Annotated[
        Path | None,
        typer.Option("--adapter", help="A GGUF LoRA adapter [default: the shipped one]."),
    ] = None,
    scale: Annotated[
        float | None,
        typer.Option(
            "--scale",
            min=0.0,
            max=4.0,
            help="The adapter's strength [default: 0.5 for the "
            "shipped adapter, as `local` runs it; else 1].",
        ),
    ] = None,
    base: BaseOption = None,
) -> None:
    """Merge a LoRA adapter into its base model and write one GGUF model (changed weights in
    Q8_0), which `llama-cpp:PATH` loads without an adapter."""
    from tooluse.train.gguf_merge import merge_lora_gguf

    with _one_line_errors():
        from tooluse.local.model_files import default_model_path, trained_adapter_path

        if scale is None:
            scale = 0.5 if adapter is None else 1.0
        chosen = adapter if adapter is not None else trained_adapter_path()
        written = merge_lora_gguf(base or default_model_path(), chosen, out, scale=scale)
    typer.echo(
        f"merged {chosen.name} at scale {scale:g} into {written} ({written.stat().st_size} bytes)"
    )


def register(app: typer.Typer) -> None:
    """Attach ``train`` and its commands to the main app."""
    train_app = typer.Typer(
        help="Train the local model on tooluse's environments: `train data` (a recipe's "
        "dataset), `train sft` (LoRA, GGUF adapter), `train rft` (rejection sampling), `train grpo` (the environment's "
        "rewards) and `train merge` (an adapter merged into the model file)."
    )
    app.add_typer(train_app, name="train")
    train_app.command("data")(data_command)
    train_app.command("sft")(sft_command)
    train_app.command("rft")(rft_command)
    train_app.command("grpo")(grpo_command)
    train_app.command("merge")(merge_command)
