"""Batched decoding: one llama.cpp context, many sequences decoded in the same step.

:class:`BatchEngine` owns a context with ``slots`` sequence ids over one loaded model. Callers on
any thread submit sequences (:meth:`BatchEngine.run`, :meth:`BatchEngine.next_logits`,
:meth:`BatchEngine.continuation_logprob`) and the process's compute thread
(:class:`~tooluse.local.threads.ComputeLoop`, shared by every engine) decodes them: each step
evaluates the next token of every sequence that is generating, in one ``llama_decode``, and
one chunk of a prompt that is still being read. Sequences join and leave between steps
(continuous batching); each has its own :class:`~tooluse.local.sampling.SequenceSampler` (its
grammar, temperature, seed, stop strings and budget).

Same numbers as alone: the tokens decoded together are one per sequence and each sequence has a
KV stream of its own, so a decoded token's logits are the ones it gets alone. A prompt is read
in chunks of up to ``n_batch`` from where its cached prefix ends, then its last token alone;
where the chunks split does not change the numbers, but a token evaluated alone (a prompt's
last, a generated token) gets other numbers than the same token in a chunk, so a cache is
reused only as far as its tokens were read in chunks, and no chunk is a single token. The tests
compare batched greedy outputs, and prompts read after cached prefixes, with fresh reads.

Prompt caching: a finished sequence leaves its KV cells in its slot. A new sequence takes the
free slot whose cached tokens share the longest prefix with its prompt, or copies a longer
shared prefix from any slot (``llama_memory_seq_cp``), and reads only the rest. A slot that
would lose a long cache is left alone when another is free (prompts that take turns, such as
a call turn with the tool list and a text turn without it, keep both caches).

Faults stay with their sequence: a grammar that allows no token, a spent budget or context, a
cancelled sequence (the caller stops reading, or a stop request such as Ctrl-C) end that
sequence alone and free its cells; the others go on. Waiting sequences queue (at most
``batch`` decode at once), so memory does not grow with the number of callers.
"""

from __future__ import annotations

import ctypes
import itertools
import queue
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tooluse.errors import BackendError, ContextLengthError
from tooluse.interrupts import GenerationInterrupted, stop_requested
from tooluse.local.kv_memory import (
    DEFAULT_KV_BUDGET,
    common_prefix_length,
    kv_bytes_per_token,
    plan_slots,
    restream,
)
from tooluse.local.runtime import import_llama_cpp
from tooluse.local.sampling import DecodeSettings, DecodeStep, SequenceSampler, Vocabulary
from tooluse.local.threads import compute_loop, default_threads

__all__ = ["BatchEngine", "EngineStats"]

#: A shared prefix is copied from another slot only when it saves this many tokens.
MIN_COPY = 16
#: A cached prompt this long is worth keeping: placing a sequence elsewhere keeps it, and only
#: caches this long count against ``keep`` (below it, evaluating again costs little).
MIN_TOKENS = 128
#: How long a step waits, at most, for the callers it handed tokens to to read them before it
#: decodes again (see :meth:`BatchEngine._hand_over`).
HANDOFF_SECONDS = 0.005

_END = object()


def _logprob(rows: np.ndarray, tokens: list[int]) -> float:
    """The summed log-probability of ``tokens`` under the logit ``rows`` that predict them."""
    values = rows.astype(np.float64)
    top = values.max(axis=1, keepdims=True)
    logprobs = values - top - np.log(np.exp(values - top).sum(axis=1, keepdims=True))
    return float(logprobs[np.arange(len(tokens)), tokens].sum())


