"""Supervised fine-tuning of the local model: LoRA on the GGUF's weights with TRL's SFTTrainer,
exported as a llama.cpp GGUF LoRA adapter with a ``card.json`` beside it.

::

    options = SFTOptions(out=Path("runs/sft"), steps=200)
    card = run_sft(examples, options, data={"environment": "math:arithmetic", "split": "train"})
    LlamaCppBackend.default(lora_path=card["adapter"])

The base weights are read from the GGUF file itself (transformers' GGUF loader dequantises
them to float32), or from a transformers model folder (``base_model`` a folder with a
``config.json``). The run uses CUDA when torch sees a GPU (bfloat16), else the CPU (float32).
The adapter is always saved for transformers and peft (``OUT/adapter/``:
``adapter_model.safetensors`` and ``adapter_config.json``) and, for a GGUF base, also as a
llama.cpp GGUF LoRA (``OUT/adapter.gguf``). The examples are prompt/completion pairs (:mod:`tooluse.train.data`), so the
loss falls on the assistant turns only. Checkpoints go to ``OUT/checkpoints`` every
``save_steps``; a run started again on the same ``OUT`` resumes from the last one.
``max_minutes`` stops a run cleanly (checkpoint and adapter written) when its time is up.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tooluse.train.base_model import is_transformers_model, load_base_model, training_device
from tooluse.train.data import TrainDataError, TrainExample
from tooluse.train.runtime import TrainingStack, import_training_stack

__all__ = [
    "ADAPTER_FILE",
    "CARD_FILE",
    "PEFT_DIR",
    "TARGET_MODULES",
    "SFTOptions",
    "check_start_adapter",
    "export_adapter",
    "lora_setup",
    "run_sft",
    "save_peft_adapter",
    "sft_config",
    "start_from_adapter",
    "stop_after",
    "write_json",
]

ADAPTER_FILE = "adapter.gguf"
#: The adapter for transformers and peft (``PeftModel.from_pretrained(model, OUT/adapter)``).
PEFT_DIR = "adapter"
CARD_FILE = "card.json"
#: The projections LoRA adapts (every linear layer of a Llama block).
TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True, kw_only=True)
class SFTOptions:
    """One SFT run's settings (``base_model`` None: the embedded SmolLM2 GGUF)."""

    out: Path
    steps: int = 200
    batch_size: int = 8
    learning_rate: float = 2e-4
    lora_rank: int = 16
    lora_alpha: float = 32.0
    max_length: int = 1024
    seed: int = 0
    save_steps: int = 50
    max_minutes: float | None = None
    base_model: Path | None = None
    start_adapter: Path | None = None
    progress: bool = True
    #: Batches sorted by length together (:mod:`tooluse.train.batching`); 1: random batches.
    length_window: int = 4
    #: Recompute each layer's forward pass in the backward pass instead of keeping its
    #: activations (TRL's default). Kept, the embedded model's activations for a batch of 8
    #: long turns took 12.5 GB and the steps were no faster on the CPU (``make bench``).
    activation_checkpointing: bool = True


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as JSON through a temporary file renamed into place."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def stop_after(stack: TrainingStack, minutes: float) -> Any:
    """A callback ending the run (with a checkpoint) once ``minutes`` have passed."""
    deadline = time.monotonic() + 60.0 * minutes

    class StopAfter(stack.transformers.TrainerCallback):  # type: ignore[misc, name-defined]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if time.monotonic() >= deadline:
                control.should_training_stop = True
                control.should_save = True
            return control

    return StopAfter()


def check_lengths(tokenizer: Any, examples: Sequence[TrainExample], max_length: int) -> None:
    """``TrainDataError`` counting and naming the examples longer than ``max_length`` tokens
    (the trainer would cut their completions off or drop them without a word)."""
    lengths = [len(tokenizer(e.prompt + e.completion)["input_ids"]) for e in examples]
    long = [(n, e.source) for n, e in zip(lengths, examples, strict=True) if n > max_length]
    if long:
        names = ", ".join(sorted({source for _, source in long})[:5])
        raise TrainDataError(
            f"{len(long)} of {len(examples)} training turns are longer than --max-length "
            f"{max_length} tokens (longest {max(n for n, _ in long)}; from {names}); "
            "raise --max-length"
        )


