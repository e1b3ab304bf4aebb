"""Rejection-sampling fine-tuning (expert iteration), the main training loop, over several
environments and BFCL categories at once.

Each round samples ``samples`` trajectories per train task of every environment with the
current model (the ``samples`` of a task are played together on the batched local model),
keeps those the task's own checker accepts (the environment's total reward reaching
``threshold``: BFCL's AST checker for its single-turn categories, where a right decision not to
call counts like a right call; the datasets' graders; the multi-turn state checks), trains a
fresh adapter on everything kept so far plus the recipe's gold conversations
(:func:`tooluse.train.sft.run_sft`), and measures it on the validation slice: the last
``held_out`` tasks of each environment's train split, never sampled, played greedily.

Stopping (the patience rule): after ``rounds`` rounds, or as soon as ``patience`` rounds in a
row end without a validation success (the mean over the environments, each counting alike)
above the best so far, the start model's included. The run's adapter is the best round's.

The current model is the base (or ``start_adapter``), then base + the last round's adapter, run
by llama.cpp. ``rollout_model`` samples and validates with any tooluse backend instead (an
OpenAI-compatible server...): ``{adapter}`` in it becomes the current adapter's path (a
``#lora={adapter}`` suffix is dropped while there is none); a string without it is a fixed
model (rejection sampling from a stronger model: its validation does not change, so patience
ends the run after ``patience`` rounds).

Rounds live in ``OUT/round-N`` (``kept.jsonl``, the adapter, ``card.json``); a round with a
card is done, so a run started again goes on after it. ``OUT/card.json`` holds the learning
curve: each round's samples and kept trajectories per environment, its training and its
validation success per environment.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tooluse.providers.base import Backend
from tooluse.train.base_model import is_transformers_model
from tooluse.train.conversation import Conversation
from tooluse.train.data import (
    TrainDataError,
    TurnRenderer,
    conversation_from_record,
    render_examples,
    train_environment,
)
from tooluse.train.sft import ADAPTER_FILE, CARD_FILE, PEFT_DIR, SFTOptions, run_sft, write_json

if TYPE_CHECKING:
    from tooluse.local.backend import LlamaCppBackend

__all__ = ["RFTOptions", "run_rft"]

KEPT_FILE = "kept.jsonl"
_NO_ADAPTER_YET = "#lora={adapter}"


@dataclass(frozen=True, kw_only=True)
class RFTOptions:
    """One rejection-sampling run: the environments' train tasks, rounds, sampling, SFT."""

    sft: SFTOptions
    #: ``(environment, train tasks)`` pairs; each one's last ``held_out`` tasks validate.
    environments: tuple[tuple[str, int], ...] = (("math:arithmetic", 64),)
    held_out: int = 16
    rounds: int = 4
    patience: int = 1
    samples: int = 4
    threshold: float = 1.0
    temperature: float = 0.8
    max_tokens: int = 160
    #: Tool rounds per trajectory (None: the environment's ``max_steps``).
    max_turns: int | None = None
    #: The adapter round 1 samples with (a ``train sft`` adapter); None: the base model.
    start_adapter: Path | None = None
    #: A recipe whose gold conversations join every round's training.
    recipe: Path | None = None
    #: A tooluse model string that samples and validates (see the module).
    rollout_model: str | None = None
    #: Trajectories played at once with a rollout model that does not say (HTTP backends).
    concurrency: int = 1


@dataclass(frozen=True, kw_only=True)
class _Source:
    """One environment of the run, opened on its train split."""

    name: str
    env: Any
    held_out: int

    @property
    def sampled_tasks(self) -> range:
        return range(len(self.env) - self.held_out)

    @property
    def validation_tasks(self) -> range:
        return range(len(self.env) - self.held_out, len(self.env))


def _backend(adapter: Path | None, options: RFTOptions | None = None) -> Backend:
    """The current model: base (+ ``adapter``) on llama.cpp, or the rollout model."""
    if options is not None and options.rollout_model:
        from tooluse.providers.model_registry import load_model

        spec = options.rollout_model
        if adapter is None:
            spec = spec.replace(_NO_ADAPTER_YET, "")
        if "{adapter}" in spec and adapter is None:
            raise TrainDataError(
                "the rollout model names {adapter} but the first round has none (give --adapter)"
            )
        return load_model(spec.replace("{adapter}", str(adapter)))
    return _local_backend(adapter, options)


