"""BFCL-format loading and the evaluation end to end (scripted backends; the local model, slow)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from tooluse import (
    HermesToolCallParser,
    ModelCapabilities,
    ScriptedBackend,
    ToolCall,
    register_model_prefix,
)
from tooluse.cli.app import app
from tooluse.evals import (
    SAMPLE_CATEGORIES,
    BFCLReport,
    load_bfcl_entries,
    load_sample,
    run_bfcl,
    tool_from_bfcl_function,
    tools_for_entry,
)


def first_accepted(alternatives):
    for value in alternatives:
        if value == "":
            continue
        if isinstance(value, dict):
            return {k: first_accepted(v) for k, v in value.items() if first_accepted(v) is not None}
        return value
    return None


def oracle_turn(entry, reverse=False):
    """The calls a perfect model would make (first accepted value of each parameter)."""
    if not entry.ground_truth:
        return "None of the functions can answer that."
    _, names = tools_for_entry(entry)
    tool_name = {bfcl: tool for tool, bfcl in names.items()}
    calls = []
    for expected in entry.ground_truth:
        name, params = next(iter(expected.items()))
        arguments = {k: first_accepted(v) for k, v in params.items()}
        arguments = {k: v for k, v in arguments.items() if v is not None}
        calls.append(ToolCall(name=tool_name[name], arguments=arguments))
    return calls[::-1] if reverse else calls


# -- data ----------------------------------------------------------------------------------------


def test_sample_covers_the_categories_with_about_twenty_entries():
    entries = load_sample()
    counts = Counter(e.category for e in entries)
    assert set(counts) == set(SAMPLE_CATEGORIES)
    assert 18 <= len(entries) <= 30
    assert all(counts[c] >= 1 for c in SAMPLE_CATEGORIES)
    assert len({e.id for e in entries}) == len(entries)
    for entry in entries:
        assert entry.functions
        if entry.category == "irrelevance":
            assert entry.ground_truth == ()
        else:
            assert entry.ground_truth
            offered = {f["name"] for f in entry.functions}
            assert all(next(iter(gt)) in offered for gt in entry.ground_truth)
        assert entry.messages()[0].role == "user"


def test_sample_category_filter_and_unknown_category():
    assert {e.category for e in load_sample(["parallel"])} == {"parallel"}
    with pytest.raises(ValueError, match="unknown sample categories live_simple"):
        load_sample(["live_simple"])


def test_bfcl_types_become_json_schema_and_dotted_names_are_mapped():
    doc = {
        "name": "geo.distance",
        "description": "Distance.",
        "parameters": {
            "type": "dict",
            "properties": {
                "km": {"type": "float"},
                "pair": {"type": "tuple", "items": {"type": "integer"}},
                "meta": {"type": "dict", "properties": {"tag": {"type": "any"}}},
            },
            "required": ["km"],
        },
    }
    tool = tool_from_bfcl_function(doc)
    assert tool.name == "geo_distance"
    assert tool.metadata["bfcl_name"] == "geo.distance"
    schema = tool.parameters_schema
    assert schema["type"] == "object"
    assert schema["properties"]["km"]["type"] == "number"
    assert schema["properties"]["pair"]["type"] == "array"
    assert schema["properties"]["meta"]["type"] == "object"
    assert schema["properties"]["meta"]["properties"]["tag"]["type"] == "string"
    assert tool.description.endswith("Python 3 syntax.")
    assert doc["parameters"]["type"] == "dict"  # the doc itself is not changed
    tool.to_openai_schema()  # exportable


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_loader_pairs_lines_and_reports_mismatches(tmp_path):
    fn = {"name": "f", "parameters": {"type": "dict", "properties": {}, "required": []}}
    question = {
        "id": "simple_python_0",
        "question": [[{"role": "user", "content": "hi"}]],
        "function": [fn],
    }
    qpath = tmp_path / "BFCL_v4_simple_python.json"
    apath = tmp_path / "answers.json"
    write_jsonl(qpath, [question])
    write_jsonl(apath, [{"id": "simple_python_0", "ground_truth": [{"f": {}}]}])
    (entry,) = load_bfcl_entries(qpath, apath)
    assert entry.category == "simple_python"
    assert entry.ground_truth == ({"f": {}},)
    write_jsonl(apath, [{"id": "simple_python_9", "ground_truth": []}])
    with pytest.raises(ValueError, match="does not match answer id 'simple_python_9'"):
        load_bfcl_entries(qpath, apath)
    write_jsonl(apath, [])
    with pytest.raises(ValueError, match="has 1 entries but its answer file has 0"):
        load_bfcl_entries(qpath, apath)
    qpath.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1: not JSON"):
        load_bfcl_entries(qpath)


# -- evaluation with scripted backends --------------------------------------------------------------


def test_oracle_backend_scores_everything():
    entries = load_sample()
    backend = ScriptedBackend([oracle_turn(e, reverse=True) for e in entries])
    report = run_bfcl(backend, entries, model="oracle")
    assert report.correct == report.total == len(entries)
    assert report.accuracy == 1.0 and report.ast_accuracy == 1.0
    assert report.error_types == {}
    # Dotted BFCL names were shown as underscores and mapped back for scoring.
    factorial = next(o for o in report.outcomes if o.id == "simple_1")
    assert factorial.decoded == ({"math.factorial": {"number": 5}},)
    assert "math_factorial" in [t.name for t in backend.requests[1].tools]


def test_wrong_answers_are_scored_per_category():
    entries = load_sample(["simple", "irrelevance"])
    turns = []
    for entry in entries:
        if entry.category == "simple":
            turns.append("I will not call anything.")  # every simple entry fails
        else:
            turns.append(oracle_turn(load_sample(["simple"])[0]))  # irrelevance entries call
    report = run_bfcl(ScriptedBackend(turns), entries)
    scores = {c.category: c for c in report.categories}
    assert scores["simple"].correct == 0 and scores["simple"].total == 7
    assert scores["irrelevance"].correct == 0
    assert report.error_types == {"simple:wrong_count": 7, "irrelevance:called": 4}
    assert report.ast_accuracy == 0.0


def test_limit_takes_the_first_entries_of_each_category():
    entries = load_sample()
    seen = []
    backend = ScriptedBackend([oracle_turn(e) for e in entries if e.id.endswith("_0")])
    report = run_bfcl(backend, entries, limit=1, on_outcome=seen.append)
    assert [o.id for o in report.outcomes] == [f"{c}_0" for c in SAMPLE_CATEGORIES]
    assert seen == list(report.outcomes)
    with pytest.raises(ValueError, match="limit"):
        run_bfcl(backend, entries, limit=0)


def test_backend_failure_is_recorded_and_the_run_goes_on():
    entries = load_sample(["multiple"])[:2]
    backend = ScriptedBackend([oracle_turn(entries[0])])  # runs out on the second entry
    report = run_bfcl(backend, entries)
    assert [o.passed for o in report.outcomes] == [True, False]
    assert report.outcomes[1].check.error_type == "backend_error"
    assert "no response left" in report.outcomes[1].check.errors[0]


def test_text_parser_mode_for_backends_without_native_calls():
    entries = load_sample(["parallel"])[:1]
    text = (
        '<tool_call>\n{"name": "get_current_weather", "arguments": {"city": "Lima"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_current_weather", "arguments": {"city": "Tokyo"}}\n</tool_call>'
    )
    backend = ScriptedBackend(
        [text], capabilities=ModelCapabilities(supports_function_calling=False)
    )
    report = run_bfcl(backend, entries, tool_call_parser=HermesToolCallParser())
    assert report.outcomes[0].passed, report.outcomes[0].check
    assert report.outcomes[0].raw_text == text
    assert backend.requests[0].tools == ()


def test_bfcl_prompting_mode_with_the_pythonic_parser():
    from tooluse.formats import get_parser

    entries = load_sample(["parallel_multiple", "irrelevance"])[:2]
    replies = [
        "[get_stock_price(ticker='TSLA'), get_current_weather(city='Oslo')]",
        "I cannot answer that with the given functions.",
    ]
    backend = ScriptedBackend(
        replies, capabilities=ModelCapabilities(supports_function_calling=False)
    )
    report = run_bfcl(backend, entries, tool_call_parser=get_parser("pythonic"))
    assert [o.passed for o in report.outcomes] == [True, True]
    system = backend.requests[0].messages[0]
    assert system.role == "system" and "[func_name1(params_name1=params_value1" in system.content


def test_report_dict_and_table_are_consistent():
    entries = load_sample()
    turns = [oracle_turn(e) if e.category != "parallel" else "no" for e in entries]
    report = run_bfcl(ScriptedBackend(turns), entries, model="half")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["total"] == len(entries) == len(data["entries"])
    assert data["correct"] == sum(e["passed"] for e in data["entries"])
    assert data["categories"]["parallel"] == {"correct": 0, "total": 4, "accuracy": 0.0}
    assert data["categories"]["simple"]["accuracy"] == 1.0
    assert data["ast_accuracy"] == pytest.approx(0.75)  # mean of 1, 1, 0, 1
    table = report.format_table()
    assert "parallel" in table and "0/4" in table and "error parallel:wrong_count: 4" in table


def assert_report_consistent(report: BFCLReport, expected_ids):
    assert [o.id for o in report.outcomes] == expected_ids
    assert report.total == len(expected_ids)
    assert report.correct == sum(o.passed for o in report.outcomes)
    assert sum(c.total for c in report.categories) == report.total
    for outcome in report.outcomes:
        assert outcome.passed == outcome.check.valid
        assert outcome.passed or outcome.check.error_type
        for call in outcome.decoded:
            assert len(call) == 1


# -- the command -----------------------------------------------------------------------------------


def test_cli_eval_bfcl(tmp_path):
    entries = load_sample()
    picked = [e for e in entries if e.id.endswith("_0")]
    turns = [oracle_turn(e) for e in picked]
    register_model_prefix(
        "bfcl-oracle-test", lambda rest, **options: ScriptedBackend(list(turns)), replace=True
    )
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["eval", "bfcl", "--model", "bfcl-oracle-test:x", "--limit", "1", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "all entries" in result.output and "5/5" in result.output
    data = json.loads(out.read_text())
    assert data["model"] == "bfcl-oracle-test:x"
    assert data["accuracy"] == 1.0 and data["total"] == 5


def test_cli_eval_env_writes_trajectories(tmp_path):
    turns = [
        [ToolCall(name="python", arguments={"code": "print(0.15 * 80)"})],
        [ToolCall(name="submit_answer", arguments={"answer": "12"})],
        [ToolCall(name="submit_answer", arguments={"answer": "50"})],
    ]
    register_model_prefix(
        "env-script-test", lambda rest, **options: ScriptedBackend(list(turns)), replace=True
    )
    out = tmp_path / "runs.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "env",
            "math:word_problems",
            "--model",
            "env-script-test:x",
            "--limit",
            "2",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "math:word_problems: solved 1/2 (50.0%)" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["success"] for r in rows] == [True, False]
    assert [r["answer"] for r in rows] == ["12", "50"]
    unknown = CliRunner().invoke(app, ["eval", "env", "--model", "local", "--env", "nope"])
    assert unknown.exit_code == 2 and "unknown environment 'nope'" in unknown.output


def test_cli_errors_are_clear():
    runner = CliRunner()
    bad_model = runner.invoke(app, ["eval", "bfcl", "--model", "nosuchprefix:x"])
    assert bad_model.exit_code == 2
    assert "cannot load model" in bad_model.output
    bad_category = runner.invoke(app, ["eval", "bfcl", "--model", "local", "-c", "nope"])
    assert bad_category.exit_code == 2
    assert "unknown BFCL category 'nope'" in bad_category.output


# -- the embedded local model ------------------------------------------------------------------------


@pytest.mark.slow
def test_local_model_on_a_few_entries():
    from tooluse.local import LlamaCppBackend

    entries = load_sample(["simple", "irrelevance"])
    backend = LlamaCppBackend.default()
    report = run_bfcl(backend, entries, limit=1)
    print("\n" + report.format_table())
    assert_report_consistent(report, ["simple_0", "irrelevance_0"])
    assert {c.category for c in report.categories} == {"simple", "irrelevance"}
    assert 0.0 <= report.accuracy <= 1.0


def test_run_bfcl_and_the_engine_job_share_one_scorer():
    from tooluse.evals.bfcl import score_bfcl_entry, score_entry

    entries = [e for e in load_sample() if e.id.endswith("_0")]
    turns = [oracle_turn(e) if i % 2 else "no call" for i, e in enumerate(entries)]
    outcomes = [score_entry(ScriptedBackend([t]), e) for t, e in zip(turns, entries)]
    records = [score_bfcl_entry(ScriptedBackend([t]), e) for t, e in zip(turns, entries)]
    for outcome, record in zip(outcomes, records):
        assert outcome.passed == record["valid"]
        assert outcome.check.error_type == record["error_type"]
        assert [dict(c) for c in outcome.decoded] == record["decoded"]
    assert any(o.passed for o in outcomes) and not all(o.passed for o in outcomes)


def test_a_backend_failure_scores_the_same_both_ways():
    from tooluse.evals.bfcl import score_bfcl_entry, score_entry

    entry = load_sample()[0]
    outcome = score_entry(ScriptedBackend([]), entry)  # no turns: the request fails
    record = score_bfcl_entry(ScriptedBackend([]), entry)
    assert outcome.check.error_type == record["error_type"] == "backend_error"
    assert outcome.check.errors == (record["error"],)
    assert not outcome.passed and outcome.decoded == ()
