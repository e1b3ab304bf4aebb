"""The token loop on a llama.cpp model: prompt prefill with prefix reuse, sampling, grammars.

Constrained decoding checks the grammar lazily: the next token is first chosen from the raw
logits and only checked against the grammar; the grammar is applied to the whole vocabulary
only when that token is rejected. For greedy decoding this picks the same token as masking first;
for sampling it draws from the same distribution (a rejected draw is redrawn from the masked,
renormalised logits). Most tokens of a tool call are the ones the model wanted anyway, so the
full-vocabulary grammar pass, which costs a few milliseconds per token, mostly disappears.
"""

from __future__ import annotations

import codecs
import ctypes
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tooluse.errors import ContextLengthError, GrammarError
from tooluse.interrupts import GenerationInterrupted, stop_requested
from tooluse.local.kv_snapshots import KVSnapshots, common_prefix_length
from tooluse.local.runtime import import_llama_cpp

__all__ = ["DecodeSettings", "DecodeStep", "GrammarSampler", "TokenLoop"]


# A model looping inside a string repeats sentences of up to ~30 tokens ("17 + 25 = 32. 32 / 6
# = 5. 5 is the remainder. ..."), longer than the repeat-penalty window.
MAX_LOOP_PERIOD = 40
LOOP_WINDOW = 2 * MAX_LOOP_PERIOD
CLOSING_BYTES = b'"}],\n '


@dataclass(frozen=True, kw_only=True)
class DecodeSettings:
    """How to pick tokens: ``temperature`` 0 is greedy; ``stop`` strings end the text."""

    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    repeat_penalty: float = 1.0
    repeat_window: int = 32
    # With a grammar: when the output starts repeating itself, end the current JSON string
    # (if the grammar allows it there) instead of looping until max_tokens.
    break_loops: bool = True
    # With a grammar: in the last ``close_within`` tokens of the budget, prefer the tokens that
    # close the structure (end the string, the object, the list), so a call that reaches its
    # budget is finished rather than cut off. The caller sizes it from the schema.
    close_within: int = 0
    # Without a grammar: end the text once it repeats a phrase (``is_text_looping``).
    stop_loops: bool = False


@dataclass(frozen=True, kw_only=True)
class DecodeStep:
    """One generated token: its id and the text it completes (may be empty mid-UTF-8)."""

    token: int
    text: str


class GrammarSampler:
    """A parsed GBNF grammar bound to a model's vocabulary (a llama.cpp grammar sampler)."""

    def __init__(self, llm: Any, gbnf: str) -> None:
        self._llama_cpp = import_llama_cpp()
        self.gbnf = gbnf
        handle = self._llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, gbnf.encode("utf-8"), b"root"
        )
        if not handle:
            # llama.cpp prints its parse error to stderr and returns NULL
            raise GrammarError("llama.cpp could not parse the generated grammar:\n" + gbnf[:2000])
        self._handle = handle
        self._one = (self._llama_cpp.llama_token_data * 1)()
        self._one_array = self._llama_cpp.llama_token_data_array(
            data=self._one, size=1, selected=-1, sorted=False
        )
        n_vocab = llm.n_vocab()
        self._all = (self._llama_cpp.llama_token_data * n_vocab)()
        self._all_view = np.ctypeslib.as_array(self._all).view(
            np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        )
        self._all_view["id"] = np.arange(n_vocab, dtype=np.intc)
        self._all_array = self._llama_cpp.llama_token_data_array(
            data=self._all, size=n_vocab, selected=-1, sorted=False
        )

    def reset(self) -> None:
        self._llama_cpp.llama_sampler_reset(self._handle)

    def allows(self, token: int) -> bool:
        """Whether the grammar accepts ``token`` next."""
        self._one[0].id = token
        self._one[0].logit = 0.0
        self._one_array.size = 1
        self._llama_cpp.llama_sampler_apply(self._handle, ctypes.byref(self._one_array))
        return not math.isinf(self._one[0].logit)

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """A copy of ``logits`` with every token the grammar rejects set to -inf."""
        self._all_view["logit"] = logits
        self._all_array.size = len(logits)
        self._all_array.sorted = False
        self._llama_cpp.llama_sampler_apply(self._handle, ctypes.byref(self._all_array))
        return np.array(self._all_view["logit"], dtype=np.float32)

    def matches(self, tokens: list[int], eos: int) -> bool:
        """Whether the grammar accepts exactly this token sequence (then end of text)."""
        self.reset()
        try:
            for token in tokens:
                if not self.allows(token):
                    return False
                self.accept(token)
            return self.allows(eos)
        finally:
            self.reset()

    def accept(self, token: int) -> None:
        self._llama_cpp.llama_sampler_accept(self._handle, token)

    def close(self) -> None:
        if self._handle:
            self._llama_cpp.llama_sampler_free(self._handle)
            self._handle = None

    def __del__(self) -> None:  # the handle is C memory
        try:
            self.close()
        except Exception:
            pass