def _local_backend(adapter: Path | None, options: RFTOptions | None) -> LlamaCppBackend:
    """The base (+ ``adapter``) on llama.cpp."""
    from tooluse.local.backend import LlamaCppBackend

    base = options.sft.base_model if options is not None else None
    if base is None:
        return LlamaCppBackend.default(n_ctx=2048, lora_path=adapter)
    return LlamaCppBackend(base, n_ctx=2048, lora_path=adapter)


def _close(backend: Backend) -> None:
    """Free a backend that holds a model (an HTTP backend has nothing to free)."""
    close = getattr(backend, "close", None)
    if callable(close):
        close()


def _runner(env: Any, backend: Backend, options: RFTOptions, temperature: float, seed: int) -> Any:
    from tooluse.envs import TrajectoryRunner
    from tooluse.envs.prompts import default_system_prompt
    from tooluse.providers.base import SamplingParams

    return TrajectoryRunner(
        environment=env,
        backend=backend,
        sampling_params=SamplingParams(
            temperature=temperature, max_tokens=options.max_tokens, seed=seed
        ),
        system_prompt=default_system_prompt(env.name) or None,
        max_turns=options.max_turns,
    )


def _play_all(backend: Backend, jobs: Sequence[tuple[Any, int]], concurrency: int = 1) -> list[Any]:
    """``runner.run_trajectory(task_index=index)`` for each ``(runner, index)``, in order,
    as many at once as the model decodes together (its batch size)."""
    at_once = max(1, int(getattr(backend, "batch_size", 0) or concurrency))
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="tooluse-rft") as pool:
        return list(pool.map(lambda job: job[0].run_trajectory(task_index=job[1]), jobs))


def _sample(
    env: Any,
    backend: Backend,
    options: RFTOptions,
    round_number: int,
    tasks: range | None = None,
) -> list[Any]:
    """``samples`` trajectories of each task (default: all but the validation slice), sample
    by sample; the samples of one task are played together (one batch, their shared prompt
    read once)."""
    runners = [
        _runner(env, backend, options, options.temperature, seed)
        for seed in (
            options.sft.seed * 1_000 + round_number * 100 + sample
            for sample in range(options.samples)
        )
    ]
    tasks = tasks if tasks is not None else range(len(env) - options.held_out)
    jobs = [(runner, index) for index in tasks for runner in runners]
    played = _play_all(backend, jobs, options.concurrency)
    by_task = {
        (index, sample): played[position * options.samples + sample]
        for position, index in enumerate(tasks)
        for sample in range(options.samples)
    }
    return [by_task[index, sample] for sample in range(options.samples) for index in tasks]


def _validation(sources: Sequence[_Source], backend: Backend, options: RFTOptions) -> dict:
    """Greedy success on each environment's validation slice, and their mean."""
    by_env = {}
    for source in sources:
        runner = _runner(source.env, backend, options, 0.0, options.sft.seed)
        jobs = [(runner, index) for index in source.validation_tasks]
        played = _play_all(backend, jobs, options.concurrency)
        by_env[source.name] = round(sum(t.success for t in played) / len(played), 4)
    return {"by_environment": by_env, "mean": round(sum(by_env.values()) / len(by_env), 4)}


def _kept_so_far(out: Path, before: int) -> list[Conversation]:
    conversations = []
    for number in range(1, before + 1):
        path = out / f"round-{number}" / KEPT_FILE
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            conversations.append(
                conversation_from_record(json.loads(line), f"{path.name}:{line_number}")
            )
    return conversations


def _adapter_of(options: RFTOptions, round_out: Path) -> Path:
    """A round's adapter as the next model runs it: GGUF for llama.cpp, else the peft folder."""
    base = options.sft.base_model
    if base is not None and is_transformers_model(base):
        return round_out / PEFT_DIR
    return round_out / ADAPTER_FILE


def _renderer(options: RFTOptions, backend: Backend) -> TurnRenderer:
    """What writes the training text: the base's own renderer."""
    base = options.sft.base_model
    if base is not None and is_transformers_model(base):
        from tooluse.train.base_model import folder_turn_text
        from tooluse.train.runtime import import_training_stack

        return folder_turn_text(import_training_stack(), base)  # type: ignore[no-any-return]
    if hasattr(backend, "render_turn"):
        return cast(TurnRenderer, backend)
    local = _local_backend(None, options)
    try:
        return local.turn_text
    finally:
        local.close()


