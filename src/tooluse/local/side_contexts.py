"""Extra llama.cpp contexts over a backend's model file: one for scoring, one for judging.

Decision scoring needs logits at every position and must not disturb the main context's prompt
cache; with ``judge="base"`` the judging context runs the untouched model beside an adapted
main context. Both are created on first use.
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
    _scoring: TokenLoop | None = field(default=None, init=False)
    _judging: TokenLoop | None = field(default=None, init=False)

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
        """``main`` itself, or with a separate judge a base-model context as long as it."""
        if not self.separate_judge:
            return main
        if self._judging is None:
            self._judging = TokenLoop(self._context(main.n_ctx, logits_all=False))
        return self._judging

    def _context(self, n_ctx: int, *, logits_all: bool) -> Any:
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
        for side in (self._scoring, self._judging):
            close = getattr(side.llm if side is not None else None, "close", None)
            if callable(close):
                close()
        self._scoring = self._judging = None
