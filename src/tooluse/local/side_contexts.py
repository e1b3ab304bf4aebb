"""The base model's own batched context beside an adapted one.

With an adapter, ``judge="base"`` (the untouched model judges whether to call and ranks the
tools) and ``text="base"`` (it writes the text answers) read a model without the adapter.
llama.cpp applies adapters per context, so the base model gets a context of its own over the
same loaded weights (no second copy of the model), made on first use.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from tooluse.local.batching import BatchEngine

__all__ = ["SideContexts"]


@dataclass(kw_only=True)
class SideContexts:
    """The base-model context of one backend (mutable: it is made lazily)."""

    llm: Any
    adapted: bool
    judge: str
    n_ctx: int
    batch: int | None
    keep: int
    threads: int
    _base: BatchEngine | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def separate_judge(self) -> bool:
        """Whether judging reads a model other than the main context's (the base model)."""
        return self.judge == "base" and self.adapted

    def judging(self, main: BatchEngine) -> BatchEngine:
        """``main`` itself, or with a separate judge the base-model context (:meth:`base`)."""
        return self.base(main) if self.separate_judge else main

    def base(self, main: BatchEngine) -> BatchEngine:
        """A context of the untouched model as long as ``main`` (``main`` itself without an
        adapter)."""
        if not self.adapted:
            return main
        with self._lock:
            if self._base is None:
                self._base = BatchEngine(
                    self.llm,
                    n_ctx=self.n_ctx,
                    batch=self.batch,
                    keep=self.keep,
                    threads=self.threads,
                )
            return self._base

    def made(self) -> BatchEngine | None:
        """The base-model context when it has been made (else None)."""
        return self._base

    def close(self) -> None:
        """Free the context made so far."""
        with self._lock:
            if self._base is not None:
                self._base.close()
            self._base = None
