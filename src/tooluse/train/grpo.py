"""GRPO on an environment: LoRA on the GGUF's weights with TRL's GRPOTrainer, each completion
rewarded by the environment itself, exported as a llama.cpp GGUF LoRA adapter with a
``card.json`` beside it.

::

    options = GRPOOptions(out=Path("runs/grpo"), environment="math:arithmetic", steps=20)
    card = run_grpo(options, renderer=LlamaCppBackend.default(n_ctx=512))
    LlamaCppBackend.default(lora_path=card["adapter"])

Why ``rollout_func`` and not TRL's ``environment_factory``/``tools``: TRL's own tool loop
writes the prompt with the tokenizer's chat template (``tools=`` as Python functions) and reads
calls with a response schema it knows only for some templates (Qwen, Llama 3, GPT-OSS...).
SmolLM2's template has no tools section and no schema, so TRL refuses it; and even for a
model it accepts, the text would not be what the local backend shows the model (the profile's
system prompt, its ``<tool_call>[...]</tool_call>`` list), so the adapter would learn a format
it never meets at inference. TRL's loop also runs each call on its own and keeps generating
until the model stops calling, where a tooluse environment steps a whole turn of calls and
ends the episode at ``submit_answer``. So a ``rollout_func`` plays each episode
(:mod:`tooluse.train.rollout`): the trainer's model samples every turn, the environment runs
the calls (the sandboxed ``python`` really runs) and grades the episode; the completion is
the model's turns plus the tool results between them, with the results masked out of the loss
(``env_mask``). The reward function hands back the environment's own total reward.

Checkpoints go to ``OUT/checkpoints`` every ``save_steps``; a run started again on the same
``OUT`` resumes from the last one. ``max_minutes`` stops a run cleanly (checkpoint and adapter
written). ``start_adapter`` goes on from a ``train sft`` GGUF adapter (read back into peft).

What a CPU allows: generation is transformers' ``generate`` on float32 weights, the step's
cost. A group's rewards that are all equal give no gradient (GRPO learns from differences
within a group), and the base model solves almost no ``math:arithmetic`` task, so its steps
mostly learn nothing; start from an SFT adapter so that some of a group's episodes succeed.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tooluse.train.base_model import load_base_model
from tooluse.train.data import TrainDataError, refuse_test_split
from tooluse.train.rollout import (
    RolloutRenderer,
    RolloutSettings,
    TokenCodec,
    first_messages,
    play_rollouts,
)
from tooluse.train.runtime import TrainingStack, import_training_stack
from tooluse.train.sft import (
    ADAPTER_FILE,
    CARD_FILE,
    check_start_adapter,
    export_adapter,
    lora_setup,
    start_from_adapter,
    stop_after,
    write_json,
)

__all__ = [
    "GRPOOptions",
    "check_grpo_options",
    "environment_reward",
    "run_grpo",
    "start_from_adapter",
]

_PROCEDURAL = ("math:arithmetic", "reasoning_gym:")


@dataclass(frozen=True, kw_only=True)
class GRPOOptions:
    """One GRPO run's settings (``base_model`` None: the embedded SmolLM2 GGUF)."""

    out: Path
    environment: str = "math:arithmetic"
    split: str = "train"
    #: Train tasks (procedural environments: generated from ``seed``; others: the first N).
    size: int = 64
    steps: int = 20
    #: Episodes per task in a group (GRPO's G).
    generations: int = 4
    #: Tasks per optimiser step (the batch is ``prompts_per_step * generations`` episodes).
    prompts_per_step: int = 1
    #: Tokens after the prompt: the model's turns and the tool results between them.
    max_completion_length: int = 160
    max_turns: int = 3
    temperature: float = 1.0
    learning_rate: float = 1e-5
    lora_rank: int = 16
    lora_alpha: float = 32.0
    seed: int = 0
    save_steps: int = 10
    max_minutes: float | None = None
    #: A ``train sft`` GGUF adapter to go on from (its rank and alpha replace ``lora_*``).
    start_adapter: Path | None = None
    base_model: Path | None = None
    progress: bool = True


def check_grpo_options(options: GRPOOptions) -> None:
    """``TrainDataError`` naming the first setting a run cannot use (before any work)."""
    refuse_test_split(options.split)
    if options.environment.startswith("bfcl:"):
        raise TrainDataError(
            "train grpo plays single-question environments (math:arithmetic, reasoning_gym:*, "
            "math:word_problems, math:gsm8k); BFCL's multi-turn entries change their tools "
            "between user turns"
        )
    if options.generations < 2:
        raise TrainDataError("--generations must be at least 2 (GRPO compares a group's episodes)")
    limits = {
        "--steps": options.steps,
        "--size": options.size,
        "--max-completion-length": options.max_completion_length,
        "--max-turns": options.max_turns,
        "--prompts-per-step": options.prompts_per_step,
        "--save-steps": options.save_steps,
    }
    for flag, value in limits.items():
        if value < 1:
            raise TrainDataError(f"{flag} must be at least 1")
    if options.size < options.prompts_per_step:
        raise TrainDataError("--size must be at least --prompts-per-step")
    if options.temperature <= 0:
        raise TrainDataError("--temperature must be above 0 (GRPO samples its groups)")
    if options.start_adapter is not None:
        check_start_adapter(options.start_adapter, options.base_model)


