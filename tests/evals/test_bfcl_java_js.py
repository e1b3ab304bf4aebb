"""BFCL's Java and JavaScript categories: data, the tools the model is shown, scorer parity with
BFCL's own checker (called directly), runs through the normal eval path."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest
from bfcl_java_js_variants import oracle_calls, variants
from bfcl_official import MODEL, official_modules
from typer.testing import CliRunner

from tooluse import ScriptedBackend, ToolCall, register_model_prefix
from tooluse.cli.app import app
from tooluse.evals.bfcl import (
    BFCL_CATEGORIES,
    convert_java_value,
    convert_js_value,
    load_bfcl_categories,
    load_bfcl_category,
    tools_for_entry,
)
from tooluse.evals.bfcl.checker import check_entry
from tooluse.evals.bfcl.job import BFCLOptions, run_bfcl_job
from tooluse.evals.bfcl.scorer import bfcl_system_prompt

LANGUAGES = {"simple_java": "java", "simple_javascript": "javascript"}
#: Entries whose ground truth no answer can meet under BFCL's own checker.
UNREACHABLE_TRUTH = {
    # an ArrayList of ``any`` items: BFCL reads every item as a string, the answer holds 42/true
    "simple_java_36": "ArrayList<any> answer with an int and a bool",
    "simple_java_65": "ArrayList<any> answer with bools",
    # a HashMap answer whose value is a bare string: BFCL accepts only its single characters
    "simple_java_64": "HashMap answer {'format': 'epoch_millis'} without a list",
}


@pytest.fixture(scope="module")
def official():
    with official_modules() as modules:
        yield modules


@pytest.fixture(scope="module")
def language_entries():
    return {name: load_bfcl_category(name) for name in LANGUAGES}


def test_both_categories_load_with_their_real_sizes(language_entries):
    assert {k: len(v) for k, v in language_entries.items()} == {
        "simple_java": 100,
        "simple_javascript": 50,
    }
    assert all(e.ground_truth for entries in language_entries.values() for e in entries)
    assert "simple_java" in BFCL_CATEGORIES and "simple_javascript" in BFCL_CATEGORIES
    assert [e.category for e in load_bfcl_categories(["non_python"])][::50] == [
        "simple_java",
        "simple_java",
        "simple_javascript",
    ]


def test_scorer_agrees_with_bfcls_checker_on_every_answer(official, language_entries):
    checker, language = official.checker, official.Language
    official_language = {"java": language.JAVA, "javascript": language.JAVASCRIPT}
    labels: Counter[str] = Counter()
    disagreements, wrong_verdicts = [], []
    for category, entries in language_entries.items():
        lang = LANGUAGES[category]
        for entry in entries:
            answers = [("ground_truth", oracle_calls(entry, lang), True), *variants(entry, lang)]
            for label, calls, expected in answers:
                if label == "ground_truth" and entry.id in UNREACHABLE_TRUTH:
                    expected = False
                ours = check_entry(category, entry.functions, calls, entry.ground_truth)
                theirs = checker.ast_checker(
                    copy.deepcopy(list(entry.functions)),
                    copy.deepcopy(calls),
                    copy.deepcopy(list(entry.ground_truth)),
                    official_language[lang],
                    category,
                    MODEL,
                )["valid"]
                labels[label.split(":")[0]] += 1
                if ours.valid != theirs:
                    disagreements.append((entry.id, label, ours, theirs))
                if expected is not None and theirs != expected:
                    wrong_verdicts.append((entry.id, label, expected, theirs))
    assert disagreements == []
    assert wrong_verdicts == []
    # every kind of answer is exercised, so the test cannot pass vacuously
    assert labels["ground_truth"] == 150
    assert labels["extra_function"] == labels["wrong_name"] == 150
    assert labels["missing_required"] == 150
    assert labels["not_a_string"] >= 100 and labels["unreadable"] >= 100
    assert labels["wrong_value"] >= 300
    assert labels["quoted_string"] >= 30 and labels["long_without_L"] >= 5


def test_java_values_are_read_by_their_declared_type():
    assert convert_java_value("42", "integer") == 42
    assert convert_java_value("42L", "long") == 42
    assert convert_java_value("42", "long") == "42"  # no L: not a long, stays text
    assert (
        convert_java_value("1.5f", "float") == 1.5 and convert_java_value("1.5", "float") == "1.5"
    )
    assert convert_java_value("true", "boolean") is True
    assert convert_java_value("True", "boolean") == "True"
    assert convert_java_value("new int[]{1, 2}", "Array", "integer") == [1, 2]
    # Array items keep their quotes, ArrayList items lose them (as BFCL reads them)
    assert convert_java_value('new String[]{"a", "b"}', "Array", "String") == ['"a"', '"b"']
    assert convert_java_value(
        'new ArrayList<>(Arrays.asList("a", "b"))', "ArrayList", "String"
    ) == ["a", "b"]
    assert convert_java_value(
        "new ArrayList<Long>() {{ add(1L); add(2L); }}", "ArrayList", "long"
    ) == [
        1,
        2,
    ]
    assert convert_java_value(
        'new HashMap<String, Object>() {{ put("k", 1); put("s", "v"); }}', "HashMap"
    ) == {"k": 1, "s": "v"}
    assert convert_java_value("new HashMap<>()", "HashMap") == {}
    with pytest.raises(ValueError, match="Queue"):
        convert_java_value("q", "Queue")


def test_javascript_values_are_read_by_their_declared_type():
    assert (
        convert_js_value("'abc'", "String") == "abc" and convert_js_value("abc", "String") == "abc"
    )
    assert convert_js_value("12n", "Bigint") == 12 and convert_js_value("12", "Bigint") == "12"
    assert convert_js_value("[1, 'two', true]", "array") == [1, "two", True]
    assert convert_js_value("new Array(1.5, 2)", "array", "float") == [1.5, 2.0]
    assert convert_js_value("[[1, 2], [3, 4]]", "array") == [[1, 2], [3, 4]]
    assert convert_js_value("{a: 1, b: 'x', c: [1, 2]}", "dict") == {"a": 1, "b": "x", "c": [1, 2]}
    assert convert_js_value("not a dict", "dict") == "not a dict"
    with pytest.raises(ValueError, match="unsupported JavaScript type"):
        convert_js_value("1", "number")


def test_the_model_is_shown_string_parameters_described_by_their_type(language_entries):
    java = next(e for e in language_entries["simple_java"] if e.id == "simple_java_27")
    tools, names = tools_for_entry(java)
    schema = tools[0].parameters_schema["properties"]["nums"]
    assert schema["type"] == "string" and "items" not in schema
    assert "This is Java Array type parameter in string representation." in schema["description"]
    assert "The list elements are of type integer" in schema["description"]
    assert tools[0].description.endswith("Note that the provided function is in Java 8 SDK syntax.")
    assert set(names.values()) == {java.functions[0]["name"]}  # dotted name mapped back
    js = language_entries["simple_javascript"][0]
    js_tools, _ = tools_for_entry(js)
    assert js_tools[0].description.endswith("in JavaScript syntax.")
    assert all(p["type"] == "string" for p in js_tools[0].parameters_schema["properties"].values())
    assert java.functions[0]["parameters"]["properties"]["nums"]["type"] == "Array"  # unchanged
    prompt = bfcl_system_prompt(java.functions, "java")
    assert "Java 8 SDK syntax" in prompt and '"type": "string"' in prompt


# -- through the normal eval path with a scripted model ---------------------------------------


def _tool_calls(entry, calls):
    tools, names = tools_for_entry(entry)
    by_bfcl = {bfcl: tool for tool, bfcl in names.items()}
    return [ToolCall(name=by_bfcl[n], arguments=a) for call in calls for n, a in call.items()]


def test_scripted_model_through_the_job_scores_each_entry(language_entries, tmp_path):
    picked = {c: entries[:3] for c, entries in language_entries.items()}
    turns, wanted = [], {}
    for category, entries in picked.items():
        lang = LANGUAGES[category]
        right, wrong, other = entries
        turns.append(_tool_calls(right, oracle_calls(right, lang)))
        wanted[right.id] = (True, "")
        label, calls, _ = next(v for v in variants(wrong, lang) if v[0].startswith("wrong_value"))
        turns.append(_tool_calls(wrong, calls))
        wanted[wrong.id] = (False, "value_error")
        turns.append("I would rather not call anything.")
        wanted[other.id] = (False, "simple:wrong_count")
    backend = ScriptedBackend(turns)
    entries = [e for group in picked.values() for e in group]
    summary = run_bfcl_job(
        entries,
        "scripted",
        BFCLOptions(),
        tmp_path,
        progress=False,
        backend_factory=lambda m: backend,
    )
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    got = {r["id"]: (r["valid"], r["error_type"]) for r in records}
    assert set(got) == set(wanted)
    for entry_id, (valid, error_prefix) in wanted.items():
        assert got[entry_id][0] is valid, (entry_id, got[entry_id])
        assert got[entry_id][1].startswith(error_prefix), (entry_id, got[entry_id])
    assert summary["categories"]["simple_java"] == {"correct": 1, "total": 3, "accuracy": 1 / 3}
    # every offered parameter was a string (BFCL's form for these languages)
    for request in backend.requests:
        for tool in request.tools:
            assert {p["type"] for p in tool.parameters_schema["properties"].values()} == {"string"}
    score = summary["bfcl_score"]
    assert score["partial"] == ["simple_java", "simple_javascript"]
    assert "simple_python" in score["missing"] and "simple_java" not in score["missing"]


def test_a_non_string_argument_is_a_type_error_in_a_scripted_run(language_entries, tmp_path):
    entry = next(e for e in language_entries["simple_javascript"] if e.id == "simple_javascript_0")
    calls = [{"validateUserInput": {"inputField": "userInputField", "isComplete": True}}]
    backend = ScriptedBackend([_tool_calls(entry, calls)])
    run_bfcl_job(
        [entry],
        "scripted",
        BFCLOptions(),
        tmp_path,
        progress=False,
        backend_factory=lambda m: backend,
    )
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert record["valid"] is False and record["error_type"] == "type_error:js"
    assert record["decoded"] == calls  # the call as the model made it, bool and all


def test_cli_lists_every_valid_category_for_an_unknown_one():
    result = CliRunner().invoke(app, ["eval", "bfcl", "--model", "local", "-c", "simple_jav"])
    assert result.exit_code == 2
    assert "unknown BFCL category 'simple_jav'" in result.output
    for name in BFCL_CATEGORIES:
        assert name in result.output
    assert "non_python" in result.output and "multi_turn_base" in result.output
    multi = CliRunner().invoke(app, ["eval", "bfcl", "--model", "local", "-c", "multi_turn_base"])
    assert multi.exit_code == 2 and "tooluse eval env bfcl:multi_turn_base" in multi.output


def test_cli_refuses_the_bfcl_prompt_style_for_java_before_any_model_call():
    made = []
    register_model_prefix(
        "java-style-test", lambda rest, **o: made.append(1) or ScriptedBackend([]), replace=True
    )
    result = CliRunner().invoke(
        app,
        ["eval", "bfcl", "-m", "java-style-test:x", "-c", "simple_java", "--prompt-style", "bfcl"],
    )
    assert result.exit_code == 2 and "native prompt style" in result.output
    assert made == []


# -- the embedded local model -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(900)  # six prefills of long Java/JavaScript docs: 9 min on a busy machine
def test_local_model_on_three_entries_of_each_language(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "bfcl",
            "-m",
            "local:base",
            "-c",
            "non_python",
            "--limit",
            "3",
            "--max-tokens",
            "96",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    print(result.output)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted(
        [f"simple_java_{i}" for i in range(3)] + [f"simple_javascript_{i}" for i in range(3)]
    )
    assert all(isinstance(r["valid"], bool) for r in records)
    assert all(r["valid"] or r["error_type"] for r in records)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == 6
    assert {"simple_java", "simple_javascript"} <= set(summary["categories"])
    assert "BFCL v4 overall score" in result.output
