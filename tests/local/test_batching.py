"""The batched engine on the real embedded model: sequences decoded together give the tokens
they give alone, prompts come back from cached slots with the same logits, and a sequence that
fails, runs out, is cancelled or is interrupted ends alone."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tooluse import ChatMessage, SamplingParams
from tooluse.errors import BackendError, ContextLengthError, GrammarError
from tooluse.interrupts import GenerationInterrupted, clear_stop_request, request_stop
from tooluse.local import LlamaCppBackend
from tooluse.local.batching import MIN_TOKENS, BatchEngine
from tooluse.local.kv_memory import DEFAULT_BATCH, common_prefix_length, plan_slots, restream
from tooluse.local.sampling import DecodeSettings
from tooluse.local.threads import llama_thread_options
from tooluse.tools.normalise import as_tools

QUESTIONS = [
    "What's the weather in Paris?",
    "Tell me a joke about cats.",
    "Weather in Oslo please, in celsius.",
    "Write a haiku about rain.",
    "What time is it in Tokyo?",
    "Name three rivers in Europe.",
    "Is it raining in Lima right now?",
    "What is the capital of Peru?",
]


@pytest.mark.parametrize(
    ("one", "other", "shared"),
    [([], [1], 0), ([1, 2, 3], [1, 2, 3], 3), ([1, 2, 3], [1, 2], 2), ([1, 2], [1, 5, 2], 1),
     ([7], [8], 0), (np.array([4, 5, 6], dtype=np.intc), [4, 5, 9], 2)],
)  # fmt: skip
def test_common_prefix_length(one, other, shared):
    assert common_prefix_length(one, other) == shared


def test_the_batch_size_follows_the_kv_memory_a_sequence_needs():
    per_token = 23_040  # SmolLM2-135M: 30 layers x 3 KV heads x 64 x 2 (K, V) x 2 bytes
    assert plan_slots(4096, per_token, batch=None, keep=2) == (DEFAULT_BATCH + 2, DEFAULT_BATCH)
    # a long context takes more memory per sequence: fewer fit in the budget
    slots, batch = plan_slots(32768, per_token, batch=None, keep=2)
    assert batch == (1 << 30) // (32768 * per_token) < DEFAULT_BATCH
    assert slots == batch + 2
    assert plan_slots(64, per_token, batch=None, keep=0, budget=1) == (1, 1)  # at least one
    # a given batch size is taken as asked; cached prompts kept aside add slots
    assert plan_slots(4096, per_token, batch=1, keep=2) == (3, 1)
    assert plan_slots(4096, per_token, batch=12, keep=2) == (14, 12)
    with pytest.raises(ValueError, match="at least 1"):
        plan_slots(4096, per_token, batch=0, keep=2)


@pytest.fixture(scope="module")
def llm():
    import llama_cpp

    from tooluse.local.model_files import default_model_path

    model = llama_cpp.Llama(
        model_path=str(default_model_path()), n_ctx=256, verbose=False, **llama_thread_options()
    )
    yield model
    model.close()


@pytest.fixture(scope="module")
def prompts(backend, tools):
    """Tokenized prompts, the odd ones with the tool list (their calls under a grammar)."""
    out = []
    for index, question in enumerate(QUESTIONS):
        listed = tools if index % 2 == 0 else ()
        text = backend.render([ChatMessage.user(question)], listed)
        grammar = backend.grammar_for(tools, False) if listed else None
        out.append((backend.engine.tokenize(text), grammar))
    return out


def _engine(llm, **options):
    return BatchEngine(llm, **{"n_ctx": 1024, "threads": None, **options})


def _run_all_at_once(engine, jobs):
    """Each job on its own thread, all submitted together; the outputs in job order."""
    results: list = [None] * len(jobs)
    start = threading.Barrier(len(jobs))

    def one(index):
        prompt, settings, grammar = jobs[index]
        start.wait()
        try:
            results[index] = [step.token for step in engine.run(prompt, settings, grammar)]
        except Exception as exc:  # kept to be asserted on
            results[index] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


@pytest.mark.slow
def test_batched_greedy_outputs_equal_one_at_a_time_with_and_without_grammars(llm, prompts):
    settings = DecodeSettings(max_tokens=40)
    jobs = [(prompt, settings, grammar) for prompt, grammar in prompts]
    alone_engine = _engine(llm, batch=1)
    alone = [[s.token for s in alone_engine.run(*job)] for job in jobs]
    alone_engine.close()
    together = _engine(llm, batch=8)
    # the context holds the kept prompts and the latest until more sequences want to run
    assert len(together._slots) == 3 and together.slots == 10
    batched = _run_all_at_once(together, jobs)
    assert together.stats.most_at_once > 4  # they really shared decode steps
    assert together.stats.grown == 1 and len(together._slots) == 10
    together.close()
    assert batched == alone
    assert all(len(tokens) > 3 for tokens in alone)


def _grow_while_one_runs(engine, prompts):
    """One sequence decodes alone in a one-slot context; three more join, so the context
    grows under it. Its tokens, then the others'."""
    first = engine.run(prompts[1][0], DecodeSettings(max_tokens=40))
    taken = [next(first).token for _ in range(5)]
    assert len(engine._slots) == 1
    jobs = [(prompt, DecodeSettings(max_tokens=30), grammar) for prompt, grammar in prompts[2:5]]
    others = _run_all_at_once(engine, jobs)
    return taken + [step.token for step in first], others


