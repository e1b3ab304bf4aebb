"""Scorer parity with BFCL's official AST checker on all of BFCL's single-turn data.

Every entry of the eleven v4 single-turn Python categories (from the installed ``bfcl-eval``
package) is scored with its own ground truth and with derived right and wrong answers; each
verdict must be the one BFCL's rules give (``bfcl_variants``) and the one BFCL's
``ast_checker``, called directly on the same answer, gives. The Java and JavaScript
categories are in ``test_bfcl_java_js``.
"""

from __future__ import annotations

import copy
from collections import Counter

import pytest
from bfcl_official import MODEL, official_modules
from bfcl_variants import oracle_calls, variants

from tooluse.evals import check_entry, check_parallel, check_simple
from tooluse.evals.bfcl.checker import checker_kind
from tooluse.evals.bfcl.data import PYTHON_CATEGORIES, load_bfcl_category

#: Entries whose own ground truth BFCL's checker rejects (inconsistencies in BFCL's data).
INCONSISTENT_TRUTH = {
    "parallel_multiple_12": "answer uses 'permeability', which the function doc lacks",
    "parallel_multiple_26": "answer uses 'type', which the function doc lacks",
    "live_simple_106-63-0": "required 'auto_loan_payment_start' is not in the answer",
    "live_simple_112-68-0": "required 'acc_routing_start' is not in the answer",
    "live_multiple_507-149-4": "required 'origin_airport' is not in the answer",
    "live_multiple_862-181-3": "answer uses 'journey_start_time', which the doc lacks",
    "live_multiple_964-207-0": "required 'statement' is not in the answer",
}
#: BFCL matches parallel calls greedily: here, in reversed order, an early expectation takes a
#: call that a later one needed, so BFCL says wrong.
GREEDY_MISMATCH = {("parallel_178", "reversed")}
REPAIRED = {("live_multiple_507-149-4", "empty_string:origin_airport")}


@pytest.fixture(scope="module")
def all_entries():
    return {name: load_bfcl_category(name) for name in PYTHON_CATEGORIES}


@pytest.fixture(scope="module")
def official():
    with official_modules() as modules:
        yield modules


def test_every_single_turn_category_loads_with_its_real_size(all_entries):
    sizes = {name: len(entries) for name, entries in all_entries.items()}
    assert sizes == {
        "simple_python": 400,
        "multiple": 200,
        "parallel": 200,
        "parallel_multiple": 200,
        "irrelevance": 240,
        "live_simple": 258,
        "live_multiple": 1053,
        "live_parallel": 16,
        "live_parallel_multiple": 24,
        "live_irrelevance": 884,
        "live_relevance": 16,
    }


def _official_verdict(official, category, entry, calls):
    """BFCL's ``ast_checker`` on the answer (relevance categories have no AST check in BFCL:
    their rule is whether a call was made, which the variants' verdicts already state)."""
    checker, language = official.checker, official.Language
    if checker_kind(category) in ("irrelevance", "relevance"):
        return None
    return checker.ast_checker(
        copy.deepcopy(list(entry.functions)),
        copy.deepcopy(calls),
        copy.deepcopy(list(entry.ground_truth)),
        language.PYTHON,
        category,
        MODEL,
    )["valid"]


def test_scorer_agrees_with_bfcl_on_all_ground_truth_and_wrong_variants(all_entries, official):
    labels: Counter[str] = Counter()
    disagreements, official_disagreements = [], []
    truth_valid = truth_total = 0
    for category, entries in all_entries.items():
        for entry in entries:
            answers = variants(entry)
            if entry.ground_truth:
                answers.insert(0, ("ground_truth", oracle_calls(entry), True))
            for label, calls, expected in answers:
                if entry.id in INCONSISTENT_TRUTH and expected:
                    # built on an answer BFCL itself rejects, unless the variant happens to
                    # supply the missing required parameter (as "", which the answer allows)
                    expected = (entry.id, label) in REPAIRED
                if (entry.id, label) in GREEDY_MISMATCH:
                    expected = False
                verdict = check_entry(category, entry.functions, calls, entry.ground_truth)
                labels[label.split(":")[0]] += 1
                if label == "ground_truth":
                    truth_total += 1
                    truth_valid += verdict.valid
                if verdict.valid != expected:
                    disagreements.append((entry.id, label, expected, verdict))
                theirs = _official_verdict(official, category, entry, calls)
                if theirs is not None:
                    labels["checked_by_bfcl"] += 1
                    if theirs != verdict.valid:
                        official_disagreements.append((entry.id, label, theirs, verdict))
    assert disagreements == []
    assert official_disagreements == []
    assert labels["checked_by_bfcl"] > 20000
    assert truth_total == 2351 and truth_valid == 2351 - len(INCONSISTENT_TRUTH)
    # every rule is exercised many times, so the test cannot pass vacuously
    assert labels["empty_string"] >= 700
    assert labels["empty_list"] >= 5
    assert labels["int_items_in_float_array"] >= 1
    assert labels["int_for_float"] >= 100
    assert labels["underscored_name"] >= 300
    assert labels["reused_call"] >= 150
    assert labels["reversed"] >= 200
    assert sum(labels.values()) - labels["checked_by_bfcl"] > 20000