def _sample_and_keep(
    sources: Sequence[_Source], backend: Backend, options: RFTOptions, number: int, out: Path
) -> tuple[list[Any], dict[str, int], dict[str, int]]:
    kept: list[Any] = []
    sampled: dict[str, int] = {}
    kept_by_env: dict[str, int] = {}
    for source in sources:
        trajectories = _sample(source.env, backend, options, number, source.sampled_tasks)
        good = [t for t in trajectories if t.total_reward >= options.threshold]
        sampled[source.name], kept_by_env[source.name] = len(trajectories), len(good)
        kept += good
    out.mkdir(parents=True, exist_ok=True)
    with (out / KEPT_FILE).open("w", encoding="utf-8") as handle:
        for trajectory in kept:
            handle.write(trajectory.to_json() + "\n")
    return kept, sampled, kept_by_env


def _round(
    sources: Sequence[_Source],
    gold: Sequence[Conversation],
    options: RFTOptions,
    number: int,
    report: Callable[[str], None],
) -> dict[str, Any]:
    out = options.sft.out / f"round-{number}"
    previous = (
        _adapter_of(options, options.sft.out / f"round-{number - 1}")
        if number > 1
        else options.start_adapter
    )
    started = time.monotonic()
    backend = _backend(previous, options)
    try:
        kept, sampled, kept_by_env = _sample_and_keep(sources, backend, options, number, out)
        conversations = _kept_so_far(options.sft.out, number)
        report(
            f"round {number}: kept {len(kept)} of {sum(sampled.values())} trajectories "
            f"(reward >= {options.threshold}; "
            + ", ".join(f"{name} {kept_by_env[name]}/{sampled[name]}" for name in sampled)
            + f"); training on {len(conversations)} and {len(gold)} gold"
        )
        if not conversations and not gold:
            raise TrainDataError(
                f"round {number}: no trajectory reached reward {options.threshold} "
                f"(0 of {sum(sampled.values())}); nothing to train on (lower --threshold)"
            )
        examples = render_examples([*conversations, *gold], _renderer(options, backend))
    finally:
        _close(backend)
    sample_seconds = time.monotonic() - started
    described = {
        "environments": [s.name for s in sources],
        "split": "train",
        "round": number,
        "recipe": str(options.recipe) if options.recipe else None,
    }
    card = run_sft(examples, replace(options.sft, out=out), data=described)
    tuned = _backend(_adapter_of(options, out), options)
    try:
        validation = _validation(sources, tuned, options)
    finally:
        _close(tuned)
    card.update(
        round=number,
        sampled=sampled,
        kept=kept_by_env,
        training_conversations=len(conversations),
        gold_conversations=len(gold),
        sample_seconds=round(sample_seconds, 1),
        validation=validation,
        held_out_success=validation["mean"],
    )
    write_json(out / CARD_FILE, card)
    report(f"round {number}: validation {_described(validation)}")
    return card


def _described(validation: dict[str, Any]) -> str:
    parts = ", ".join(f"{name} {value:.1%}" for name, value in validation["by_environment"].items())
    return f"{validation['mean']:.1%} ({parts})"


def _open_sources(options: RFTOptions) -> list[_Source]:
    sources = []
    for name, size in options.environments:
        if not 0 < options.held_out < size:
            raise TrainDataError(
                f"{name}: --held-out must be at least 1 and less than its {size} tasks"
            )
        env = train_environment(name, "train", size, options.sft.seed, {})
        if len(env) <= options.held_out:
            raise TrainDataError(f"{name}: {len(env)} train tasks, not more than --held-out")
        sources.append(_Source(name=name, env=env, held_out=options.held_out))
    return sources


def _gold(
    options: RFTOptions, sources: Sequence[_Source], report: Callable[[str], None]
) -> list[Conversation]:
    """The recipe's gold conversations, less those that hold a validation task's prompt.

    BFCL's train splits feed both the recipe and the environments' train tasks, so without
    this a round's validation would score tasks its training saw (7 of simple_python's 8
    with the generalist recipe)."""
    if options.recipe is None:
        return []
    from tooluse.train.dataset import build_dataset
    from tooluse.train.leaks import LeakIndex, TestItem
    from tooluse.train.recipe import load_recipe

    built = build_dataset(load_recipe(options.recipe), options.sft.out / "data", report=report)
    index = LeakIndex(
        TestItem(source=source.name, id=str(number), text=source.env.tasks[number].prompt)
        for source in sources
        for number in source.validation_tasks
    )
    kept = [
        conversation
        for conversation in built.conversations
        if not any(
            message.role == "user" and index.find(message.content) is not None
            for message in conversation.messages
        )
    ]
    left_out = len(built.conversations) - len(kept)
    if left_out:
        report(f"gold data: {left_out} conversations hold a validation task and are left out")
    return kept


