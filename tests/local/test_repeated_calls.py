"""A turn of parallel calls that starts repeating an earlier call ends there."""

from __future__ import annotations

import pytest

from tooluse.evals.bfcl.data import load_bfcl_category, tools_for_entry
from tooluse.local.profiles import HERMES, SMOLLM2
from tooluse.messages import ToolCall
from tooluse.providers.base import SamplingParams

A = ToolCall(name="gcd", arguments={"a": 45, "b": 60})
B = ToolCall(name="gcd", arguments={"a": 81, "b": 63})


@pytest.mark.parametrize("profile", [SMOLLM2, HERMES], ids=["list-form", "one-per-wrapper"])
def test_calls_before_repeat_cuts_at_the_first_exact_repeat(profile):
    text = profile.render_calls([A, B, A])
    if profile.list_form:
        text = text[: len(text) - len(profile.close)]
    kept = profile.calls_before_repeat(text)
    assert kept is not None
    assert [(c.name, c.arguments) for c in kept] == [(A.name, A.arguments), (B.name, B.arguments)]


@pytest.mark.parametrize("profile", [SMOLLM2, HERMES], ids=["list-form", "one-per-wrapper"])
def test_distinct_or_unfinished_calls_are_not_a_repeat(profile):
    other = ToolCall(name="gcd", arguments={"a": 45, "b": 61})
    distinct = profile.render_calls([A, B, other])
    assert profile.calls_before_repeat(distinct) is None
    # the repeat is still being written: its arguments are not closed yet
    unfinished = profile.render_calls([A, A])
    cut = unfinished.rindex("60}") + 2
    assert profile.calls_before_repeat(unfinished[:cut]) is None
    assert profile.calls_before_repeat(profile.render_calls([A])) is None


@pytest.fixture(scope="module")
def eval_backend():
    """The embedded model as ``tooluse eval bfcl`` loads it (context size changes its output)."""
    from tooluse.local import LlamaCppBackend

    instance = LlamaCppBackend.default()
    yield instance
    instance.close()


@pytest.mark.slow
def test_the_local_model_stops_a_looping_turn_of_calls(eval_backend):
    """BFCL parallel_78: SmolLM2 writes the two asked-for calls, then repeats the first."""
    entry = next(e for e in load_bfcl_category("parallel") if e.id == "parallel_78")
    tools, _ = tools_for_entry(entry)
    params = SamplingParams(temperature=0.0, parallel_tool_calls=True)
    backend = eval_backend
    backend.stop_repeated_calls = False
    looping = backend.generate_with_tools(entry.messages(), tools, params, "required")
    backend.stop_repeated_calls = True
    stopped = backend.generate_with_tools(entry.messages(), tools, params, "required")
    seen = [(c.name, c.arguments) for c in looping.tool_calls]
    assert len(seen) > len({repr(s) for s in seen}), "the model no longer loops on this entry"
    kept = [(c.name, c.arguments) for c in stopped.tool_calls]
    assert len(kept) == len({repr(k) for k in kept})
    assert kept == seen[: len(kept)] and len(kept) == 2
    assert stopped.raw["repeat_dropped"] is True and looping.raw["repeat_dropped"] is False
    assert stopped.usage.output_tokens < looping.usage.output_tokens
