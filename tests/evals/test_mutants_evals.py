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


ZONE = {
    "name": "set_zone",
    "parameters": {
        "type": "dict",
        # a type name BFCL's Python rules do not know: values are compared as they are
        "properties": {"zone": {"type": "timezone"}},
        "required": ["zone"],
    },
}


def test_unknown_parameter_types_compare_values():
    from tooluse.evals.bfcl.checker import check_simple

    truth = {"set_zone": {"zone": ["UTC", "GMT"]}}
    assert check_simple(ZONE, {"set_zone": {"zone": "GMT"}}, truth).valid
    wrong = check_simple(ZONE, {"set_zone": {"zone": "CET"}}, truth)
    assert not wrong.valid
    assert wrong.error_type == "value_error:value"


def test_every_public_name_exists():
    import tooluse.evals.bfcl.checker as checker

    for name in checker.__all__:
        assert hasattr(checker, name), name
