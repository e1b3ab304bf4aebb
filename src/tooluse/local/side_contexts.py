"""Extra llama.cpp contexts over a backend's model file: one for scoring, one of the base model.

Decision scoring needs logits at every position and must not disturb the main context's prompt
cache; with ``judge="base"`` (the base model judges) or ``text="base"`` (it writes the text
answers) the base context runs the untouched model beside an adapted main context. Both are
created on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooluse.local.decoding import TokenLoop
from tooluse.local.runtime import import_llama_cpp
from tooluse.local.threads import llama_thread_options

__all__ = ["SCORING_CONTEXT", "SideContexts"]

SCORING_CONTEXT = 1024


@dataclass(kw_only=True)
class SideContexts:
    """The scoring and judging contexts of one backend (mutable: they are made lazily)."""

    model_path: Path
    lora_path: Path | None
    lora_scale: float
    judge: str
    threads: int
    #: KV snapshots of the base context: it reads the tool prompt to judge and the prompt
    #: without tools to write a text answer, which take turns as the main context's do
    snapshots: int = 0
    _scoring: TokenLoop | None = field(default=None, init=False)
    _base: TokenLoop | None = field(default=None, init=False)

    @property
    def separate_judge(self) -> bool:
        """Whether judging reads a model other than the main context's (the base model)."""
        return self.judge == "base" and self.lora_path is not None

    def scoring(self) -> TokenLoop:
        """The small context with logits for every position (no adapter under a base judge)."""
        if self._scoring is None:
            self._scoring = TokenLoop(self._context(SCORING_CONTEXT, logits_all=True))
        return self._scoring

    def judging(self, main: TokenLoop) -> TokenLoop:
        """``main`` itself, or with a separate judge the base-model context (:meth:`base`)."""
        return self.base(main) if self.separate_judge else main

    def base(self, main: TokenLoop) -> TokenLoop:
        """A context of the untouched model as long as ``main`` (``main`` itself without an
        adapter)."""
        if self.lora_path is None:
            return main
        if self._base is None:
            context = self._context(main.n_ctx, logits_all=False, adapted=False)
            self._base = TokenLoop(context, snapshots=self.snapshots)
        return self._base

    def _context(self, n_ctx: int, *, logits_all: bool, adapted: bool | None = None) -> Any:
        if adapted is None:
            adapted = self.lora_path is not None and not self.separate_judge
        return import_llama_cpp().Llama(
            model_path=str(self.model_path),
            lora_path=str(self.lora_path) if adapted else None,
            lora_scale=self.lora_scale,
            n_ctx=n_ctx,
            logits_all=logits_all,
            **llama_thread_options(self.threads),
            verbose=False,
        )

    def close(self) -> None:
        """Free the contexts made so far."""
        for side in (self._scoring, self._base):
            close = getattr(side.llm if side is not None else None, "close", None)
            if callable(close):
                close()
        self._scoring = self._base = None