@dataclass(kw_only=True)
class EngineStats:
    """Counters over the engine's lifetime (for benchmarks and tests)."""

    steps: int = 0
    decoded: int = 0  # tokens evaluated in decode steps (one per sequence per step)
    prompt_tokens: int = 0  # prompt tokens evaluated (not found in a cache)
    reused_tokens: int = 0  # prompt tokens found in a cache or copied from another slot
    most_at_once: int = 0  # the most sequences decoded in one step
    cancelled: int = 0
    grown: int = 0  # times the context grew to the full batch
    # where the compute thread's time goes: llama_decode over the generating sequences' tokens,
    # llama_decode over prompt chunks, and whole steps (the rest of a step is Python: sampling,
    # grammar, queues)
    decode_seconds: float = 0.0
    prompt_seconds: float = 0.0
    step_seconds: float = 0.0


@dataclass(eq=False)
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # what its KV cells hold, in order
    # how many leading tokens were read in prompt chunks (the others were evaluated alone: a
    # prompt's last token, generated tokens), the part another prompt may reuse as it is
    chunked: int = 0
    request: _Request | None = None
    used: int = 0


class _Request:
    """One sequence: its prompt, how its tokens are chosen, where its output goes."""

    def __init__(
        self, prompt: list[int], sampler: SequenceSampler | None, score_from: int | None
    ) -> None:
        self.prompt = prompt
        self.sampler = sampler  # None: the caller wants logits, not tokens
        self.grammar: Any = None  # the sequence's own grammar copy, freed when it ends
        self.score_from = score_from  # the first prompt position whose logits are kept
        self.rows: list[np.ndarray] = []
        self.out: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.back = threading.Event()  # set: the caller has read every token handed to it
        self.back.set()
        self.cancelled = False
        self.done = False
        self.slot: _Slot | None = None
        self.pending: list[int] = []  # prompt tokens still to evaluate
        self.feed: int | None = None  # the generated token to evaluate next
        self.evaluated = 0


def _reusable(slot: _Slot, prompt: Sequence[int]) -> int:
    """How much of ``prompt`` ``slot``'s cells give as a fresh read would: its shared prefix,
    up to the tokens read in prompt chunks. A token evaluated alone (a prompt's last, a
    generated one) gets other numbers than the same token read in a chunk (its attention takes
    another kernel), and greedy text follows them; a prompt's chunks themselves may be split
    anywhere with the same numbers."""
    return min(common_prefix_length(slot.tokens, prompt), slot.chunked)