def _environment(options: GRPOOptions) -> tuple[Any, list[int]]:
    """The environment (its train split) and the task indices trained on."""
    from tooluse.envs import environment_registry

    name = options.environment
    if name.startswith(_PROCEDURAL):
        env = environment_registry.get(
            name=name, split=options.split, size=options.size, seed=options.seed
        )
    else:
        env = environment_registry.get(name=name, split=options.split)
    return env, list(range(min(options.size, len(env))))


def _codec(trainer: Any) -> TokenCodec:
    """The trainer's tokenizer; a turn ends on any token its generation stops at."""
    tokenizer = trainer.processing_class

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(ids: Sequence[int]) -> str:
        return str(tokenizer.decode(list(ids), skip_special_tokens=False))

    return TokenCodec(encode=encode, decode=decode, eos_ids=frozenset(trainer.eos_token_ids))


def _generator(stack: TrainingStack, trainer: Any) -> Any:
    """``generate(sequences, max_new_tokens)`` sampling with the trainer's current weights."""
    import copy

    torch = stack.torch
    pad = trainer.processing_class.pad_token_id

    def generate(sequences: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        width = max(len(s) for s in sequences)
        ids = torch.tensor([[pad] * (width - len(s)) + s for s in sequences])
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences])
        config = copy.deepcopy(trainer.generation_config)
        config.max_new_tokens = max_new_tokens
        unwrap = stack.trl.models.unwrap_model_for_generation
        with (
            unwrap(
                trainer.model_wrapped,
                trainer.accelerator,
                generation_kwargs=trainer.generation_kwargs,
                gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
            ) as model,
            torch.no_grad(),
        ):
            out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
        return [row[width:].tolist() for row in out]

    return generate


def _rollout_func(
    stack: TrainingStack,
    env: Any,
    renderer: RolloutRenderer,
    tasks: dict[str, int],
    options: GRPOOptions,
) -> Any:
    """TRL's ``rollout_func``: each prompt (already repeated per generation) played once."""
    from tooluse.envs.prompts import default_system_prompt

    settings = RolloutSettings(
        max_completion_tokens=options.max_completion_length,
        max_turns=options.max_turns,
        system_prompt=default_system_prompt(options.environment),
    )

    def rollout(prompts: list[str], trainer: Any) -> dict[str, Any]:
        rollouts = play_rollouts(
            env,
            [tasks[p] for p in prompts],
            renderer=renderer,
            codec=_codec(trainer),
            generate=_generator(stack, trainer),
            settings=settings,
        )
        return {
            "prompt_ids": [list(r.prompt_ids) for r in rollouts],
            "completion_ids": [list(r.completion_ids) for r in rollouts],
            "logprobs": None,  # sampled by the trained model itself: no correction needed
            "env_mask": [list(r.model_mask) for r in rollouts],
            "env_reward": [r.reward for r in rollouts],
            "env_success": [float(r.success) for r in rollouts],
            "env_tool_calls": [float(r.tool_calls) for r in rollouts],
        }

    return rollout


def environment_reward(
    completions: list[Any],
    env_reward: list[float],
    env_success: list[float],
    env_tool_calls: list[float],
    log_metric: Any = None,
    **kwargs: Any,
) -> list[float]:
    """The reward function: each episode's total reward, as its environment graded it."""
    if log_metric is not None and env_success:
        log_metric("env/success", sum(env_success) / len(env_success))
        log_metric("env/tool_calls", sum(env_tool_calls) / len(env_tool_calls))
    return list(env_reward)


def _config(stack: TrainingStack, options: GRPOOptions) -> Any:
    return stack.trl.GRPOConfig(
        output_dir=str(options.out / "checkpoints"),
        max_steps=options.steps,
        per_device_train_batch_size=options.prompts_per_step * options.generations,
        gradient_accumulation_steps=1,
        num_generations=options.generations,
        max_completion_length=options.max_completion_length,
        temperature=options.temperature,
        learning_rate=options.learning_rate,
        beta=0.0,  # no reference model: with an SFT start, "disabled adapter" is not the start
        seed=options.seed,
        data_seed=options.seed,
        logging_steps=1,
        save_steps=options.save_steps,
        save_total_limit=1,
        report_to=[],
        use_cpu=True,
        bf16=False,  # float32, as the weights are read and as llama.cpp is compared against
        activation_checkpointing=False,  # a 135M model fits; recomputing would cost CPU time
        dataloader_num_workers=0,
        disable_tqdm=not options.progress,
        lr_scheduler_type="constant",
    )