class TokenLoop:
    """Prefill and decode on one ``llama_cpp.Llama``, reusing the cached prompt prefix.

    ``snapshots`` > 0 keeps that many earlier prompts' KV states aside
    (:class:`~tooluse.local.kv_snapshots.KVSnapshots`), for prompts that take turns; only for
    a context without ``logits_all``.
    """

    def __init__(self, llm: Any, *, snapshots: int = 0) -> None:
        self._llama_cpp = import_llama_cpp()
        self.llm = llm
        if snapshots < 0:
            raise ValueError(f"kv_snapshots must be 0 or more, not {snapshots}")
        self.snapshots = KVSnapshots(llm, limit=snapshots) if snapshots else None
        self.n_ctx: int = llm.n_ctx()
        self.n_vocab: int = llm.n_vocab()
        self.eos: int = llm.token_eos()
        self.last_prefill_tokens = 0
        self._pieces: dict[int, bytes] = {}
        self._piece_buffer = ctypes.create_string_buffer(256)
        self._quote_tokens: list[int] | None = None
        self._closers: tuple[np.ndarray, ...] | None = None
        self._space_heads: dict[bytes, np.ndarray] = {}

    def piece(self, token: int) -> bytes:
        """The bytes of one token (special tokens render as nothing)."""
        cached = self._pieces.get(token)
        if cached is None:
            size = self._llama_cpp.llama_token_to_piece(
                self.llm._model.vocab, token, self._piece_buffer, len(self._piece_buffer), 0, False
            )
            cached = self._piece_buffer.raw[: max(size, 0)]
            self._pieces[token] = cached
        return cached

    def tokenize(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def prefill(self, tokens: list[int]) -> int:
        """Evaluate ``tokens`` after the longest prefix already in the KV cache.

        Returns how many tokens were evaluated.
        """
        if not tokens:
            raise ValueError("cannot prefill an empty prompt")
        if len(tokens) >= self.n_ctx:
            raise ContextLengthError(
                f"the prompt has {len(tokens)} tokens but the context holds {self.n_ctx}; "
                "shorten the conversation or create the backend with a larger n_ctx"
            )
        llm = self.llm
        common = common_prefix_length(llm.input_ids[: llm.n_tokens], tokens)
        if self.snapshots is not None:
            common = self.snapshots.before_prefill(tokens, common)
        if common == len(tokens):
            common -= 1  # re-evaluate the last token so that its logits are current
        llm.n_tokens = common  # eval() drops the KV cells past n_tokens
        # The last token always goes alone: llama.cpp's numbers depend slightly on the batch a
        # token is evaluated in, and greedy decoding follows them, so a prompt evaluated fresh
        # in one batch and the same prompt found in the cache would otherwise differ.
        if len(tokens) - common > 1:
            llm.eval(tokens[common:-1])
        llm.eval(tokens[-1:])
        self.last_prefill_tokens = len(tokens) - common
        return self.last_prefill_tokens

    def continuation_logprob(self, prefix: str, text: str) -> float:
        """log P(``text`` | ``prefix``) under the model; needs a ``Llama`` with ``logits_all``."""
        head = self.tokenize(prefix)
        tail = self.tokenize(text)
        if not head or not tail:
            raise ValueError("both the prefix and the continuation must be non-empty")
        self.prefill(head + tail)
        rows = np.asarray(self.llm.scores[len(head) - 1 : len(head) + len(tail) - 1])
        values = rows.astype(np.float64)
        top = values.max(axis=1, keepdims=True)
        logprobs = values - top - np.log(np.exp(values - top).sum(axis=1, keepdims=True))
        return float(logprobs[np.arange(len(tail)), tail].sum())

    def logits(self) -> np.ndarray:
        """Logits of the next token (a view into llama.cpp's buffer: copy before eval)."""
        pointer = self._llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def run(
        self,
        prompt: list[int],
        settings: DecodeSettings,
        grammar: GrammarSampler | None = None,
        *,
        prefilled: bool = False,
    ) -> Iterator[DecodeStep]:
        """Generate after ``prompt`` until end of turn, the grammar's end, a stop string or
        ``max_tokens``; yields each token with its text."""
        if not prefilled:
            self.prefill(prompt)
        rng = np.random.default_rng(settings.seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        if grammar is not None:
            grammar.reset()
        text = ""
        recent: list[int] = []
        window = max(settings.repeat_window, LOOP_WINDOW)
        json_state = JsonStringState()
        for index in range(settings.max_tokens):
            _check_stop()
            if self.llm.n_tokens >= self.n_ctx:
                return  # the context is full: the caller reports finish_reason "length"
            logits = self.logits()
            if settings.repeat_penalty != 1.0 and recent:
                penalised = recent[-settings.repeat_window :]
                logits = penalise_repeats(logits, penalised, settings.repeat_penalty)
            token = -1
            if grammar is not None:
                if settings.max_tokens - index <= settings.close_within:
                    token = self._close_structure(logits, grammar, json_state.in_string)
                elif settings.break_loops and is_looping(recent):
                    token = self._close_string(logits, grammar)
            if token < 0:
                token = self._pick(logits, settings, grammar, rng)
                if grammar is not None and not json_state.in_string and self.piece(token).isspace():
                    token = self._extend_space(logits, grammar, token)
            recent = (recent + [token])[-window:]
            if grammar is None and settings.stop_loops and is_text_looping(recent):
                return
            if token == self.eos or self.llm.token_eos() == token:
                return
            if grammar is not None:
                grammar.accept(token)
            piece = decoder.decode(self.piece(token))
            json_state.feed(piece)
            text += piece
            yield DecodeStep(token=token, text=piece)
            if settings.stop and any(s in text for s in settings.stop):
                return
            self.llm.eval([token])

    def _close_string(self, logits: np.ndarray, grammar: GrammarSampler) -> int:
        """The best allowed token that ends a JSON string, or -1 when none is allowed."""
        if self._quote_tokens is None:
            self._quote_tokens = [
                t for t in range(self.n_vocab) if self.piece(t).lstrip().startswith(b'"')
            ]
        masked = grammar.mask(logits)
        allowed = [t for t in self._quote_tokens if np.isfinite(masked[t])]
        if not allowed:
            return -1
        return int(max(allowed, key=lambda t: masked[t]))

    def _close_structure(self, logits: np.ndarray, grammar: GrammarSampler, in_string: bool) -> int:
        """The allowed token that best heads for the end of the grammar.

        Inside a JSON string: a token that ends it. Outside: tokens made only of closing
        characters (brace, bracket, newline), then ones that also hold a comma or quote (on to
        a required key, an empty string), then whatever the grammar forces.
        """
        if self._closers is None:
            tiers: list[list[int]] = [[], [], [], []]
            for t in range(self.n_vocab):
                piece = self.piece(t)
                if not piece:
                    continue
                if piece[:1] == b'"':
                    tiers[2 if all(c in CLOSING_BYTES for c in piece) else 3].append(t)
                if all(c in b"}]\n" for c in piece):
                    tiers[0].append(t)
                elif all(c in CLOSING_BYTES for c in piece) and piece.strip():
                    tiers[1].append(t)
            self._closers = tuple(np.asarray(tier, dtype=np.intc) for tier in tiers)
        masked = grammar.mask(logits)
        order = (2, 3) if in_string else (0, 1)
        for index in order:
            tier = self._closers[index]
            allowed = tier[np.isfinite(masked[tier])]
            if len(allowed):
                return int(allowed[np.argmax(masked[allowed])])
        if not np.isfinite(masked).any():
            raise GrammarError("the grammar allows no token here (it has no valid completion)")
        return int(np.argmax(masked))

    def _extend_space(self, logits: np.ndarray, grammar: GrammarSampler, token: int) -> int:
        """The best allowed token that is the whitespace ``token`` followed by a quote.

        Where the grammar forces ``": "`` and a quote, a model that would rather write another
        value picks a bare space and is then pushed into an odd token (``".``) that derails
        the argument; the tokenizer itself would have written ``' "'``. ``token`` itself when
        no longer token is allowed.
        """
        piece = self.piece(token)
        longer = self._space_heads.get(piece)
        if longer is None:
            longer = np.asarray(
                [t for t in range(self.n_vocab) if self.piece(t).startswith(piece + b'"')],
                dtype=np.intc,
            )
            self._space_heads[piece] = longer
        if not len(longer):
            return token
        masked = grammar.mask(logits)
        allowed = longer[np.isfinite(masked[longer])]
        if not len(allowed):
            return token
        return int(allowed[np.argmax(masked[allowed])])

    def _pick(
        self,
        logits: np.ndarray,
        settings: DecodeSettings,
        grammar: GrammarSampler | None,
        rng: np.random.Generator,
    ) -> int:
        token = self._choose(logits, settings, rng)
        if grammar is None or grammar.allows(token):
            return token
        masked = grammar.mask(logits)
        if not np.isfinite(masked).any():
            raise GrammarError("the grammar allows no token here (it has no valid completion)")
        return self._choose(masked, settings, rng)

    @staticmethod
    def _choose(logits: np.ndarray, settings: DecodeSettings, rng: np.random.Generator) -> int:
        if settings.temperature <= 0:
            return int(np.argmax(logits))
        scaled = logits.astype(np.float64) / settings.temperature
        scaled -= scaled.max()
        probs = np.exp(scaled)
        probs /= probs.sum()
        if settings.top_p < 1.0:
            order = np.argsort(-probs)
            cumulative = np.cumsum(probs[order])
            keep = order[: int(np.searchsorted(cumulative, settings.top_p)) + 1]
            kept = np.zeros_like(probs)
            kept[keep] = probs[keep]
            probs = kept / kept.sum()
        return int(rng.choice(len(probs), p=probs))


class JsonStringState:
    """Tracks whether streamed JSON text is inside a string (quotes and backslash escapes)."""

    def __init__(self) -> None:
        self.in_string = False
        self._escaped = False

    def feed(self, text: str) -> None:
        for char in text:
            if self._escaped:
                self._escaped = False
            elif self.in_string and char == "\\":
                self._escaped = True
            elif char == '"':
                self.in_string = not self.in_string


def penalise_repeats(logits: np.ndarray, recent: list[int], penalty: float) -> np.ndarray:
    """``logits`` with the tokens of ``recent`` made less likely (llama.cpp's repeat penalty)."""
    out = np.array(logits, dtype=np.float32)
    ids = np.unique(np.asarray(recent, dtype=np.intc))
    values = out[ids]
    out[ids] = np.where(values > 0, values / penalty, values * penalty)
    return out


def is_text_looping(recent: list[int]) -> bool:
    """Whether text ends with a phrase of 6 or more tokens said three times in a row (twice
    for 12 or more); shorter repeats ("000", "!!!") are left alone."""
    for period in range(6, MAX_LOOP_PERIOD + 1):
        times = 3 if period < 12 else 2
        span = period * times
        if len(recent) < span:
            break
        tail = recent[-span:]
        if all(tail[i] == tail[i % period] for i in range(span)):
            return True
    return False


def is_looping(recent: list[int]) -> bool:
    """Whether the last tokens repeat one pattern of up to ``MAX_LOOP_PERIOD`` tokens (3 times,
    or twice for 4+ tokens)."""
    for period in range(1, MAX_LOOP_PERIOD + 1):
        times = 3 if period < 4 else 2
        span = period * times
        if len(recent) < span:
            break
        tail = recent[-span:]
        if all(tail[i] == tail[i % period] for i in range(span)):
            return True
    return False


def _check_stop() -> None:
    """Between tokens: a run interrupted in the main thread (Ctrl-C) stops this generation."""
    if stop_requested():
        raise GenerationInterrupted("the generation was interrupted")