class BatchEngine:
    """Up to ``batch`` sequences of one model decoded together on one context.

    ``llm`` is a ``llama_cpp.Llama`` whose loaded model the context shares (no second copy of
    the weights); ``lora`` is a loaded LoRA adapter (``llm._lora_adapter``) applied at
    ``lora_scale``, or ``None`` for the untouched model. Each sequence holds up to ``n_ctx``
    tokens. ``batch=None`` chooses the batch size from the KV memory (:func:`plan_slots`);
    ``keep`` cached prompts beyond the live ones stay in idle slots.
    """

    def __init__(  # noqa: PLR0913 - the context's settings, keyword-only
        self,
        llm: Any,
        *,
        n_ctx: int,
        batch: int | None = None,
        keep: int = 2,
        n_batch: int = 512,
        threads: int | None = None,
        lora: Any = None,
        lora_scale: float = 1.0,
        kv_budget: int = DEFAULT_KV_BUDGET,
    ) -> None:
        if keep < 0:
            raise ValueError(f"kv_snapshots must be 0 or more, not {keep}")
        self._lib = lib = import_llama_cpp()
        self.llm = llm
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.keep = keep
        self.slots, self.batch = plan_slots(
            n_ctx, kv_bytes_per_token(llm), batch=batch, keep=keep, budget=kv_budget
        )
        self._threads = threads if threads is not None else default_threads()
        self._lora, self._lora_scale = lora, lora_scale
        self._ctx: Any = None
        # Until more sequences than that want to run at once, the context holds only the
        # prompts kept aside and the latest (its KV memory is allocated whole, per slot).
        self._open(min(self.slots, keep + 1))
        self._batch = lib.llama_batch_init(max(n_batch, self.slots), 0, 1)
        self.vocab = Vocabulary.of(llm)
        self.n_vocab = self.vocab.n_vocab
        self.eos = self.vocab.eos
        self.stats = EngineStats()
        self.last_prefill_tokens = 0
        self._waiting: deque[_Request] = deque()
        self._active: list[_Request] = []
        self._loop = compute_loop()
        self._cond = self._loop.cond  # one lock for the loop and every engine's queues
        self._busy = threading.RLock()  # held while the loop steps this engine
        self._closed = False
        self._clock = itertools.count(1)

    def _open(self, slots: int) -> None:
        """(Re)create the context with ``slots`` sequence slots, all empty."""
        lib = self._lib
        if self._ctx is not None:
            lib.llama_free(self._ctx)
            self._ctx = None
        # llm's own settings (attention kind, RoPE scaling...), so that a sequence's numbers are
        # the ones llm's context gives
        params = lib.llama_context_params.from_buffer_copy(self.llm.context_params)
        params.n_ctx = self.n_ctx * slots
        params.n_batch = params.n_ubatch = self.n_batch
        params.n_seq_max = slots
        params.n_threads = params.n_threads_batch = self._threads
        # A KV stream per sequence: with one cache shared by all, a sequence's attention runs
        # over every sequence's cells (masked), and its numbers then depend on the others'
        # lengths (a logit moved by 0.47 and greedy text changed); with a stream each, a
        # sequence decodes as it would alone.
        params.kv_unified = False
        self._ctx = lib.llama_init_from_model(self.llm._model.model, params)
        if not self._ctx:
            raise BackendError(
                f"llama.cpp could not create a context of {slots} sequences x {self.n_ctx} tokens"
            )
        if self._lora is not None:
            adapters = (lib.llama_adapter_lora_p_ctypes * 1)(self._lora)
            scales = (ctypes.c_float * 1)(self._lora_scale)
            lib.llama_set_adapters_lora(self._ctx, adapters, 1, scales)
        self._memory = lib.llama_get_memory(self._ctx)
        self._slots = [_Slot(seq=i) for i in range(slots)]
        # an empty sequence's state: llama.cpp's own header, the stream count, an empty count
        # per stream (how far into a saved state the streams start, for _restream)
        self._state_head = len(self._saved_cells(self._slots[0])) - 4 * (1 + slots)

    # -- what callers use ---------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def piece(self, token: int) -> bytes:
        return self.vocab.piece(token)

    def run(
        self,
        prompt: list[int],
        settings: DecodeSettings,
        grammar: Any = None,
    ) -> Iterator[DecodeStep]:
        """Generate after ``prompt`` until end of turn, the grammar's end, a stop string, the
        budget or the context; yields each token as the scheduler decodes it. ``grammar`` (a
        :class:`~tooluse.local.sampling.GrammarSampler`) is copied for this sequence.
        Stopping the iteration early cancels the sequence."""
        own = grammar.copy() if grammar is not None else None
        sampler = SequenceSampler(self.vocab, settings, own)
        request = self._submit(prompt, sampler, None, grammar=own)
        try:
            while True:
                try:
                    item = request.out.get_nowait()
                except queue.Empty:
                    request.back.set()  # all read: the engine may decode again
                    item = request.out.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self._release(request)

    def next_logits(self, prompt: list[int]) -> np.ndarray:
        """The logits of the token after ``prompt`` (its KV cells stay cached for a sequence
        that goes on from it)."""
        request = self._submit(prompt, None, None)
        try:
            rows = self._wait_rows(request)
        finally:
            self._release(request)
        return rows[-1]

    def continuation_logprob(self, prefix: str, text: str) -> float:
        """log P(``text`` | ``prefix``) under the model."""
        return self.continuation_logprobs([prefix], text)[0]

    def continuation_logprobs(self, prefixes: Sequence[str], text: str) -> list[float]:
        """log P(``text`` | prefix) for each of ``prefixes``, read together (their sequences
        are queued at once)."""
        tail = self.tokenize(text)
        heads = [self.tokenize(prefix) for prefix in prefixes]
        if not tail or not all(heads):
            raise ValueError("both the prefix and the continuation must be non-empty")
        requests: list[_Request] = []
        try:
            for head in heads:
                requests.append(self._submit(head + tail, None, len(head) - 1))
            rows = [self._wait_rows(request) for request in requests]
        finally:
            for request in requests:
                self._release(request)
        return [_logprob(np.stack(found), tail) for found in rows]

    def cached_tokens(self, seq: int) -> int:
        """How many tokens the KV cache holds for slot ``seq`` (-1 positions: none)."""
        return int(self._lib.llama_memory_seq_pos_max(self._memory, seq)) + 1

    def close(self) -> None:
        """Stop the scheduler (waiting and running sequences end with an error) and free the
        context."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        with self._busy:  # a step in progress ends first
            self._fail_everything(BackendError("the local model was closed"))
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._ctx)
            self._ctx = None

    def __del__(self) -> None:  # the context is C memory
        try:
            if getattr(self, "_ctx", None):
                self.close()
        except Exception:
            pass

    # -- submitting ---------------------------------------------------------------------------

    def _submit(
        self,
        prompt: Sequence[int],
        sampler: SequenceSampler | None,
        score_from: int | None,
        *,
        grammar: Any = None,
    ) -> _Request:
        tokens = list(prompt)
        if not tokens:
            raise ValueError("cannot evaluate an empty prompt")
        if len(tokens) >= self.n_ctx:
            raise ContextLengthError(
                f"the prompt has {len(tokens)} tokens but the context holds {self.n_ctx}; "
                "shorten the conversation or create the backend with a larger n_ctx"
            )
        request = _Request(tokens, sampler, score_from)
        request.grammar = grammar
        with self._cond:
            if self._closed:
                raise BackendError("the local model was closed")
            self._waiting.append(request)
            self._loop.attach(self)
        return request

    def _wait_rows(self, request: _Request) -> list[np.ndarray]:
        while True:
            item = request.out.get()
            if isinstance(item, BaseException):
                raise item
            if item is _END:
                return request.rows

    def _release(self, request: _Request) -> None:
        """The caller is done with ``request``: cancel it if it still runs."""
        self.last_prefill_tokens = request.evaluated
        if request.done:
            return
        with self._cond:
            request.cancelled = True
            if request in self._waiting:
                self._waiting.remove(request)
                request.done = True
            self._cond.notify_all()

    # -- the scheduler ------------------------------------------------------------------------

    def has_work(self) -> bool:
        """Whether sequences wait or run (the compute loop asks, with the lock held)."""
        return not self._closed and bool(self._waiting or self._active)

    def step(self) -> None:
        """Admit waiting sequences, then decode one step (the compute loop calls this)."""
        with self._busy:
            if self._closed:
                return
            try:
                self._serve_step()
            except BaseException as exc:  # this engine cannot go on: nobody may wait forever
                with self._cond:
                    self._closed = True
                self._fail_everything(BackendError(f"the local model's scheduler stopped: {exc}"))

    def _serve_step(self) -> None:
        with self._cond:
            for request in [r for r in self._active if r.cancelled]:
                self.stats.cancelled += 1
                self._finish(request, drop=True)
            self._admit()
        if stop_requested():
            self._fail_everything(GenerationInterrupted("the generation was interrupted"))
            return
        started = time.perf_counter()
        try:
            self._step()
        except Exception as exc:  # a native fault: every sequence in flight ends with it
            error = BackendError(f"llama.cpp failed to decode: {exc}")
            for request in list(self._active):
                self._finish(request, error=error, drop=True)
        self.stats.step_seconds += time.perf_counter() - started

    def _fail_everything(self, error: BaseException) -> None:
        with self._cond:
            waiting = list(self._waiting)
            self._waiting.clear()
        for request in waiting:
            request.done = True
            request.out.put(error)
        for request in list(self._active):
            self._finish(request, error=error, drop=True)

    def _admit(self) -> None:
        """Move waiting sequences into free slots (called with the condition held). A sequence
        whose prompt shares a long prefix with one still being read waits for it, then copies
        it (the k samples of one task, a server's clients with one system prompt). When more
        sequences want to run than the context has slots, the context grows to the full batch
        at once (:meth:`_grow`)."""
        wanted = min(self.batch, len(self._active) + len(self._waiting))
        if wanted > len(self._slots) < self.slots:
            # before any placing: a prefix copied into a slot is written at the next decode,
            # and carrying it across before then would carry stale cells
            self._grow()
        for request in list(self._waiting):
            if len(self._active) >= self.batch:
                return
            free = [slot for slot in self._slots if slot.request is None]
            if not free:
                return
            if self._reading_its_prefix(request):
                continue
            self._waiting.remove(request)
            self._place(request, free)
            self._active.append(request)

    def _grow(self) -> None:
        """Reopen the context with all its slots, carrying every slot's KV cells across, so
        that running sequences go on where they were and cached prompts stay cached."""
        lib = self._lib
        old = self._slots
        saved = [(slot, self._saved_cells(slot)) for slot in old if slot.tokens]
        head = self._state_head
        self._open(self.slots)
        self._slots = old + self._slots[len(old) :]
        for slot, blob in saved:
            moved = restream(blob, slot.seq, len(old), len(self._slots), head)
            if moved is None or not lib.llama_state_seq_set_data(
                self._ctx,
                (ctypes.c_uint8 * len(moved)).from_buffer_copy(moved),
                len(moved),
                slot.seq,
            ):
                self._read_again(slot)
        self.stats.grown += 1

    def _saved_cells(self, slot: _Slot) -> bytes:
        """``slot``'s KV cells as llama.cpp's sequence state."""
        size = self._lib.llama_state_seq_get_size(self._ctx, slot.seq)
        buffer = (ctypes.c_uint8 * size)()
        written = self._lib.llama_state_seq_get_data(self._ctx, buffer, size, slot.seq)
        return bytes(buffer)[:written]

    def _read_again(self, slot: _Slot) -> None:
        """``slot``'s cells did not come across: a running sequence reads what it had again
        (the token it was about to evaluate last), an idle cache is dropped."""
        request, tokens = slot.request, slot.tokens
        slot.tokens, slot.chunked = [], 0
        if request is None:
            return
        if request.feed is not None:
            request.pending, request.feed = tokens + [request.feed], None
        else:
            request.pending = tokens + request.pending
        request.evaluated += len(tokens)
        self.stats.prompt_tokens += len(tokens)

    def _reading_its_prefix(self, request: _Request) -> bool:
        """Whether an active sequence is still reading a long prefix of ``request``'s prompt."""
        for active in self._active:
            slot = active.slot
            if slot is None or len(active.pending) <= 1:
                continue
            shared = common_prefix_length(active.prompt, request.prompt)
            if shared - len(slot.tokens) >= MIN_COPY:
                return True
        return False

    def _place(self, request: _Request, free: list[_Slot]) -> None:
        """Give ``request`` a slot and the longest cached prefix of its prompt."""
        prompt = request.prompt
        shared = {id(slot): _reusable(slot, prompt) for slot in self._slots}
        running = [r.slot.seq for r in self._active if r.slot is not None]

        # Keep long caches (with ``keep``), then the running sequences' slots close together:
        # a step's attention spans every KV stream from the lowest running one to the highest,
        # and 4 sequences spread over 10 streams decoded a third slower than 4 side by side.
        # A longer prefix elsewhere is copied in below, so closeness costs no prompt reading.
        def cost(slot: _Slot) -> tuple[bool, int, int, int]:
            loses = bool(self.keep) and len(slot.tokens) - shared[id(slot)] >= MIN_TOKENS
            seqs = [*running, slot.seq]
            return loses, max(seqs) - min(seqs), -shared[id(slot)], slot.used

        target = min(free, key=cost)
        source = max(self._slots, key=lambda s: shared[id(s)])
        common = shared[id(target)]
        if shared[id(source)] >= common + MIN_COPY and source is not target:
            common = shared[id(source)]
            self._copy_prefix(source, target, common)
        common = min(common, len(prompt) - 1)  # the last token is evaluated for its logits
        if request.score_from is not None:
            common = min(common, request.score_from)
        if len(prompt) - 1 - common == 1 and common:
            common -= 1  # a one-token chunk has a lone token's numbers (see _reusable)
        self._truncate(target, common)
        target.request = request
        request.slot = target
        request.pending = prompt[common:]
        request.evaluated = len(prompt) - common
        self.stats.reused_tokens += common
        self.stats.prompt_tokens += request.evaluated

    def _copy_prefix(self, source: _Slot, target: _Slot, length: int) -> None:
        """Put ``source``'s first ``length`` tokens in ``target``: each sequence has a KV
        stream of its own, and llama.cpp copies a stream whole (data copied at the next
        decode), so the copy is then cut to ``length``."""
        self._lib.llama_memory_seq_cp(self._memory, source.seq, target.seq, -1, -1)
        target.tokens, target.chunked = list(source.tokens), source.chunked
        self._truncate(target, length)

    def _truncate(self, slot: _Slot, length: int) -> None:
        if len(slot.tokens) > length:
            self._lib.llama_memory_seq_rm(self._memory, slot.seq, length, -1)
            slot.tokens = slot.tokens[:length]
            slot.chunked = min(slot.chunked, length)

    def _step(self) -> None:
        """One step: the next token of every generating sequence (and every prompt's last
        token) in one decode, then one chunk of one prompt being read."""
        single: list[tuple[_Request, int]] = []
        chunked: _Request | None = None
        for request in self._active:
            if request.feed is not None:
                single.append((request, request.feed))
            elif len(request.pending) == 1:
                single.append((request, request.pending[0]))
            elif len(request.pending) > 1 and chunked is None:
                chunked = request
        if single:
            self._decode_single(single)
        if chunked is not None:
            self._decode_chunk(chunked)

    def _decode_single(self, entries: list[tuple[_Request, int]]) -> None:
        batch = self._batch
        batch.n_tokens = len(entries)
        for index, (request, token) in enumerate(entries):
            slot = request.slot
            assert slot is not None
            batch.token[index] = token
            batch.pos[index] = len(slot.tokens)
            batch.n_seq_id[index] = 1
            batch.seq_id[index][0] = slot.seq
            batch.logits[index] = True
        self.stats.decode_seconds += self._decode(len(entries))
        self.stats.steps += 1
        self.stats.most_at_once = max(self.stats.most_at_once, len(entries))
        for index, (request, token) in enumerate(entries):
            slot = request.slot
            assert slot is not None
            slot.tokens.append(token)
            if request.feed is not None:
                request.feed = None
                self.stats.decoded += 1
            else:
                request.pending = request.pending[1:]
            pointer = self._lib.llama_get_logits_ith(self._ctx, index)
            self._advance(request, np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)))
        # (a sequence that ended is not waited for: its caller goes on with the whole answer)
        self._hand_over([r for r, _ in entries if not (r.done or r.back.is_set())])

    def _hand_over(self, handed: list[_Request]) -> None:
        """Wait (at most :data:`HANDOFF_SECONDS`) until the callers just handed a token have
        read it. A caller thread that wakes while llama.cpp computes takes a core from one of
        its threads, and the others then wait for it at every operation of the graph: with a
        caller per sequence, each step lost more the more sequences it decoded."""
        deadline = time.perf_counter() + HANDOFF_SECONDS
        for request in handed:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            if not request.cancelled:
                request.back.wait(left)

    def _decode_chunk(self, request: _Request) -> None:
        """The next piece of ``request``'s prompt (never its last token, which goes alone)."""
        slot = request.slot
        assert slot is not None
        tokens = request.pending[:-1][: self.n_batch]
        if len(request.pending) - 1 - len(tokens) == 1:
            tokens = tokens[:-1]  # no one-token chunk after this one (see _reusable)
        batch = self._batch
        batch.n_tokens = len(tokens)
        start = len(slot.tokens)
        scored = request.score_from if request.score_from is not None else len(request.prompt)
        for index, token in enumerate(tokens):
            batch.token[index] = token
            batch.pos[index] = start + index
            batch.n_seq_id[index] = 1
            batch.seq_id[index][0] = slot.seq
            batch.logits[index] = start + index >= scored
        # as llama-cpp-python's eval does: the chunk's last row is an output
        batch.logits[len(tokens) - 1] = True
        self.stats.prompt_seconds += self._decode(len(tokens))
        for index in range(max(0, scored - start), len(tokens)):
            pointer = self._lib.llama_get_logits_ith(self._ctx, index)
            row = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
            request.rows.append(np.array(row, copy=True))
        if slot.chunked == len(slot.tokens):
            slot.chunked += len(tokens)
        slot.tokens.extend(tokens)
        request.pending = request.pending[len(tokens) :]

    def _decode(self, count: int) -> float:
        """Decode the batch; the seconds it took."""
        started = time.perf_counter()
        status = self._lib.llama_decode(self._ctx, self._batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status} for {count} tokens")
        return time.perf_counter() - started

    def _advance(self, request: _Request, logits: np.ndarray) -> None:
        """Handle the logits after a sequence's latest token (a view: used before the next
        decode overwrites it)."""
        if request.sampler is None:
            if request.score_from is None:  # a scored continuation has its rows already
                request.rows.append(np.array(logits, copy=True))
            self._finish(request)
            return
        slot = request.slot
        assert slot is not None
        if len(slot.tokens) >= self.n_ctx:
            self._finish(request)  # the context is full: the caller reports "length"
            return
        try:
            step = request.sampler.step(logits)
        except Exception as exc:  # a grammar with no way on: this sequence ends with it
            self._finish(request, error=exc, drop=True)
            return
        if step is None:
            self._finish(request)
            return
        request.back.clear()
        request.out.put(step)
        if request.sampler.finished:
            self._finish(request)
        else:
            request.feed = step.token

    def _finish(
        self, request: _Request, *, error: BaseException | None = None, drop: bool = False
    ) -> None:
        """End ``request``: its caller gets the end (or ``error``); its slot keeps the cache
        unless ``drop`` (a cancelled or failed sequence's cells are freed)."""
        if request in self._active:
            self._active.remove(request)
        slot = request.slot
        if slot is not None:
            slot.request = None
            slot.used = next(self._clock)
            if drop or request.cancelled:
                self._truncate(slot, 0)
            self._trim_caches()
        if request.grammar is not None:
            request.grammar.close()
        request.done = True
        request.out.put(error if error is not None else _END)

    def _trim_caches(self) -> None:
        """Idle slots keep at most ``keep + 1`` long cached prompts (least recently used go).
        Short ones (decision scores' prompts) do not count: they cost little to evaluate
        again, and counting them would push out the long prompt they were read for."""
        idle = [s for s in self._slots if s.request is None and len(s.tokens) >= MIN_TOKENS]
        idle.sort(key=lambda s: s.used)
        for slot in idle[: max(0, len(idle) - (self.keep + 1))]:
            self._truncate(slot, 0)