def _trainer(
    stack: TrainingStack,
    options: GRPOOptions,
    env: Any,
    indices: list[int],
    renderer: RolloutRenderer,
) -> tuple[Any, float]:
    from tooluse.envs.prompts import default_system_prompt
    from tooluse.local.model_files import default_model_path

    model, tokenizer = load_base_model(stack, Path(options.base_model or default_model_path()))
    system = default_system_prompt(options.environment)
    prompts: dict[str, int] = {}
    for index in indices:
        task = env.task(index)
        text = renderer.render(first_messages(task.prompt, system), env.tools)
        prompts.setdefault(text, index)  # two tasks that read the same are the same task
    model, peft_config, alpha = lora_setup(
        stack, model, options.start_adapter, rank=options.lora_rank, alpha=options.lora_alpha
    )
    rows = [{"prompt": text, "task_index": index} for text, index in prompts.items()]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
        trainer = stack.trl.GRPOTrainer(
            model=model,
            reward_funcs=[environment_reward],
            args=_config(stack, options),
            train_dataset=stack.datasets.Dataset.from_list(rows),
            processing_class=tokenizer,
            peft_config=peft_config,
            rollout_func=_rollout_func(stack, env, renderer, prompts, options),
            callbacks=[stop_after(stack, options.max_minutes)] if options.max_minutes else [],
        )
    return trainer, alpha


def _number(value: Any) -> float | None:
    return None if value is None else round(float(value), 4)


def _metrics(trainer: Any) -> dict[str, Any]:
    """Each step's rewards and time from the trainer's logs (the episodes sampled at that
    step, before its update), and the first and last."""
    per_step = [
        {
            "step": int(row["step"]),
            "reward": _number(row["reward"]),
            "reward_std": _number(row.get("reward_std")),
            "success": _number(row.get("env/success")),
            "tool_calls": _number(row.get("env/tool_calls")),
            "completion_tokens": _number(row.get("completions/mean_length")),
            "seconds": _number(row.get("step_time")),
        }
        for row in trainer.state.log_history
        if "reward" in row
    ]
    seconds = [row["seconds"] for row in per_step if row["seconds"] is not None]
    return {
        "steps": trainer.state.global_step,
        "reward_first": per_step[0]["reward"] if per_step else None,
        "reward_last": per_step[-1]["reward"] if per_step else None,
        "seconds_per_step": round(sum(seconds) / len(seconds), 1) if seconds else None,
        "per_step": per_step,
    }


def run_grpo(options: GRPOOptions, *, renderer: RolloutRenderer) -> dict[str, Any]:
    """Train, export ``OUT/adapter.gguf`` and write ``OUT/card.json``; returns the card.

    ``renderer`` writes the prompts and reads the calls as the local backend does (pass the
    ``LlamaCppBackend`` of the base model)."""
    check_grpo_options(options)
    stack = import_training_stack()
    options.out.mkdir(parents=True, exist_ok=True)
    stack.transformers.set_seed(options.seed)
    env, indices = _environment(options)
    with env:
        trainer, alpha = _trainer(stack, options, env, indices, renderer)
        last = stack.transformers.trainer_utils.get_last_checkpoint(
            str(options.out / "checkpoints")
        )
        started, cpu_started = time.monotonic(), time.process_time()
        trainer.train(resume_from_checkpoint=last)
        seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu_started
    adapter = export_adapter(stack, trainer.model, alpha, options.out / ADAPTER_FILE)
    card = {
        "adapter": str(adapter),
        "adapter_bytes": adapter.stat().st_size,
        "base_model": str(options.base_model or "embedded SmolLM2-135M-Instruct (Q4_1 GGUF)"),
        "method": "grpo",
        "data": {
            "environment": options.environment,
            "split": options.split,
            "size": len(indices),
            "seed": options.seed,
        },
        "start_adapter": str(options.start_adapter) if options.start_adapter else None,
        "resumed_from": Path(last).name if last else None,
        "wall_seconds": round(seconds, 1),
        # the CPU time of this process's threads: the wall time over a busy machine's share
        "cpu_seconds": round(cpu_seconds, 1),
        "metrics": _metrics(trainer),
        "options": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in asdict(options).items()
            if k not in ("out", "progress")
        },
    }
    write_json(options.out / CARD_FILE, card)
    return card
