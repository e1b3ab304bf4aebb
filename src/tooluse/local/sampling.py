"""Choosing one sequence's tokens from its logits: the rules every decode of the local model uses.

:class:`SequenceSampler` holds one sequence's state (its settings, grammar, random generator,
text so far) and turns each row of logits into the next :class:`DecodeStep`, or ends the
sequence. It does no model evaluation: the batched engine
(:class:`~tooluse.local.batching.BatchEngine`) evaluates, and a sequence picks the same tokens
from the same logits whatever else is decoded beside it. :class:`GrammarSampler` is a GBNF
grammar bound to the model's vocabulary (llama.cpp's grammar sampler).

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
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tooluse.errors import GrammarError
from tooluse.local.runtime import import_llama_cpp

__all__ = [
    "DecodeSettings",
    "DecodeStep",
    "GrammarSampler",
    "JsonStringState",
    "SequenceSampler",
    "TokenGrammar",
    "Vocabulary",
    "is_looping",
    "is_text_looping",
    "penalise_repeats",
]

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


class TokenGrammar(Protocol):
    """What the sampler needs of a grammar (a :class:`GrammarSampler`)."""

    def reset(self) -> None: ...

    def allows(self, token: int) -> bool: ...

    def mask(self, logits: np.ndarray) -> np.ndarray: ...

    def accept(self, token: int) -> None: ...


class GrammarSampler:
    """A parsed GBNF grammar bound to a model's vocabulary (a llama.cpp grammar sampler).

    Its parse state is one sequence's: sequences decoded at the same time each take a
    :meth:`copy`."""

    def __init__(self, llm: Any, gbnf: str) -> None:
        llama_cpp = import_llama_cpp()
        handle = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, gbnf.encode("utf-8"), b"root"
        )
        if not handle:
            # llama.cpp prints its parse error to stderr and returns NULL
            raise GrammarError("llama.cpp could not parse the generated grammar:\n" + gbnf[:2000])
        self._bind(handle, gbnf, llm.n_vocab())

    def _bind(self, handle: Any, gbnf: str, n_vocab: int) -> None:
        self._llama_cpp = import_llama_cpp()
        self.gbnf = gbnf
        self._handle = handle
        self._one = (self._llama_cpp.llama_token_data * 1)()
        self._one_array = self._llama_cpp.llama_token_data_array(
            data=self._one, size=1, selected=-1, sorted=False
        )
        self.n_vocab = n_vocab
        self._all = (self._llama_cpp.llama_token_data * n_vocab)()
        self._all_view = np.ctypeslib.as_array(self._all).view(
            np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        )
        self._all_view["id"] = np.arange(n_vocab, dtype=np.intc)
        self._all_array = self._llama_cpp.llama_token_data_array(
            data=self._all, size=n_vocab, selected=-1, sorted=False
        )

    def copy(self) -> GrammarSampler:
        """A grammar of its own for another sequence (the parsed rules are copied, not
        parsed again), in its start state."""
        handle = self._llama_cpp.llama_sampler_clone(self._handle)
        if not handle:
            raise GrammarError("llama.cpp could not copy a grammar sampler")
        twin = GrammarSampler.__new__(GrammarSampler)
        twin._bind(handle, self.gbnf, self.n_vocab)
        twin.reset()
        return twin

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


class Vocabulary:
    """A model's tokens as bytes, with the token sets the constrained rules look for (made on
    first use and shared by every sequence of the model)."""

    def __init__(self, vocab: Any, n_vocab: int, eos: int) -> None:
        self._llama_cpp = import_llama_cpp()
        self._vocab = vocab  # a llama_vocab pointer
        self.n_vocab = n_vocab
        self.eos = eos
        self._pieces: dict[int, bytes] = {}
        self._piece_buffer = ctypes.create_string_buffer(256)
        self._quote_tokens: list[int] | None = None
        self._closers: tuple[np.ndarray, ...] | None = None
        self._space_heads: dict[bytes, np.ndarray] = {}

    @classmethod
    def of(cls, llm: Any) -> Vocabulary:
        """The vocabulary of a ``llama_cpp.Llama``."""
        return cls(llm._model.vocab, llm.n_vocab(), llm.token_eos())

    def piece(self, token: int) -> bytes:
        """The bytes of one token (special tokens render as nothing)."""
        cached = self._pieces.get(token)
        if cached is None:
            size = self._llama_cpp.llama_token_to_piece(
                self._vocab, token, self._piece_buffer, len(self._piece_buffer), 0, False
            )
            cached = self._piece_buffer.raw[: max(size, 0)]
            self._pieces[token] = cached
        return cached

    def quote_tokens(self) -> list[int]:
        """Tokens that start (after whitespace) with a double quote."""
        if self._quote_tokens is None:
            self._quote_tokens = [
                t for t in range(self.n_vocab) if self.piece(t).lstrip().startswith(b'"')
            ]
        return self._quote_tokens

    def closers(self) -> tuple[np.ndarray, ...]:
        """Four tiers of closing tokens: only ``}]`` and newlines; other closing characters;
        a quote followed only by closing characters; any token starting with a quote."""
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
        return self._closers

    def space_heads(self, piece: bytes) -> np.ndarray:
        """Tokens that are ``piece`` (whitespace) followed by a quote."""
        longer = self._space_heads.get(piece)
        if longer is None:
            longer = np.asarray(
                [t for t in range(self.n_vocab) if self.piece(t).startswith(piece + b'"')],
                dtype=np.intc,
            )
            self._space_heads[piece] = longer
        return longer


class SequenceSampler:
    """One sequence's token choice: :meth:`step` turns the logits after the last token into the
    next :class:`DecodeStep`, or ``None`` when the sequence ends there (its end-of-turn token,
    a text loop with ``stop_loops``, or its ``max_tokens`` spent). :attr:`finished` says whether
    the step just taken was its last (a stop string, or the budget)."""

    def __init__(
        self,
        vocab: Vocabulary,
        settings: DecodeSettings,
        grammar: TokenGrammar | None = None,
    ) -> None:
        self.vocab = vocab
        self.settings = settings
        self.grammar = grammar
        if grammar is not None:
            grammar.reset()
        self.text = ""
        self.count = 0
        self._rng = np.random.default_rng(settings.seed)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._recent: list[int] = []
        self._window = max(settings.repeat_window, LOOP_WINDOW)
        self._json = JsonStringState()

    @property
    def finished(self) -> bool:
        """Whether no further token may follow: the budget is spent or a stop string is out."""
        stop = self.settings.stop
        return self.count >= self.settings.max_tokens or (
            bool(stop) and any(s in self.text for s in stop)
        )

    def step(self, logits: np.ndarray) -> DecodeStep | None:
        """The next token chosen from ``logits`` (the model's output after the last token)."""
        settings, grammar = self.settings, self.grammar
        if self.count >= settings.max_tokens:
            return None
        if settings.repeat_penalty != 1.0 and self._recent:
            penalised = self._recent[-settings.repeat_window :]
            logits = penalise_repeats(logits, penalised, settings.repeat_penalty)
        token = -1
        if grammar is not None:
            if settings.max_tokens - self.count <= settings.close_within:
                token = self._close_structure(logits, grammar)
            elif settings.break_loops and is_looping(self._recent):
                token = self._close_string(logits, grammar)
        if token < 0:
            token = self._pick(logits, grammar)
            if (
                grammar is not None
                and not self._json.in_string
                and self.vocab.piece(token).isspace()
            ):
                token = self._extend_space(logits, grammar, token)
        self._recent = (self._recent + [token])[-self._window :]
        if grammar is None and settings.stop_loops and is_text_looping(self._recent):
            return None
        if token == self.vocab.eos:
            return None
        if grammar is not None:
            grammar.accept(token)
        piece = self._decoder.decode(self.vocab.piece(token))
        self._json.feed(piece)
        self.text += piece
        self.count += 1
        return DecodeStep(token=token, text=piece)

    def _close_string(self, logits: np.ndarray, grammar: TokenGrammar) -> int:
        """The best allowed token that ends a JSON string, or -1 when none is allowed."""
        masked = grammar.mask(logits)
        allowed = [t for t in self.vocab.quote_tokens() if np.isfinite(masked[t])]
        if not allowed:
            return -1
        return int(max(allowed, key=lambda t: masked[t]))

    def _close_structure(self, logits: np.ndarray, grammar: TokenGrammar) -> int:
        """The allowed token that best heads for the end of the grammar.

        Inside a JSON string: a token that ends it. Outside: tokens made only of closing
        characters (brace, bracket, newline), then ones that also hold a comma or quote (on to
        a required key, an empty string), then whatever the grammar forces.
        """
        closers = self.vocab.closers()
        masked = grammar.mask(logits)
        order = (2, 3) if self._json.in_string else (0, 1)
        for index in order:
            tier = closers[index]
            allowed = tier[np.isfinite(masked[tier])]
            if len(allowed):
                return int(allowed[np.argmax(masked[allowed])])
        if not np.isfinite(masked).any():
            raise GrammarError("the grammar allows no token here (it has no valid completion)")
        return int(np.argmax(masked))

    def _extend_space(self, logits: np.ndarray, grammar: TokenGrammar, token: int) -> int:
        """The best allowed token that is the whitespace ``token`` followed by a quote.

        Where the grammar forces ``": "`` and a quote, a model that would rather write another
        value picks a bare space and is then pushed into an odd token (``".``) that derails
        the argument; the tokenizer itself would have written ``' "'``. ``token`` itself when
        no longer token is allowed.
        """
        longer = self.vocab.space_heads(self.vocab.piece(token))
        if not len(longer):
            return token
        masked = grammar.mask(logits)
        allowed = longer[np.isfinite(masked[longer])]
        if not len(allowed):
            return token
        return int(allowed[np.argmax(masked[allowed])])

    def _pick(self, logits: np.ndarray, grammar: TokenGrammar | None) -> int:
        token = self._choose(logits)
        if grammar is None or grammar.allows(token):
            return token
        masked = grammar.mask(logits)
        if not np.isfinite(masked).any():
            raise GrammarError("the grammar allows no token here (it has no valid completion)")
        return self._choose(masked)

    def _choose(self, logits: np.ndarray) -> int:
        settings = self.settings
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
        return int(self._rng.choice(len(probs), p=probs))


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
