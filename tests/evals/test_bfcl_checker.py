"""The BFCL-style AST checker on hand-made right and wrong answers."""

from __future__ import annotations

import pytest

from tooluse.evals import (
    check_entry,
    check_irrelevance,
    check_multiple,
    check_parallel,
    check_simple,
    standardize_string,
)

AREA = {
    "name": "calculate_triangle_area",
    "description": "Area of a triangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer"},
            "height": {"type": "integer"},
            "unit": {"type": "string"},
        },
        "required": ["base", "height"],
    },
}
AREA_TRUTH = {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}

INTEREST = {
    "name": "calc_interest",
    "parameters": {
        "type": "dict",
        "properties": {
            "principal": {"type": "float"},
            "rate": {"type": "float"},
            "flags": {"type": "array", "items": {"type": "string"}},
            "coords": {"type": "tuple", "items": {"type": "integer"}},
            "compound": {"type": "boolean"},
            "owner": {
                "type": "dict",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            },
        },
        "required": ["principal"],
    },
}
INTEREST_TRUTH = {
    "calc_interest": {
        "principal": [1000.0],
        "rate": [0.05, ""],
        "flags": [["monthly", "net"], ""],
        "coords": [[3, 4], ""],
        "compound": [True, ""],
        "owner": [{"name": ["Ada Lovelace"], "age": [36, ""]}, ""],
    }
}

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
STOCK = {
    "name": "stock.price",
    "parameters": {
        "type": "dict",
        "properties": {"ticker": {"type": "string"}},
        "required": ["ticker"],
    },
}


def area(**arguments):
    return {"calculate_triangle_area": arguments}


def interest(**arguments):
    return {"calc_interest": {"principal": 1000.0, **arguments}}


# -- simple --------------------------------------------------------------------------------------


def test_exact_answer_passes():
    assert check_simple(AREA, area(base=10, height=5, unit="units"), AREA_TRUTH).valid


def test_optional_param_with_empty_alternative_may_be_left_out():
    assert check_simple(AREA, area(base=10, height=5), AREA_TRUTH).valid


def test_string_comparison_ignores_case_spaces_and_punctuation():
    assert check_simple(AREA, area(base=10, height=5, unit="Units"), AREA_TRUTH).valid
    assert check_simple(AREA, area(base=10, height=5, unit=" u-n_i.t s "), AREA_TRUTH).valid
    assert standardize_string("New York, NY") == "newyorkny"
    assert standardize_string("it's") == 'it"s'


@pytest.mark.parametrize(
    ("call", "error_type"),
    [
        ({"calculate_area": {"base": 10, "height": 5}}, "simple:wrong_func_name"),
        (area(base=10), "simple:missing_required"),
        (area(base=10, height=5, color="red"), "simple:unexpected_param"),
        (area(base=10.0, height=5), "type_error:integer"),
        (area(base="10", height=5), "type_error:integer"),
        (area(base=True, height=5), "type_error:integer"),
        (area(base=11, height=5), "value_error:value"),
        (area(base=10, height=5, unit="meters"), "value_error:string"),
        ({"calculate_triangle_area": {"base": 10, "height": 5}, "x": {}}, "simple:wrong_shape"),
    ],
)
def test_wrong_simple_answers_fail_with_the_right_error_type(call, error_type):
    verdict = check_simple(AREA, call, AREA_TRUTH)
    assert not verdict.valid
    assert verdict.error_type == error_type
    assert verdict.errors


def test_param_in_schema_but_not_in_the_answer_is_unexpected():
    truth = {"calculate_triangle_area": {"base": [10], "height": [5]}}
    verdict = check_simple(AREA, area(base=10, height=5, unit="units"), truth)
    assert verdict.error_type == "simple:unexpected_param"


def test_missing_param_without_default_in_the_answer_fails():
    truth = {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["cm"]}}
    verdict = check_simple(AREA, area(base=10, height=5), truth)
    assert verdict.error_type == "simple:missing_optional"


def test_float_accepts_int_but_not_bool_or_string():
    assert check_simple(INTEREST, {"calc_interest": {"principal": 1000}}, INTEREST_TRUTH).valid
    assert not check_simple(INTEREST, {"calc_interest": {"principal": True}}, INTEREST_TRUTH).valid
    verdict = check_simple(INTEREST, {"calc_interest": {"principal": "1000"}}, INTEREST_TRUTH)
    assert verdict.error_type == "type_error:float"


def test_float_value_must_be_accepted():
    assert check_simple(INTEREST, interest(rate=0.05), INTEREST_TRUTH).valid
    assert check_simple(INTEREST, interest(rate=0.050), INTEREST_TRUTH).valid
    assert not check_simple(INTEREST, interest(rate=5), INTEREST_TRUTH).valid


def test_lists_compare_in_order_with_normalised_strings():
    assert check_simple(INTEREST, interest(flags=["Monthly", "NET"]), INTEREST_TRUTH).valid
    verdict = check_simple(INTEREST, interest(flags=["net", "monthly"]), INTEREST_TRUTH)
    assert verdict.error_type == "value_error:list"
    assert not check_simple(INTEREST, interest(flags=["monthly"]), INTEREST_TRUTH).valid


