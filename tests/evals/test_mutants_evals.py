"""Tests aimed at mutants of the BFCL checker that the other checker tests let through."""

from __future__ import annotations

from tooluse.evals import check_entry, check_parallel

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}


def test_parallel_never_matches_one_call_twice():
    """Issue 16: two equal expectations need two calls; one right call must not answer both."""
    truth = [{"get_weather": {"city": ["Tokyo"]}}, {"get_weather": {"city": ["Tokyo"]}}]
    calls = [{"get_weather": {"city": "Tokyo"}}, {"get_weather": {"city": "Lima"}}]
    verdict = check_parallel([WEATHER], calls, truth)
    assert not verdict.valid
    assert verdict.error_type == "parallel:no_match"
    # The same answer through the category dispatcher, and the right pair passes.
    assert not check_entry("parallel", [WEATHER], calls, truth).valid
    both = [{"get_weather": {"city": "Tokyo"}}, {"get_weather": {"city": "Tokyo"}}]
    assert check_parallel([WEATHER], both, truth).valid