def _check(options: RFTOptions) -> None:
    base = options.sft.base_model
    if base is not None and is_transformers_model(base) and not options.rollout_model:
        raise TrainDataError(
            "a transformers base needs --rollout-model (llama.cpp runs GGUF bases only)"
        )
    if options.rounds < 1 or options.patience < 1 or options.samples < 1:
        raise TrainDataError("--rounds, --patience and --samples must be at least 1")


def run_rft(options: RFTOptions, report: Callable[[str], None] = print) -> dict[str, Any]:
    """Run (or go on with) the rounds; returns the run's card (``OUT/card.json``)."""
    _check(options)
    sources = _open_sources(options)
    try:
        return _rounds(sources, _gold(options, sources, report), options, report)
    finally:
        for source in sources:
            source.env.close()


def _start(sources: Sequence[_Source], options: RFTOptions) -> dict[str, Any]:
    path = options.sft.out / "round-0.json"
    if path.exists():
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    options.sft.out.mkdir(parents=True, exist_ok=True)
    backend = _backend(options.start_adapter, options)
    try:
        validation = _validation(sources, backend, options)
    finally:
        _close(backend)
    start = {"round": 0, "model": str(options.start_adapter or "base"), "validation": validation}
    write_json(path, start)
    return start


def _rounds(
    sources: Sequence[_Source],
    gold: Sequence[Conversation],
    options: RFTOptions,
    report: Callable[[str], None],
) -> dict[str, Any]:
    start = _start(sources, options)
    report(f"round 0 ({start['model']}): validation {_described(start['validation'])}")
    curve = [start]
    best, best_round, stale, stopped = start["validation"]["mean"], 0, 0, "rounds"
    for number in range(1, options.rounds + 1):
        card_path = options.sft.out / f"round-{number}" / CARD_FILE
        if card_path.exists():
            card = json.loads(card_path.read_text())
            report(f"round {number}: done before, validation {_described(card['validation'])}")
        else:
            card = _round(sources, gold, options, number, report)
        curve.append(_curve_row(card))
        if card["validation"]["mean"] > best:
            best, best_round, stale = card["validation"]["mean"], number, 0
        else:
            stale += 1
        _write_run_card(options, curve, best_round, "running")
        if stale >= options.patience and number < options.rounds:
            stopped = f"no better validation for {stale} round(s) (patience {options.patience})"
            report(f"stopping after round {number}: {stopped}; best round {best_round}")
            break
    return _write_run_card(options, curve, best_round, stopped)


def _curve_row(card: dict[str, Any]) -> dict[str, Any]:
    metrics = card.get("metrics", {})
    return {
        "round": card["round"],
        "sampled": card["sampled"],
        "kept": card["kept"],
        "training_conversations": card["training_conversations"],
        "gold_conversations": card["gold_conversations"],
        "steps": metrics.get("steps"),
        "loss_first": metrics.get("loss_first"),
        "loss_last": metrics.get("loss_last"),
        "sample_seconds": card.get("sample_seconds"),
        "train_seconds": card.get("wall_seconds"),
        "validation": card["validation"],
    }


def _write_run_card(
    options: RFTOptions, curve: list[dict[str, Any]], best_round: int, stopped: str
) -> dict[str, Any]:
    out = options.sft.out
    adapter = (
        _adapter_of(options, out / f"round-{best_round}") if best_round else options.start_adapter
    )
    card = {
        "method": "rft",
        "environments": [{"name": n, "tasks": s} for n, s in options.environments],
        "held_out": options.held_out,
        "samples": options.samples,
        "threshold": options.threshold,
        "patience": options.patience,
        "recipe": str(options.recipe) if options.recipe else None,
        "rollout_model": options.rollout_model,
        "best_round": best_round,
        "adapter": str(adapter) if adapter else None,
        "stopped": stopped,
        "curve": curve,
    }
    write_json(out / CARD_FILE, card)
    return card
