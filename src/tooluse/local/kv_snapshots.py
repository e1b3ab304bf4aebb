"""Saved KV states of a llama.cpp context, for prompts that take turns.

A turn of the local backend renders one of two prompts: with the tool list when it may call
(and when the decider reads the model's odds of a call), without it when it answers in text.
One context keeps one prompt's KV cache, so each switch evaluated the other prompt again from
its first differing token: for a BFCL world's 2,300-token tool list, about 11 seconds a turn
on 2 cores. :class:`KVSnapshots` copies the state of the context's sequence aside before a
prompt that shares little with it replaces it (a few tens of milliseconds: 0.1 s for 4,500
tokens, 104 MB), and copies a saved state back when the next prompt shares more with it than
with what is live.

Snapshots hold the KV cells only (llama.cpp's per-sequence state), not logits: a restored
prompt always evaluates at least its last token again (:meth:`TokenLoop.prefill` does), and a
context keeping logits for every position (``logits_all``) must not use them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tooluse.local.runtime import import_llama_cpp

__all__ = ["KVSnapshot", "KVSnapshots", "common_prefix_length"]

#: A switch saves or restores only when this many tokens of evaluation are at stake: below it,
#: evaluating again costs about as little as copying.
MIN_TOKENS = 128
#: All snapshots of one context together stay below this: about 46,000 tokens of SmolLM2-135M
#: (23 KB a token of f16 KV cells); a larger model keeps fewer.
MAX_BYTES = 1 << 30
SEQUENCE = 0  # the llama_cpp.Llama object evaluates every prompt as sequence 0


def common_prefix_length(one: Sequence[int] | np.ndarray, other: Sequence[int] | np.ndarray) -> int:
    """How many leading tokens ``one`` and ``other`` share."""
    limit = min(len(one), len(other))
    if not limit:
        return 0
    differs = np.flatnonzero(np.asarray(one[:limit]) != np.asarray(other[:limit]))
    return int(differs[0]) if len(differs) else limit


@dataclass(frozen=True, kw_only=True, eq=False)  # compared by identity: the store removes one
class KVSnapshot:
    """The KV cells of ``tokens`` as llama.cpp wrote them."""

    tokens: np.ndarray
    data: Any  # a ctypes uint8 array of llama_state_seq_get_data's bytes

    @property
    def nbytes(self) -> int:
        return ctypes.sizeof(self.data)


class KVSnapshots:
    """Up to ``limit`` saved states of ``llm``'s sequence, least recently used dropped first.

    The live state is never among them: a restored snapshot leaves the list, and is saved
    again (with what was evaluated after it) when another prompt replaces it.
    """

    def __init__(self, llm: Any, *, limit: int = 2, max_bytes: int = MAX_BYTES) -> None:
        if limit < 1:
            raise ValueError("a snapshot store keeps at least one state")
        self._llama_cpp = import_llama_cpp()
        self.llm = llm
        self.limit = limit
        self.max_bytes = max_bytes
        self.saved: list[KVSnapshot] = []  # least recently used first
        self.restored = 0  # tokens brought back instead of evaluated again, over the lifetime

    def before_prefill(self, tokens: list[int], live_common: int) -> int:
        """Called before the live state is cut to its first ``live_common`` tokens for a
        prompt of ``tokens``: saves the live state if that would lose much of it, restores a
        saved one that shares more with ``tokens``. Returns the tokens now shared."""
        best, shared = None, live_common
        for snapshot in self.saved:
            length = common_prefix_length(snapshot.tokens, tokens)
            if length > shared:
                best, shared = snapshot, length
        if best is not None and shared - live_common < MIN_TOKENS:
            best, shared = None, live_common
        if best is not None:
            self.saved.remove(best)  # it becomes the live state
        if self.llm.n_tokens - live_common >= MIN_TOKENS:
            self._save_live()
        if best is None:
            return live_common
        if not self._restore(best):
            return 0
        self.restored += shared
        return shared

    def _save_live(self) -> None:
        llm, lib = self.llm, self._llama_cpp
        tokens = np.array(llm.input_ids[: llm.n_tokens], copy=True)
        size = lib.llama_state_seq_get_size(llm._ctx.ctx, SEQUENCE)
        if not size or size > self.max_bytes:
            return
        data = (ctypes.c_uint8 * size)()
        if lib.llama_state_seq_get_data(llm._ctx.ctx, data, size, SEQUENCE) != size:
            return
        # A saved prompt that the live one extends is superseded by it.
        self.saved = [
            s for s in self.saved if common_prefix_length(s.tokens, tokens) < len(s.tokens)
        ]
        self.saved.append(KVSnapshot(tokens=tokens, data=data))
        while len(self.saved) > self.limit or sum(s.nbytes for s in self.saved) > self.max_bytes:
            self.saved.pop(0)

    def _restore(self, snapshot: KVSnapshot) -> bool:
        """Put ``snapshot`` in the context; False (and an empty cache) when llama.cpp refuses."""
        llm, lib = self.llm, self._llama_cpp
        lib.llama_memory_seq_rm(lib.llama_get_memory(llm._ctx.ctx), SEQUENCE, -1, -1)
        size = snapshot.nbytes
        if lib.llama_state_seq_set_data(llm._ctx.ctx, snapshot.data, size, SEQUENCE) != size:
            llm.n_tokens = 0  # nothing usable is left in the cache: evaluate from the start
            return False
        count = len(snapshot.tokens)
        llm.input_ids[:count] = snapshot.tokens
        llm.n_tokens = count
        return True