# -- the rules, one by one ---------------------------------------------------------------------

PRICE = {
    "name": "finance.price",
    "parameters": {
        "type": "dict",
        "properties": {
            "ticker": {"type": "string"},
            "days": {"type": "integer"},
            "weights": {"type": "array", "items": {"type": "float"}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
        },
        "required": ["ticker"],
    },
}


def price(**arguments):
    return {"finance.price": arguments}


TRUTH = {
    "finance.price": {
        "ticker": ["AAPL"],
        "days": [7, ""],
        "weights": [[0.5, 2.0], ""],
        "tags": [["daily"], ""],
        "note": ["", "none"],
    }
}


def test_an_empty_value_for_an_optional_parameter_counts_as_left_out():
    assert check_simple(PRICE, price(ticker="AAPL", note=""), TRUTH).valid
    assert check_simple(PRICE, price(ticker="AAPL", tags=[]), TRUTH).valid
    required = {"finance.price": {**TRUTH["finance.price"], "tags": [["daily"]]}}
    assert not check_simple(PRICE, price(ticker="AAPL", tags=[]), required).valid


def test_int_items_in_a_float_array_are_a_nested_type_error():
    only_floats = {"finance.price": {"ticker": ["AAPL"], "weights": [[1.0, 3.0]]}}
    verdict = check_simple(PRICE, price(ticker="AAPL", weights=[1, 3]), only_floats)
    assert verdict.error_type == "type_error:nested"
    assert check_simple(PRICE, price(ticker="AAPL", weights=[1.0, 3.0]), only_floats).valid
    # with an optional "" alternative BFCL's nested check lets it through (and 1 == 1.0)
    optional = {"finance.price": {"ticker": ["AAPL"], "weights": [[1.0, 3.0], ""]}}
    assert check_simple(PRICE, price(ticker="AAPL", weights=[1, 3]), optional).valid


def test_dotted_names_must_come_back_dotted():
    assert check_simple(PRICE, price(ticker="aapl"), TRUTH).valid
    verdict = check_simple(PRICE, {"finance_price": {"ticker": "AAPL"}}, TRUTH)
    assert verdict.error_type == "simple:wrong_func_name"


def test_live_relevance_is_right_when_a_call_is_made():
    assert check_entry("live_relevance", [PRICE], [price(ticker="x")], ()).valid
    assert check_entry("live_relevance", [PRICE], [], ()).error_type == "relevance:no_call"
    assert not check_entry("live_irrelevance", [PRICE], [price(ticker="x")], ()).valid


def test_one_call_cannot_answer_two_parallel_expectations():
    """Catches a runner that reuses a matched call for a second expected call."""
    expected = [
        {"finance.price": {"ticker": ["AAPL", "MSFT"]}},
        {"finance.price": {"ticker": ["AAPL", "MSFT"]}},
    ]
    reused = [price(ticker="AAPL"), price(ticker="GOOG")]
    verdict = check_parallel([PRICE], reused, expected)
    assert not verdict.valid and verdict.error_type == "parallel:no_match"
    assert check_parallel([PRICE], [price(ticker="MSFT"), price(ticker="AAPL")], expected).valid
    assert check_entry("live_parallel", [PRICE], reused, expected).error_type == "parallel:no_match"