@pytest.mark.slow
def test_growing_the_context_carries_a_running_sequence_across(llm, prompts):
    alone_engine = _engine(llm, batch=1, keep=0)
    alone = [s.token for s in alone_engine.run(prompts[1][0], DecodeSettings(max_tokens=40))]
    others_alone = [[s.token for s in alone_engine.run(p, DecodeSettings(max_tokens=30), g)]
                    for p, g in prompts[2:5]]  # fmt: skip
    alone_engine.close()
    engine = _engine(llm, batch=4, keep=0)
    first, others = _grow_while_one_runs(engine, prompts)
    assert engine.stats.grown == 1 and len(engine._slots) == 4
    # its cells came across: nothing was read again
    stats = engine.stats
    assert stats.prompt_tokens + stats.reused_tokens == sum(len(p) for p, _ in prompts[1:5])
    engine.close()
    assert first == alone and others == others_alone


@pytest.mark.slow
def test_a_sequence_whose_cells_cannot_move_reads_them_again(llm, prompts, monkeypatch):
    from tooluse.local import batching

    monkeypatch.setattr(batching, "restream", lambda *args: None)
    engine = _engine(llm, batch=4, keep=0)
    first, others = _grow_while_one_runs(engine, prompts)
    # the running sequence read its prompt and the tokens it had evaluated again (at least the
    # four before the fifth it handed over), then went on
    stats = engine.stats
    again = len(prompts[1][0]) + 4
    assert stats.prompt_tokens + stats.reused_tokens >= sum(len(p) for p, _ in prompts[1:5]) + again
    engine.close()
    assert len(first) > 5 and all(isinstance(tokens, list) and tokens for tokens in others)


def test_a_saved_sequence_is_laid_out_for_more_streams():
    head, cells = b"HEADER", b"\x03\x00\x00\x00cells"
    saved = head + (4).to_bytes(4, "little") + bytes(4) + cells + bytes(8)  # seq 1 of 4 streams
    moved = restream(saved, 1, 4, 6, len(head))
    assert moved == head + (6).to_bytes(4, "little") + bytes(4) + cells + bytes(16)
    assert restream(saved, 1, 5, 6, len(head)) is None  # not the stream count written
    assert restream(saved, 1, 4, 6, 0) is None  # not where the count is
    other = head + (4).to_bytes(4, "little") + (1).to_bytes(4, "little") + cells + bytes(8)
    assert restream(other, 1, 4, 6, len(head)) is None  # another stream holds cells


@pytest.mark.slow
def test_sampled_sequences_follow_their_own_seed_when_batched(llm, prompts):
    prompt, _ = prompts[1]
    jobs = [(prompt, DecodeSettings(max_tokens=24, temperature=0.9, seed=seed), None)
            for seed in (1, 2, 3, 1)]  # fmt: skip
    engine = _engine(llm, batch=4)
    batched = _run_all_at_once(engine, jobs)
    alone = [[s.token for s in engine.run(*job)] for job in jobs]
    engine.close()
    assert batched == alone
    assert batched[0] == batched[3] and len({tuple(t) for t in batched}) >= 2


@pytest.mark.slow
def test_a_sequence_joins_while_others_decode(llm, prompts):
    engine = _engine(llm, batch=4)
    long_prompt, _ = prompts[1]
    short_prompt, grammar = prompts[0]
    alone = [s.token for s in engine.run(short_prompt, DecodeSettings(max_tokens=30), grammar)]
    first = engine.run(long_prompt, DecodeSettings(max_tokens=60))
    taken = [next(first).token for _ in range(10)]  # the first sequence is mid-way
    joined = [s.token for s in engine.run(short_prompt, DecodeSettings(max_tokens=30), grammar)]
    rest = [s.token for s in first]
    engine.close()
    assert joined == alone
    assert len(taken) + len(rest) > 10


