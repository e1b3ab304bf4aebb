"""Rejection-sampling fine-tuning (expert iteration) of the local model on an environment.

Each round samples ``samples`` trajectories per task with the current model on llama.cpp
(the base model or ``start_adapter``, then base + the last round's adapter), keeps those whose total reward
reaches ``threshold``, fine-tunes a fresh adapter on everything kept so far
(:func:`tooluse.train.sft.run_sft`) and reports the success on a held-out slice of the train
split: the last ``held_out`` tasks, never sampled from. Rounds live in ``OUT/round-N``; a
round with a ``card.json`` is done, so a run started again goes on from the first unfinished
round (and that round's SFT resumes from its checkpoint).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooluse.providers.base import Backend
from tooluse.train.data import (
    Conversation,
    TrainDataError,
    conversation_from_record,
    refuse_test_split,
    render_examples,
)
from tooluse.train.sft import ADAPTER_FILE, CARD_FILE, SFTOptions, run_sft, write_json

if TYPE_CHECKING:
    from tooluse.local.backend import LlamaCppBackend

__all__ = ["RFTOptions", "run_rft"]

KEPT_FILE = "kept.jsonl"


@dataclass(frozen=True, kw_only=True)
class RFTOptions:
    """One rejection-sampling run: the environment's train tasks, rounds, sampling, SFT."""

    environment: str
    sft: SFTOptions
    size: int = 64
    held_out: int = 16
    rounds: int = 2
    samples: int = 4
    threshold: float = 1.0
    temperature: float = 0.8
    max_tokens: int = 160
    #: Tool rounds per trajectory (None: the environment's ``max_steps``).
    max_turns: int | None = None
    #: The adapter round 1 samples with (a ``train sft`` adapter); None: the base model.
    start_adapter: Path | None = None


def _backend(adapter: Path | None) -> LlamaCppBackend:
    from tooluse.local.backend import LlamaCppBackend

    return LlamaCppBackend.default(n_ctx=2048, lora_path=adapter)


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
        system_prompt=default_system_prompt(env.name),
        max_turns=options.max_turns,
    )


def _play_all(backend: Backend, jobs: Sequence[tuple[Any, int]]) -> list[Any]:
    """``runner.run_trajectory(task_index=index)`` for each ``(runner, index)``, in order,
    as many at once as the model decodes together (its batch size)."""
    at_once = max(1, int(getattr(backend, "batch_size", 1) or 1))
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="tooluse-rft") as pool:
        return list(pool.map(lambda job: job[0].run_trajectory(task_index=job[1]), jobs))


def _sample(env: Any, backend: Backend, options: RFTOptions, round_number: int) -> list[Any]:
    """``samples`` trajectories of each train task, sample by sample; the samples of one task
    are played together (one batch, their shared prompt read once)."""
    runners = [
        _runner(env, backend, options, options.temperature, seed)
        for seed in (
            options.sft.seed * 1_000 + round_number * 100 + sample
            for sample in range(options.samples)
        )
    ]
    tasks = range(options.size - options.held_out)
    played = _play_all(backend, [(runner, index) for index in tasks for runner in runners])
    by_task = {
        (index, sample): played[position * options.samples + sample]
        for position, index in enumerate(tasks)
        for sample in range(options.samples)
    }
    return [by_task[index, sample] for sample in range(options.samples) for index in tasks]


def _held_out_success(env: Any, backend: Backend, options: RFTOptions) -> float:
    runner = _runner(env, backend, options, 0.0, options.sft.seed)
    indices = range(options.size - options.held_out, options.size)
    played = _play_all(backend, [(runner, index) for index in indices])
    return sum(trajectory.success for trajectory in played) / len(indices)


def _kept_so_far(out: Path, before: int) -> list[Conversation]:
    conversations = []
    for number in range(1, before + 1):
        path = out / f"round-{number}" / KEPT_FILE
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            conversations.append(
                conversation_from_record(json.loads(line), f"{path.name}:{line_number}")
            )
    return conversations


def _round(
    env: Any, options: RFTOptions, number: int, report: Callable[[str], None]
) -> dict[str, Any]:
    out = options.sft.out / f"round-{number}"
    previous = (
        options.sft.out / f"round-{number - 1}" / ADAPTER_FILE
        if number > 1
        else options.start_adapter
    )
    backend = _backend(previous)
    try:
        trajectories = _sample(env, backend, options, number)
        kept = [t for t in trajectories if t.total_reward >= options.threshold]
        out.mkdir(parents=True, exist_ok=True)
        with (out / KEPT_FILE).open("w", encoding="utf-8") as handle:
            for trajectory in kept:
                handle.write(trajectory.to_json() + "\n")
        conversations = _kept_so_far(options.sft.out, number)
        report(
            f"round {number}: kept {len(kept)} of {len(trajectories)} trajectories "
            f"(reward >= {options.threshold}); training on {len(conversations)}"
        )
        if not conversations:
            raise TrainDataError(
                f"round {number}: no trajectory reached reward {options.threshold} "
                f"(0 of {len(trajectories)}); nothing to train on (lower --threshold)"
            )
        examples = render_examples(conversations, backend)
    finally:
        backend.close()
    described = {"environment": options.environment, "split": "train", "round": number}
    card = run_sft(examples, replace(options.sft, out=out), data=described)
    tuned = _backend(out / ADAPTER_FILE)
    try:
        card["held_out_success"] = _held_out_success(env, tuned, options)
    finally:
        tuned.close()
    card["kept"] = len(kept)
    card["sampled"] = len(trajectories)
    write_json(out / CARD_FILE, card)
    report(f"round {number}: held-out success {card['held_out_success']:.1%}")
    return card


def run_rft(options: RFTOptions, report: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run (or go on with) the rounds; returns each round's card."""
    from tooluse.envs import environment_registry

    refuse_test_split("train")
    if not 0 < options.held_out < options.size:
        raise TrainDataError("--held-out must be at least 1 and less than --size")
    env = environment_registry.get(
        name=options.environment, split="train", size=options.size, seed=options.sft.seed
    )
    cards = []
    with env:
        base_done = options.sft.out / "base.json"
        if not base_done.exists():
            options.sft.out.mkdir(parents=True, exist_ok=True)
            backend = _backend(None)
            try:
                write_json(
                    base_done, {"held_out_success": _held_out_success(env, backend, options)}
                )
            finally:
                backend.close()
        base = json.loads(base_done.read_text())["held_out_success"]
        start = "base model" if options.start_adapter is None else str(options.start_adapter)
        report(f"round 0 ({start}): held-out success {base:.1%}")
        for number in range(1, options.rounds + 1):
            card_path = options.sft.out / f"round-{number}" / CARD_FILE
            if card_path.exists():
                cards.append(json.loads(card_path.read_text()))
                report(f"round {number}: done before, held-out {cards[-1]['held_out_success']:.1%}")
                continue
            cards.append(_round(env, options, number, report))
    return cards
