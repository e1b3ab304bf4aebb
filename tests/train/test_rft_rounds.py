"""Rejection sampling as the main loop: several environments at once, the checker's verdicts
kept (right calls and right refusals), the recipe's gold data mixed in, the validation of each
round, the patience rule and the learning curve in the run's card."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.train.rft import RFTOptions, _gold, _open_sources, run_rft
from tooluse.train.sft import SFTOptions, write_json


def _done_round(out, number, mean):
    folder = out / f"round-{number}"
    folder.mkdir(parents=True)
    write_json(
        folder / "card.json",
        {
            "round": number,
            "sampled": {"math:arithmetic": 3},
            "kept": {"math:arithmetic": number},
            "training_conversations": number,
            "gold_conversations": 0,
            "metrics": {"steps": 1, "loss_first": 1.0, "loss_last": 0.5},
            "validation": {"by_environment": {"math:arithmetic": mean}, "mean": mean},
            "held_out_success": mean,
        },
    )


@pytest.mark.parametrize(
    ("means", "patience", "best", "ran"),
    [
        ([0.2, 0.5, 0.4, 0.45, 0.9], 2, 1, 3),  # two rounds without beating 0.5: stop
        ([0.2, 0.5, 0.4, 0.45, 0.9], 3, 4, 4),  # a third chance finds 0.9
        ([0.2, 0.1, 0.3], 1, 0, 1),  # round 1 is worse than the start model: stop at once
    ],
)
def test_the_rounds_stop_when_validation_stops_improving(tmp_path, means, patience, best, ran):
    # finished rounds are read back, not redone: the rule runs on their recorded validation
    write_json(
        tmp_path / "round-0.json",
        {"round": 0, "model": "base", "validation": {"by_environment": {}, "mean": means[0]}},
    )
    for number, mean in enumerate(means[1:], 1):
        _done_round(tmp_path, number, mean)
    options = RFTOptions(
        sft=SFTOptions(out=tmp_path),
        environments=(("math:arithmetic", 4),),
        held_out=1,
        rounds=len(means) - 1,
        patience=patience,
    )
    lines: list[str] = []
    card = run_rft(options, report=lines.append)
    assert card["best_round"] == best
    assert [row["round"] for row in card["curve"]] == list(range(ran + 1))
    assert [row["validation"]["mean"] for row in card["curve"]] == means[: ran + 1]
    assert card == json.loads((tmp_path / "card.json").read_text())
    if ran < len(means) - 1:
        assert card["stopped"].startswith(f"no better validation for {patience} round(s)")
        assert any(line.startswith(f"stopping after round {ran}") for line in lines)
    else:
        assert card["stopped"] == "rounds"
    if best:
        assert card["adapter"] == str(tmp_path / f"round-{best}" / "adapter.gguf")
    else:
        assert card["adapter"] is None  # the start model was the best: no adapter beats it


def test_bad_rft_settings_are_one_line_errors(tmp_path):
    result = CliRunner().invoke(
        app,
        ["train", "rft", "--env", "math:arithmetic=3", "--held-out", "3", "--out", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert "error: math:arithmetic: --held-out must be at least 1 and less than its 3 tasks" in (
        result.output
    )


GOLD = """
name = "gold"
[leak_check]
drop = true
[[source]]
name = "bfcl:simple_python"
count = 2
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_one_round_over_two_environments_keeps_what_their_checkers_accept(tmp_path):
    recipe = tmp_path / "gold.toml"
    recipe.write_text(GOLD)
    out = tmp_path / "rft"
    args = ["train", "rft", "--env", "math:arithmetic=2", "--env", "bfcl:irrelevance=3",
            "--held-out", "1", "--samples", "2", "--rounds", "1", "--steps", "1",
            "--batch-size", "1", "--max-length", "1024", "--max-turns", "1", "--max-tokens", "32",
            "--recipe", str(recipe), "-q", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    round_card = json.loads((out / "round-1" / "card.json").read_text())
    assert round_card["sampled"] == {"math:arithmetic": 2, "bfcl:irrelevance": 4}
    gold = (out / "data" / "data.jsonl").read_text().splitlines()
    assert round_card["gold_conversations"] == len(gold) > 0
    kept = [json.loads(line) for line in (out / "round-1" / "kept.jsonl").read_text().splitlines()]
    assert sum(round_card["kept"].values()) == len(kept) == round_card["training_conversations"]
    # the base model answers BFCL's irrelevant requests without a call most of the time: the
    # checker accepts that decision, and those trajectories are kept as training data
    refusals = [t for t in kept if t["environment"] == "bfcl:irrelevance"]
    assert refusals and round_card["kept"]["bfcl:irrelevance"] == len(refusals)
    for trajectory in refusals:
        assert trajectory["success"]
        replies = [m for m in trajectory["messages"] if m["role"] == "assistant"]
        assert replies and not any(m.get("tool_calls") for m in replies)
    # the validation slice: one task per environment, measured before and after the round
    run_card = json.loads((out / "card.json").read_text())
    assert [row["round"] for row in run_card["curve"]] == [0, 1]
    for row in run_card["curve"]:
        assert set(row["validation"]["by_environment"]) == {"math:arithmetic", "bfcl:irrelevance"}
    assert run_card["recipe"] == str(recipe) and (out / "data" / "data.jsonl").is_file()
    assert "round 1: validation" in result.output and "best round" in result.output


def test_gold_conversations_holding_a_validation_task_are_left_out(tmp_path):
    # the recipe's simple_python gold comes from the train split the environment samples too
    recipe = tmp_path / "gold.toml"
    recipe.write_text(GOLD.replace("count = 2", "count = 40"))
    options = RFTOptions(
        sft=SFTOptions(out=tmp_path / "rft"),
        environments=(("bfcl:simple_python", 40),),
        held_out=20,
        recipe=recipe,
    )
    sources = _open_sources(options)
    said: list[str] = []
    gold = _gold(options, sources, said.append)
    built = (tmp_path / "rft" / "data" / "data.jsonl").read_text().splitlines()
    prompts = {sources[0].env.tasks[n].prompt for n in sources[0].validation_tasks}
    users = [m.content for c in gold for m in c.messages if m.role == "user"]
    assert len(gold) < len(built)  # the two samples share tasks: some gold is left out
    assert not prompts & set(users)
    assert f"gold data: {len(built) - len(gold)} conversations hold a validation task" in said[-1]
