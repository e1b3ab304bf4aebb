"""BFCL v4's overall score: parity with bfcl-eval's own leaderboard aggregation, missing and
partial categories, and the score in ``eval bfcl`` summaries and ``tooluse report``."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from bfcl_official import MODEL, official_modules
from typer.testing import CliRunner

from tooluse import ScriptedBackend, register_model_prefix
from tooluse.cli.app import app
from tooluse.evals.bfcl import load_bfcl_category
from tooluse.evals.bfcl.overall import (
    CATEGORY_SIZES,
    GROUP_WEIGHTS,
    SCORED_CATEGORIES,
    CategoryResult,
    bfcl_score,
    category_results,
)
from tooluse.evals.report import load_run, markdown_table, render_report

#: Some categories run (a few on part of their entries), many missing.
PARTIAL_SET = {
    "simple_python": (300, 400),
    "simple_javascript": (20, 50),
    "multiple": (150, 200),
    "parallel": (10, 20),
    "live_simple": (100, 258),
    "live_multiple": (500, 1053),
    "live_parallel": (3, 16),
    "irrelevance": (200, 240),
    "multi_turn_base": (50, 200),
    "multi_turn_miss_param": (5, 20),
    "memory_kv": (10, 155),
    "web_search_base": (30, 100),
    "live_relevance": (10, 16),
}


def _complete_set(seed: int) -> dict[str, tuple[int, int]]:
    rng = random.Random(seed)
    sizes = {c: CATEGORY_SIZES[c] for c in (*SCORED_CATEGORIES, "live_relevance")}
    return {c: (rng.randint(0, n), n) for c, n in sizes.items()}


@pytest.fixture(scope="module")
def official():
    with official_modules() as modules:
        yield modules


def _official_rows(helper, results):
    """bfcl-eval's leaderboard rows for ``results``, captured before they are written as CSV
    (their numbers unrounded), keyed by file name."""
    captured = {}

    def capture(data, file_path, header, sort_column_index, no_conversion_numeric_column_index=()):
        captured[Path(file_path).name] = dict(zip(header, copy.deepcopy(data[0]), strict=True))

    original = helper.write_score_csv_file
    helper.write_score_csv_file = capture
    try:
        table = {MODEL: {c: {"accuracy": k / n, "total_count": n} for c, (k, n) in results.items()}}
        helper.generate_leaderboard_csv(table, Path("unused"))
    finally:
        helper.write_score_csv_file = original
    return captured


def _compare(score, rows):
    overall = rows["data_overall.csv"]
    assert score.overall == pytest.approx(overall["Overall Acc"], abs=1e-12)
    assert score.group("non_live").accuracy == pytest.approx(
        rows["data_non_live.csv"]["Non-Live Overall Acc"], abs=1e-12
    )
    assert score.group("live").accuracy == pytest.approx(
        rows["data_live.csv"]["Live Overall Acc"], abs=1e-12
    )
    assert score.group("multi_turn").accuracy == pytest.approx(
        rows["data_multi_turn.csv"]["Multi Turn Overall Acc"], abs=1e-12
    )
    assert score.group("agentic").accuracy == pytest.approx(
        rows["data_agentic.csv"]["Agentic Overall Acc"], abs=1e-12
    )


def test_overall_and_groups_equal_bfcl_evals_with_missing_categories(official):
    helper = official.helper
    score = bfcl_score(PARTIAL_SET)
    rows = _official_rows(helper, PARTIAL_SET)
    _compare(score, rows)
    assert score.relevance == pytest.approx(rows["data_live.csv"]["Relevance Detection"])
    # the missing categories are named, group by group, and each group's "display" is N/A
    assert score.group("non_live").missing == ("simple_java", "parallel_multiple")
    assert rows["data_non_live.csv"]["AST Summary"] == "N/A"
    assert score.group("irrelevance").missing == ("live_irrelevance",)
    assert set(score.missing) == set(SCORED_CATEGORIES) - set(PARTIAL_SET)
    assert score.partial == ("parallel", "multi_turn_miss_param")
    assert not score.complete
    assert score.group("agentic").parts["memory"] == pytest.approx(10 / 155 / 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_number_equals_bfcl_evals_on_a_complete_set(official, seed):
    helper = official.helper
    results = _complete_set(seed)
    score = bfcl_score(results)
    rows = _official_rows(helper, results)
    _compare(score, rows)
    overall = rows["data_overall.csv"]
    assert score.group("irrelevance").accuracy == pytest.approx(overall["Irrelevance Detection"])
    assert score.group("non_live").parts["simple"] == pytest.approx(overall["Non-Live Simple AST"])
    assert score.group("agentic").parts["web_search"] == pytest.approx(overall["Web Search Acc"])
    assert score.group("agentic").parts["memory"] == pytest.approx(overall["Memory Acc"])
    assert score.complete and score.missing == () and score.partial == ()


def test_category_sizes_are_bfcl_evals_entry_counts(official):
    from bfcl_eval.utils import load_dataset_entry  # loaded with the stand-in registry

    for category, size in CATEGORY_SIZES.items():
        entries = load_dataset_entry(
            category, include_prereq=False, include_language_specific_hint=False
        )
        assert len(entries) == size, category
    assert sum(GROUP_WEIGHTS.values()) == 100


def test_results_are_checked_and_counted():
    with pytest.raises(ValueError, match="correct <= total"):
        CategoryResult(category="parallel", correct=3, total=2)
    with pytest.raises(ValueError, match="given twice"):
        bfcl_score([CategoryResult(category="parallel", correct=1, total=2)] * 2)
    records = [
        {"category": "parallel", "valid": True},
        {"category": "parallel", "valid": False, "error": "backend_error"},
        {"category": "simple", "valid": True},
    ]
    results = category_results(records)
    assert [(r.category, r.correct, r.total) for r in results] == [
        ("parallel", 1, 2),
        ("simple", 1, 1),
    ]
    score = bfcl_score(results)
    assert score.unscored == ("simple",)  # the shipped sample's name is no BFCL category
    assert score.overall == pytest.approx(0.1 * (0.5 / 4))  # parallel alone, in non_live
    assert bfcl_score({}).overall == 0.0 and len(bfcl_score({}).missing) == len(SCORED_CATEGORIES)


# -- in summaries and reports ------------------------------------------------------------------


def _run_dir(tmp_path, category, verdicts):
    entries = load_bfcl_category(category)[: len(verdicts)]
    register_model_prefix(
        "score-test", lambda rest, **o: ScriptedBackend(["no call"] * len(verdicts)), replace=True
    )
    out = tmp_path / category
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "bfcl",
            "-m",
            "score-test:x",
            "-c",
            category,
            "--limit",
            str(len(entries)),
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    return out, result.output


def test_eval_bfcl_summary_has_the_overall_score_and_names_what_is_missing(tmp_path):
    out, printed = _run_dir(tmp_path, "irrelevance", [True, True])
    summary = json.loads((out / "summary.json").read_text())
    score = summary["bfcl_score"]
    # "no call" is right on irrelevance: 2/2, in a group averaged with live_irrelevance (0)
    assert score["groups"]["irrelevance"]["accuracy"] == 0.5
    assert score["overall"] == pytest.approx(0.05)
    assert score["groups"]["irrelevance"]["missing"] == ["live_irrelevance"]
    assert score["partial"] == ["irrelevance"] and len(score["missing"]) == 20
    assert "BFCL v4 overall score: 5.0% (20 of 21 categories not run, counted as 0)" in printed
    assert "multi_turn  (30)    0.0%  missing: all" in printed


def test_the_in_memory_report_has_the_same_score():
    from tooluse.evals.bfcl import run_bfcl

    entries = load_bfcl_category("irrelevance")[:2]
    report = run_bfcl(ScriptedBackend(["no call", "no call"]), entries)
    assert report.bfcl_score.group("irrelevance").accuracy == 0.5
    assert report.to_dict()["bfcl_score"]["overall"] == pytest.approx(0.05)
    assert "BFCL v4 overall score: 5.0%" in report.format_table()


def _env_run(directory, environment, successes):
    directory.mkdir()
    with (directory / "trajectories.jsonl").open("w") as handle:
        for index, success in enumerate(successes):
            row = {
                "key": f"{index}/0",
                "environment": environment,
                "task_index": index,
                "task_id": f"{environment.split(':')[1]}_{index}",
                "prompt": "turn 1",
                "success": success,
                "seconds": 1.0,
                "sample": 0,
            }
            handle.write(json.dumps(row) + "\n")
    (directory / "summary.json").write_text(json.dumps({"environment": environment}))


def test_report_scores_a_single_turn_and_a_multi_turn_run_together(tmp_path):
    single, _ = _run_dir(tmp_path, "irrelevance", [True, True])
    multi = tmp_path / "mt"
    _env_run(multi, "bfcl:multi_turn_base", [True, False, False, False])
    runs = [load_run(single), load_run(multi)]
    assert runs[1].categories() == {"multi_turn_base": (1, 4)}
    together = render_report(runs, combine=True)
    # irrelevance 0.5 * 10% + multi_turn (0.25 / 4) * 30%
    assert "<b>6.9%</b>" in together and "all runs together" in together
    apart = render_report(runs)
    assert "<b>5.0%</b>" in apart and "<b>1.9%</b>" in apart
    table = markdown_table(runs, combine=True).splitlines()
    assert table[0].endswith("| all runs together |")
    assert "| **BFCL v4 overall** | 5.0% | 1.9% | 6.9% |" in table
    result = CliRunner().invoke(
        app, ["report", str(single), str(multi), "--combine", "-o", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 0, result.output
    assert "<b>6.9%</b>" in (tmp_path / "r.html").read_text()


def test_runs_scored_together_may_not_share_a_category(tmp_path):
    first = tmp_path / "a"
    second = tmp_path / "b"
    _env_run(first, "bfcl:multi_turn_base", [True])
    _env_run(second, "bfcl:multi_turn_base", [False])
    result = CliRunner().invoke(
        app, ["report", str(first), str(second), "--combine", "-o", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 2
    assert "category 'multi_turn_base' is in two runs" in result.output
    apart = CliRunner().invoke(
        app, ["report", str(first), str(second), "-o", str(tmp_path / "s.html")]
    )
    assert apart.exit_code == 0, apart.output