def check_start_adapter(adapter_path: Path, base_model: Path | None = None) -> None:
    """``TrainDataError`` unless ``adapter_path`` is a LoRA adapter for the base model (the
    embedded SmolLM2 when ``base_model`` is None; a peft folder for a transformers base):
    checked before any training work."""
    if base_model is not None and is_transformers_model(base_model):
        if not (adapter_path / "adapter_config.json").is_file():
            raise TrainDataError(
                f"{adapter_path}: not a peft adapter folder (no adapter_config.json)"
            )
        return
    from tooluse.local.model_files import ModelFileError, check_lora_path, default_model_path

    try:
        check_lora_path(adapter_path, base_model or default_model_path())
    except ModelFileError as exc:
        raise TrainDataError(str(exc)) from exc


def start_from_adapter(stack: TrainingStack, model: Any, adapter_path: Path) -> tuple[Any, float]:
    """The base model with the adapter at ``adapter_path`` on it, trainable: a ``train sft``
    GGUF adapter, or a peft folder."""
    if adapter_path.is_dir():
        tuned = stack.peft.PeftModel.from_pretrained(model, str(adapter_path), is_trainable=True)
        return tuned, float(tuned.peft_config["default"].lora_alpha)
    from tooluse.train.gguf_lora import read_lora_gguf

    config = model.config
    try:
        adapter = read_lora_gguf(
            adapter_path,
            n_layers=config.num_hidden_layers,
            n_head=config.num_attention_heads,
            n_head_kv=config.num_key_value_heads,
        )
    except ValueError as exc:
        raise TrainDataError(str(exc)) from exc
    lora = stack.peft.LoraConfig(
        r=adapter.rank,
        lora_alpha=adapter.alpha,
        lora_dropout=0.0,
        target_modules=list(adapter.modules),
        task_type="CAUSAL_LM",
    )
    tuned = stack.peft.get_peft_model(model, lora)
    weights = {key: stack.torch.from_numpy(value) for key, value in adapter.tensors.items()}
    loaded = stack.peft.set_peft_model_state_dict(tuned, weights)
    if loaded.unexpected_keys:
        raise TrainDataError(f"{adapter_path}: tensors the model has no place for")
    return tuned, adapter.alpha


def lora_setup(
    stack: TrainingStack, model: Any, start_adapter: Path | None, *, rank: int, alpha: float
) -> tuple[Any, Any, float]:
    """The model to train, the peft config for the trainer to apply (None when the model
    already carries ``start_adapter``, whose rank and alpha then win) and the alpha."""
    if start_adapter is not None:
        tuned, start_alpha = start_from_adapter(stack, model, start_adapter)
        return tuned, None, start_alpha
    config = stack.peft.LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=0.0,
        target_modules=list(TARGET_MODULES),
        task_type="CAUSAL_LM",
    )
    return model, config, alpha


def sft_config(stack: TrainingStack, options: SFTOptions) -> Any:
    """TRL's settings of an SFT run: float32 on the CPU (bfloat16 on a GPU that has it), one log
    line per step."""
    device, dtype = training_device(stack)
    return stack.trl.SFTConfig(
        output_dir=str(options.out / "checkpoints"),
        max_steps=options.steps,
        per_device_train_batch_size=options.batch_size,
        learning_rate=options.learning_rate,
        max_length=options.max_length,
        completion_only_loss=True,
        seed=options.seed,
        data_seed=options.seed,
        logging_steps=1,
        save_steps=options.save_steps,
        save_total_limit=1,
        report_to=[],
        use_cpu=device == "cpu",
        dataloader_num_workers=0,
        disable_tqdm=not options.progress,
        lr_scheduler_type="constant",
        activation_checkpointing=options.activation_checkpointing,
        # TRL's default is bf16 autocast wherever torch allows it, which includes CPUs
        # without bf16 arithmetic: there every matmul is emulated, about 30 times slower
        # (4.5 against 55 tokens/s, measured on 2 cores). The weights are float32; so is the training.
        bf16=dtype == stack.torch.bfloat16,
        fp16=dtype == stack.torch.float16,
    )


def _trainer_class(stack: TrainingStack, options: SFTOptions) -> Any:
    """TRL's SFTTrainer reading its examples in length-grouped batches."""
    from tooluse.train.batching import length_grouped_sampler

    class LengthGroupedSFTTrainer(stack.trl.SFTTrainer):  # type: ignore[misc,name-defined]
        def _get_train_sampler(self, train_dataset: Any = None) -> Any:
            dataset = self.train_dataset if train_dataset is None else train_dataset
            if options.length_window <= 1 or dataset is None:
                return super()._get_train_sampler(train_dataset)
            return length_grouped_sampler(
                stack.torch,
                [len(ids) for ids in dataset["input_ids"]],
                batch_size=self.args.train_batch_size,
                window=options.length_window,
                seed=options.seed,
            )

    return LengthGroupedSFTTrainer


