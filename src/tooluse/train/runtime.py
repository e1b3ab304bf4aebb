"""The one place that imports the training stack (the ``train`` extra): torch, transformers,
peft, trl and datasets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tooluse.errors import MissingDependencyError

__all__ = ["TrainingStack", "import_training_stack"]


@dataclass(frozen=True, kw_only=True)
class TrainingStack:
    """The imported training modules."""

    torch: Any
    transformers: Any
    peft: Any
    trl: Any
    datasets: Any


def import_training_stack() -> TrainingStack:
    """The modules, or :class:`MissingDependencyError` naming the ``train`` extra."""
    try:
        import torch
    except ImportError as exc:
        raise MissingDependencyError("torch", "train") from exc
    try:
        import datasets
        import peft
        import transformers
        import trl
    except ImportError as exc:
        raise MissingDependencyError(f"{exc.name or 'transformers, peft or trl'}", "train") from exc
    return TrainingStack(
        torch=torch, transformers=transformers, peft=peft, trl=trl, datasets=datasets
    )