@pytest.mark.slow
def test_a_cancelled_sequence_frees_its_cells_and_the_others_finish(llm, prompts):
    engine = _engine(llm, batch=4, keep=3)  # four slots from the start: no growing
    settings = DecodeSettings(max_tokens=30)
    expected = [s.token for s in engine.run(prompts[3][0], settings)]
    stopped = engine.run(prompts[1][0], DecodeSettings(max_tokens=200))
    for _ in range(5):
        next(stopped)
    slot = next(s for s in engine._slots if s.request is not None)
    assert engine.cached_tokens(slot.seq) > 0
    other = engine.run(prompts[3][0], settings)
    first = next(other)
    stopped.close()  # the caller stops reading: the sequence is cancelled
    tokens = [first.token] + [s.token for s in other]
    assert tokens == expected
    assert engine.stats.cancelled == 1
    assert engine.cached_tokens(slot.seq) == 0 and slot.tokens == [] and slot.request is None
    engine.close()


class _DeadEndGrammar:
    """A grammar that allows nothing (what a grammar with no valid completion comes to)."""

    def copy(self):
        return self

    def reset(self):
        pass

    def allows(self, token):
        return False

    def mask(self, logits):
        return np.full_like(logits, -np.inf)

    def accept(self, token):
        raise AssertionError("no token is allowed")

    def close(self):
        pass


@pytest.mark.slow
def test_faults_end_only_their_own_sequence(llm, prompts):
    engine = _engine(llm, batch=4, n_ctx=512)
    settings = DecodeSettings(max_tokens=20)
    good_prompt = prompts[3][0]
    expected = [s.token for s in engine.run(good_prompt, settings)]
    too_long = list(range(10, 10 + 600))
    near_full = prompts[1][0] + [198] * (505 - len(prompts[1][0]))
    jobs = [
        (good_prompt, settings, None),
        (prompts[1][0], settings, _DeadEndGrammar()),  # no token allowed
        (near_full, DecodeSettings(max_tokens=100), None),  # runs out of context
        (good_prompt, DecodeSettings(max_tokens=3), None),  # runs out of budget
    ]
    results = _run_all_at_once(engine, jobs)
    assert results[0] == expected
    assert isinstance(results[1], GrammarError)
    assert 0 < len(results[2]) <= 512 - len(near_full)
    assert results[3] == expected[:3]
    with pytest.raises(ContextLengthError, match="512"):
        list(engine.run(too_long, settings))
    assert [s.token for s in engine.run(good_prompt, settings)] == expected  # still fine
    engine.close()


@pytest.mark.slow
def test_more_callers_than_the_batch_wait_their_turn(llm, prompts):
    engine = _engine(llm, batch=2, keep=0)
    settings = DecodeSettings(max_tokens=12)
    jobs = [(prompt, settings, None) for prompt, _ in prompts[:6]]
    alone = [[s.token for s in engine.run(*job)] for job in jobs]
    batched = _run_all_at_once(engine, jobs)
    assert batched == alone
    assert engine.stats.most_at_once == 2
    engine.close()