def _trainer(
    stack: TrainingStack, examples: Sequence[TrainExample], options: SFTOptions
) -> tuple[Any, float]:
    from tooluse.local.model_files import default_model_path

    base = options.base_model or default_model_path()
    model, tokenizer = load_base_model(stack, Path(base), training_device(stack)[1])
    model, lora, alpha = lora_setup(
        stack, model, options.start_adapter, rank=options.lora_rank, alpha=options.lora_alpha
    )
    check_lengths(tokenizer, examples, options.max_length)
    rows = [{"prompt": e.prompt, "completion": e.completion} for e in examples]
    config = sft_config(stack, options)
    callbacks = [stop_after(stack, options.max_minutes)] if options.max_minutes else []
    trainer = _trainer_class(stack, options)(
        model=model,
        args=config,
        train_dataset=stack.datasets.Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=callbacks,
    )
    return trainer, alpha


def export_adapter(stack: TrainingStack, model: Any, alpha: float, path: Path) -> Path:
    """Write the LoRA tensors of the peft ``model`` to ``path`` as a llama.cpp GGUF adapter."""
    from tooluse.train.gguf_lora import LoraShape, write_lora_gguf

    config = model.config
    tensors = {
        key: value.detach().to(stack.torch.float32).cpu().numpy()
        for key, value in model.state_dict().items()
        if ".lora_" in key
    }
    shape = LoraShape(
        alpha=alpha,
        n_layers=config.num_hidden_layers,
        n_head=config.num_attention_heads,
        n_head_kv=config.num_key_value_heads,
    )
    return write_lora_gguf(tensors, shape, path)


def save_peft_adapter(model: Any, path: Path) -> Path:
    """Save the peft ``model``'s adapter into the folder ``path`` (``adapter_model.safetensors``
    and ``adapter_config.json``), written beside it and renamed into place."""
    import shutil

    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        model.save_pretrained(str(partial), safe_serialization=True)
        if path.exists():
            shutil.rmtree(path)
        os.replace(partial, path)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return path


def _metrics(trainer: Any, seconds: float) -> dict[str, Any]:
    logs = [row for row in trainer.state.log_history if "loss" in row]
    tokens = max((float(row.get("num_tokens", 0)) for row in logs), default=0.0)
    return {
        "steps": trainer.state.global_step,
        "loss_first": float(logs[0]["loss"]) if logs else None,
        "loss_last": float(logs[-1]["loss"]) if logs else None,
        "tokens": int(tokens),
        "tokens_per_second": round(tokens / seconds, 1) if seconds > 0 else None,
    }


def run_sft(
    examples: Sequence[TrainExample], options: SFTOptions, *, data: Mapping[str, Any]
) -> dict[str, Any]:
    """Train, export ``OUT/adapter.gguf`` and write ``OUT/card.json``; returns the card.

    ``data`` describes the examples' source for the card (file or environment, split, size)."""
    if not examples:
        raise TrainDataError("no examples to train on")
    stack = import_training_stack()
    options.out.mkdir(parents=True, exist_ok=True)
    stack.transformers.set_seed(options.seed)
    trainer, alpha = _trainer(stack, examples, options)
    last = stack.transformers.trainer_utils.get_last_checkpoint(str(options.out / "checkpoints"))
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=last)
    seconds = time.monotonic() - started
    peft_dir = save_peft_adapter(trainer.model, options.out / PEFT_DIR)
    if options.base_model is not None and is_transformers_model(options.base_model):
        adapter, size = peft_dir, (peft_dir / "adapter_model.safetensors").stat().st_size
    else:  # a llama.cpp base: the GGUF adapter too
        adapter = export_adapter(stack, trainer.model, alpha, options.out / ADAPTER_FILE)
        size = adapter.stat().st_size
    card = {
        "adapter": str(adapter),
        "adapter_bytes": size,
        "adapter_peft": str(peft_dir),
        "device": training_device(stack)[0],
        "base_model": str(options.base_model or "embedded SmolLM2-135M-Instruct (Q4_1 GGUF)"),
        "method": "sft",
        "data": dict(data),
        "examples": len(examples),
        "resumed_from": Path(last).name if last else None,
        "wall_seconds": round(seconds, 1),
        "metrics": _metrics(trainer, seconds),
        "options": {
            k: str(v) if isinstance(v, Path) else v
            for k, v in asdict(options).items()
            if k not in ("out", "progress")
        },
    }
    write_json(options.out / CARD_FILE, card)
    return card