def test_tuple_params_take_lists_or_tuples():
    assert check_simple(INTEREST, interest(coords=[3, 4]), INTEREST_TRUTH).valid
    assert check_simple(INTEREST, interest(coords=(3, 4)), INTEREST_TRUTH).valid
    assert not check_simple(INTEREST, interest(coords=[4, 3]), INTEREST_TRUTH).valid
    assert check_simple(INTEREST, interest(coords="3,4"), INTEREST_TRUTH).error_type == (
        "type_error:tuple"
    )


def test_booleans_are_not_numbers():
    assert check_simple(INTEREST, interest(compound=True), INTEREST_TRUTH).valid
    assert not check_simple(INTEREST, interest(compound=1), INTEREST_TRUTH).valid
    assert not check_simple(INTEREST, interest(compound=False), INTEREST_TRUTH).valid


def test_dict_params():
    ok = interest(owner={"name": "ada lovelace", "age": 36})
    assert check_simple(INTEREST, ok, INTEREST_TRUTH).valid
    assert check_simple(INTEREST, interest(owner={"name": "Ada Lovelace"}), INTEREST_TRUTH).valid
    missing = check_simple(INTEREST, interest(owner={"age": 36}), INTEREST_TRUTH)
    assert missing.error_type == "value_error:dict" and "missing key 'name'" in missing.errors[0]
    extra = check_simple(
        INTEREST, interest(owner={"name": "Ada Lovelace", "city": "London"}), INTEREST_TRUTH
    )
    assert "unexpected key 'city'" in extra.errors[0]
    wrong = check_simple(INTEREST, interest(owner={"name": "Ada", "age": 36}), INTEREST_TRUTH)
    assert not wrong.valid


def test_variable_escape_accepts_an_alternative_of_another_type_exactly():
    truth = {"calculate_triangle_area": {"base": ["b", 10], "height": [5]}}
    assert check_simple(AREA, area(base="b", height=5), truth).valid
    assert not check_simple(AREA, area(base="c", height=5), truth).valid


# -- multiple, parallel, irrelevance ------------------------------------------------------------


def test_multiple_needs_exactly_one_call_of_the_right_function():
    functions = [WEATHER, STOCK]
    truth = [{"stock.price": {"ticker": ["AAPL"]}}]
    assert check_multiple(functions, [{"stock.price": {"ticker": "aapl"}}], truth).valid
    wrong = check_multiple(functions, [{"get_weather": {"city": "AAPL"}}], truth)
    assert wrong.error_type == "simple:wrong_func_name"
    two = [{"stock.price": {"ticker": "AAPL"}}, {"stock.price": {"ticker": "AAPL"}}]
    assert check_multiple(functions, two, truth).error_type == "multiple:wrong_count"
    assert check_multiple(functions, [], truth).error_type == "multiple:wrong_count"


def test_parallel_is_order_insensitive():
    truth = [{"get_weather": {"city": ["Tokyo"]}}, {"get_weather": {"city": ["Lima"]}}]
    forward = [{"get_weather": {"city": "Tokyo"}}, {"get_weather": {"city": "Lima"}}]
    backward = forward[::-1]
    assert check_parallel([WEATHER], forward, truth).valid
    assert check_parallel([WEATHER], backward, truth).valid


def test_parallel_counts_and_distinct_matches():
    truth = [{"get_weather": {"city": ["Tokyo"]}}, {"get_weather": {"city": ["Lima"]}}]
    one = [{"get_weather": {"city": "Tokyo"}}]
    assert check_parallel([WEATHER], one, truth).error_type == "parallel:wrong_count"
    same_twice = [{"get_weather": {"city": "Tokyo"}}, {"get_weather": {"city": "Tokyo"}}]
    verdict = check_parallel([WEATHER], same_twice, truth)
    assert verdict.error_type == "parallel:no_match"
    assert "'get_weather'" in verdict.errors[0]


def test_parallel_multiple_mixes_functions_in_any_order():
    truth = [{"get_weather": {"city": ["Oslo"]}}, {"stock.price": {"ticker": ["TSLA"]}}]
    calls = [{"stock.price": {"ticker": "TSLA"}}, {"get_weather": {"city": "oslo"}}]
    assert check_entry("parallel_multiple", [WEATHER, STOCK], calls, truth).valid
    wrong = [{"stock.price": {"ticker": "TSLA"}}, {"stock.price": {"ticker": "OSLO"}}]
    assert not check_entry("parallel_multiple", [WEATHER, STOCK], wrong, truth).valid


def test_irrelevance_passes_only_without_calls():
    assert check_irrelevance([]).valid
    verdict = check_irrelevance([{"get_weather": {"city": "Paris"}}])
    assert verdict.error_type == "irrelevance:called"
    assert "get_weather" in verdict.errors[0]


def test_check_entry_dispatches_by_category():
    truth = [AREA_TRUTH]
    good = [area(base=10, height=5)]
    assert check_entry("simple", [AREA], good, truth).valid
    assert check_entry("simple_python", [AREA], good, truth).valid
    assert check_entry("simple", [AREA], good + good, truth).error_type == "simple:wrong_count"
    assert check_entry("simple", [AREA], [], truth).error_type == "simple:wrong_count"
    assert check_entry("live_irrelevance", [AREA], [], ()).valid
    assert not check_entry("irrelevance", [AREA], good, ()).valid