def test_a_caller_slow_to_read_its_tokens_holds_no_one_up_for_long_and_changes_nothing(
    llm, prompts
):
    # a step waits a little for its callers to read their tokens; one that reads slowly
    # (here 20 ms a token, four times the wait) only gets its tokens later
    engine = _engine(llm, batch=2, keep=0)
    settings = DecodeSettings(max_tokens=10)
    alone = [[s.token for s in engine.run(p, settings)] for p, _ in prompts[:2]]
    results: list[list[int]] = [[], []]

    def read(index: int, pause: float) -> None:
        for step in engine.run(prompts[index][0], settings):
            results[index].append(step.token)
            time.sleep(pause)

    threads = [threading.Thread(target=read, args=(i, p)) for i, p in ((0, 0.02), (1, 0.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == alone
    assert engine.stats.most_at_once == 2
    engine.close()


def test_the_engine_times_prompt_reading_decoding_and_whole_steps_apart(llm, prompts):
    engine = _engine(llm, batch=2, keep=0)
    list(engine.run(prompts[0][0], DecodeSettings(max_tokens=8)))
    stats = engine.stats
    assert stats.prompt_seconds > 0 and stats.decode_seconds > 0  # both kinds of decode ran
    # a step holds its decodes: their times add up to no more than the steps'
    assert stats.step_seconds >= stats.prompt_seconds + stats.decode_seconds
    engine.close()


@pytest.mark.slow
def test_a_stop_request_ends_every_sequence_and_clearing_it_resumes_service(llm, prompts):
    engine = _engine(llm, batch=4)
    running = engine.run(prompts[1][0], DecodeSettings(max_tokens=200))
    next(running)
    request_stop()
    try:
        with pytest.raises(GenerationInterrupted):
            list(running)
    finally:
        clear_stop_request()
    assert len(list(engine.run(prompts[3][0], DecodeSettings(max_tokens=5)))) == 5
    engine.close()


@pytest.mark.slow
def test_closing_ends_waiting_callers_with_an_error(llm, prompts):
    engine = _engine(llm, batch=1)
    running = engine.run(prompts[1][0], DecodeSettings(max_tokens=200))
    next(running)
    engine.close()
    with pytest.raises(BackendError, match="closed"):
        list(running)
    with pytest.raises(BackendError, match="closed"):
        engine.next_logits(prompts[1][0])


def _prompt(topic: str, sentences: int) -> str:
    body = " ".join(f"Fact {i} about {topic}: it is number {i * 7 % 13}." for i in range(sentences))
    return f"<|im_start|>system\n{body}<|im_end|>\n<|im_start|>user\nTell me about {topic}."


@pytest.mark.slow
def test_a_prompt_back_after_another_comes_from_its_slot_with_the_same_logits(llm):
    engine = _engine(llm, batch=1, keep=2)
    first, other = (engine.tokenize(_prompt(t, 30)) for t in ("tides", "owls"))
    assert len(first) > 3 * MIN_TOKENS and common_prefix_length(first, other) < 10
    logits = engine.next_logits(first)
    assert engine.last_prefill_tokens == len(first)
    engine.next_logits(other)
    assert engine.last_prefill_tokens > len(other) - 10  # a different prompt: evaluated
    # back to the first prompt: only its last token is evaluated again, and the numbers agree
    assert np.array_equal(engine.next_logits(first), logits)
    assert engine.last_prefill_tokens == 1
    more = engine.tokenize(" And about their colours?")
    longer = engine.next_logits(first + more)
    # its continuation goes on from it, reading again the first prompt's last token, which was
    # evaluated alone: read in a chunk, as a fresh read does, its numbers are a fresh read's
    assert engine.last_prefill_tokens == len(more) + 1
    # a prompt sharing a long prefix with a cached one copies it into a slot of its own
    fresh = _engine(llm, batch=1, keep=0)
    assert np.array_equal(fresh.next_logits(first), logits)
    fresh.close()
    fresh = _engine(llm, batch=1, keep=0)
    assert np.array_equal(fresh.next_logits(first + more), longer)
    fresh.close()
    engine.close()


@pytest.mark.slow
def test_without_kept_prompts_the_latest_prompt_replaces_the_others(llm):
    prompts = [_prompt(t, 12) for t in ("tides", "owls", "rust")]
    plain = _engine(llm, batch=1, keep=0)
    tokens = [plain.tokenize(p) for p in prompts]
    assert all(MIN_TOKENS + 20 < len(t) < 2 * MIN_TOKENS for t in tokens)
    plain.next_logits(tokens[0])
    plain.next_logits(tokens[1])
    plain.next_logits(tokens[0])
    assert plain.last_prefill_tokens > len(tokens[0]) - 10
    plain.close()
    one = _engine(llm, batch=1, keep=1)
    for prompt in tokens:
        one.next_logits(prompt)
    one.next_logits(tokens[0])  # the oldest of three went
    assert one.last_prefill_tokens > len(tokens[0]) - 10
    one.close()
    two = _engine(llm, batch=1, keep=2)
    for prompt in tokens:
        two.next_logits(prompt)
    two.next_logits(tokens[1])
    assert two.last_prefill_tokens == 1
    two.close()


@pytest.mark.slow
def test_scores_read_together_equal_scores_read_alone(llm):
    engine = _engine(llm, batch=4)
    prefixes = [f"A request for the tool {name}: " for name in ("get_weather", "get_time", "add")]
    text = "What's the weather in Paris?"
    together = engine.continuation_logprobs(prefixes, text)
    alone = [engine.continuation_logprob(prefix, text) for prefix in prefixes]
    engine.close()
    assert together == alone
    assert together[0] > together[2]  # the weather tool explains a weather request best


@pytest.mark.slow
def test_turns_with_and_without_the_tool_list_do_not_evaluate_it_each_time(tools):
    """A call turn shows the tools, a text answer does not: the next call turn finds the
    tool prompt in its slot. With ``kv_snapshots=0`` it evaluates the whole tool list again."""
    short = SamplingParams(max_tokens=24, temperature=0.0)
    evaluated = {}
    for snapshots in (2, 0):
        backend = LlamaCppBackend.default(n_ctx=2048, kv_snapshots=snapshots, batch_size=1)
        try:
            messages = [ChatMessage.user("What's the weather in Rome?")]
            call = backend.generate_with_tools(messages, tools, short, "required")
            whole = backend.engine.last_prefill_tokens
            answer = backend.generate_with_tools(messages, tools, short, "none")
            messages += [ChatMessage.assistant(answer.text), ChatMessage.user("And in Oslo?")]
            backend.generate_with_tools(messages, tools, short, "required")
            calls = [(c.name, c.arguments) for c in call.tool_calls]
            evaluated[snapshots] = (whole, backend.engine.last_prefill_tokens, calls)
        finally:
            backend.close()
    (whole, kept, calls), (_, again, plain_calls) = evaluated[2], evaluated[0]
    assert calls == plain_calls == [("get_weather", {"city": "Rome"})]
    assert whole > 3 * MIN_TOKENS
    assert kept < 100 < whole - 50 < again  # the tool list came back from its slot


@pytest.mark.slow
def test_concurrent_backend_calls_share_decode_steps_and_answer_as_alone(tools):
    backend = LlamaCppBackend.default(n_ctx=2048, batch_size=4)
    params = SamplingParams(max_tokens=24, temperature=0.0)
    asks = [
        ([ChatMessage.user("What's the weather in Rome?")], as_tools(tools), "required"),
        ([ChatMessage.user("Say hello to Ann.")], (), "none"),
        ([ChatMessage.user("What time is it in Paris?")], as_tools(tools), "required"),
        ([ChatMessage.user("Count to five.")], (), "none"),
    ]
    try:
        alone = [backend.generate(m, t, params, c) for m, t, c in asks]
        results: list = [None] * len(asks)
        start = threading.Barrier(len(asks))

        def ask(index):
            messages, listed, choice = asks[index]
            start.wait()
            results[index] = backend.generate(messages, listed, params, choice)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(asks))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert backend.engine.stats.most_at_once >= 2
    finally:
        backend.close()
    assert [(r.text, r.tool_calls and [(c.name, c.arguments) for c in r.tool_calls])
            for r in results] == [
        (r.text, r.tool_calls and [(c.name, c.arguments) for c in r.tool_calls]) for r in alone
    ]  # fmt: skip


@pytest.mark.slow
def test_an_idle_engine_nobody_holds_is_freed(llm, prompts, monkeypatch):
    import gc
    import weakref

    from tooluse.local.threads import compute_loop

    loop = compute_loop()
    monkeypatch.setattr(loop, "idle_exit", 0.2)
    engine = _engine(llm, batch=2)
    assert len(list(engine.run(prompts[1][0], DecodeSettings(max_tokens=4)))) == 4
    thread = loop._thread
    thread.join(10)  # the compute thread ends once idle: it no longer holds the engine
    assert not thread.is_alive() and loop._thread is None
    # a new sequence starts it again
    assert len(list(engine.run(prompts[1][0], DecodeSettings(max_tokens=4)))) == 4
    assert loop._thread is not None
    gone = weakref.ref(engine)
    del engine
    gc.collect()
    assert gone() is None


@pytest.mark.slow
def test_a_prompt_read_after_any_cached_prefix_of_it_has_a_fresh_reads_logits(llm):
    engine = _engine(llm, batch=1, keep=0)
    prompt = engine.tokenize(
        "<|im_start|>system\n" + "You are a helpful assistant with tools. " * 20 + "<|im_end|>\n"
        "<|im_start|>user\nWhat is the stock price of Amazon on March 11 2022?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    whole = engine.next_logits(prompt)
    engine.close()
    # the cached prefix ends with a token evaluated alone (its prompt's last); the prompt goes on
    # from the tokens before it, and never with a chunk of one token (a lone token's numbers)
    for cut in (31, 40, len(prompt) // 2, len(prompt) - 1):
        engine = _engine(llm, batch=1, keep=0)
        engine.next_logits(prompt[:cut])
        assert np.array_equal(engine.next_logits(prompt), whole), cut
        engine.close()
