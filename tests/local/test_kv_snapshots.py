"""Saved KV states on the real embedded model: a prompt that comes back after another one is
restored instead of evaluated again, with the same logits; the store's limits hold; and the
backend's turns with and without the tool list stop evaluating the tool list each time."""

from __future__ import annotations

import numpy as np
import pytest

from tooluse import ChatMessage, SamplingParams
from tooluse.local import LlamaCppBackend
from tooluse.local.decoding import TokenLoop
from tooluse.local.kv_snapshots import MIN_TOKENS, KVSnapshots, common_prefix_length
from tooluse.local.threads import llama_thread_options


@pytest.mark.parametrize(
    ("one", "other", "shared"),
    [([], [1], 0), ([1, 2, 3], [1, 2, 3], 3), ([1, 2, 3], [1, 2], 2), ([1, 2], [1, 5, 2], 1),
     ([7], [8], 0), (np.array([4, 5, 6], dtype=np.intc), [4, 5, 9], 2)],
)  # fmt: skip
def test_common_prefix_length(one, other, shared):
    assert common_prefix_length(one, other) == shared


def test_a_store_keeps_at_least_one_state():
    with pytest.raises(ValueError, match="at least one"):
        KVSnapshots(object(), limit=0)
    with pytest.raises(ValueError, match="kv_snapshots must be 0 or more"):
        TokenLoop(object(), snapshots=-1)


def _prompt(topic: str, sentences: int) -> str:
    body = " ".join(f"Fact {i} about {topic}: it is number {i * 7 % 13}." for i in range(sentences))
    return f"<|im_start|>system\n{body}<|im_end|>\n<|im_start|>user\nTell me about {topic}."


@pytest.fixture(scope="module")
def llm():
    import llama_cpp

    from tooluse.local.model_files import default_model_path

    model = llama_cpp.Llama(
        model_path=str(default_model_path()), n_ctx=2048, verbose=False, **llama_thread_options()
    )
    yield model
    model.close()


@pytest.mark.slow
def test_a_prompt_back_after_another_is_restored_with_the_same_logits(llm):
    loop = TokenLoop(llm, snapshots=2)
    first, other = (loop.tokenize(_prompt(t, 30)) for t in ("tides", "owls"))
    assert len(first) > 3 * MIN_TOKENS and common_prefix_length(first, other) < 10
    assert loop.prefill(first) == len(first)
    logits = loop.logits().copy()
    assert loop.prefill(other) > len(other) - 10  # a different prompt: evaluated
    assert [len(s.tokens) for s in loop.snapshots.saved] == [len(first)]
    # back to the first prompt: only its last token is evaluated again, and the numbers agree
    assert loop.prefill(first) == 1
    assert np.array_equal(loop.logits(), logits)
    assert loop.snapshots.restored == len(first)
    # the live state is not kept twice: the first prompt left the store, the other went in
    assert [len(s.tokens) for s in loop.snapshots.saved] == [len(other)]
    more = loop.tokenize(" And about their colours?")
    assert loop.prefill(first + more) == len(more)  # its continuation goes on from it


@pytest.mark.slow
def test_without_snapshots_or_past_the_limits_the_prompt_is_evaluated_again(llm):
    # just long enough to be kept: this test evaluates them eleven times
    prompts = [llm.tokenize(_prompt(t, 12).encode(), add_bos=False, special=True)
               for t in ("tides", "owls", "rust")]  # fmt: skip
    assert all(MIN_TOKENS + 20 < len(p) < 2 * MIN_TOKENS for p in prompts)
    plain = TokenLoop(llm)
    for tokens in (prompts[0], prompts[1]):
        plain.prefill(tokens)
    assert plain.prefill(prompts[0]) > len(prompts[0]) - 10 and plain.snapshots is None
    one = TokenLoop(llm, snapshots=1)
    for tokens in prompts:
        one.prefill(tokens)
    assert [len(s.tokens) for s in one.snapshots.saved] == [len(prompts[1])]  # the oldest went
    assert one.prefill(prompts[0]) > len(prompts[0]) - 10
    two = TokenLoop(llm, snapshots=2)
    for tokens in prompts:
        two.prefill(tokens)
    assert [len(s.tokens) for s in two.snapshots.saved] == [len(p) for p in prompts[:2]]
    assert two.prefill(prompts[1]) == 1  # the newer of two saved states comes back
    assert [len(s.tokens) for s in two.snapshots.saved] == [len(prompts[0]), len(prompts[2])]
    tiny = TokenLoop(llm, snapshots=2)
    tiny.snapshots.max_bytes = 1024  # smaller than any state: nothing is kept
    tiny.prefill(prompts[0])
    tiny.prefill(prompts[1])
    assert tiny.snapshots.saved == [] and tiny.prefill(prompts[0]) > len(prompts[0]) - 10


@pytest.mark.slow
def test_turns_with_and_without_the_tool_list_do_not_evaluate_it_each_time(tools):
    """A call turn shows the tools, a text answer does not: the next call turn finds the
    tool prompt saved. With ``kv_snapshots=0`` it evaluates the whole tool list again."""
    short = SamplingParams(max_tokens=24, temperature=0.0)
    evaluated = {}
    for snapshots in (2, 0):
        backend = LlamaCppBackend.default(n_ctx=2048, kv_snapshots=snapshots)
        try:
            messages = [ChatMessage.user("What's the weather in Rome?")]
            call = backend.generate_with_tools(messages, tools, short, "required")
            whole = backend.loop.last_prefill_tokens
            answer = backend.generate_with_tools(messages, tools, short, "none")
            messages += [ChatMessage.assistant(answer.text), ChatMessage.user("And in Oslo?")]
            backend.generate_with_tools(messages, tools, short, "required")
            calls = [(c.name, c.arguments) for c in call.tool_calls]
            evaluated[snapshots] = (whole, backend.loop.last_prefill_tokens, calls)
        finally:
            backend.close()
    (whole, kept, calls), (_, again, plain_calls) = evaluated[2], evaluated[0]
    assert calls == plain_calls == [("get_weather", {"city": "Rome"})]
    assert whole > 3 * MIN_TOKENS
    assert kept < 100 < whole - 50 < again  # the tool list came back from its snapshot
