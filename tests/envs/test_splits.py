"""Train and test splits: disjoint, seeded, of the promised sizes, for every kind of source."""

from __future__ import annotations

import re

import pytest

from tooluse.envs import ARITHMETIC_TASKS, environment_registry
from tooluse.envs.arithmetic import ARITHMETIC_TEST_SIZE, arithmetic_tasks
from tooluse.envs.splits import TEST_SEED_START, split_indices, split_of, split_seed_start


def _prompts(env) -> list[str]:
    return [task.prompt for task in env.tasks]


def test_arithmetic_test_split_is_fixed_50_and_the_default():
    test = environment_registry.get(name="math:arithmetic", split="test", tool_types=())
    default = environment_registry.get(name="math:arithmetic", tool_types=())
    assert len(test) == ARITHMETIC_TEST_SIZE == 50
    assert _prompts(test) == _prompts(default)
    # the same on a second build: nothing depends on process state
    again = environment_registry.get(name="math:arithmetic", split="test", tool_types=())
    assert [t.reference for t in again.tasks] == [t.reference for t in test.tasks]
    with pytest.raises(ValueError, match="fixed 50"):
        environment_registry.get(name="math:arithmetic", split="test", size=10)


def test_arithmetic_train_split_as_large_as_asked_disjoint_and_seeded():
    test = set(_prompts(environment_registry.get(name="math:arithmetic", split="test")))
    train = environment_registry.get(name="math:arithmetic", split="train", size=300, seed=0)
    assert len(train) == 300
    assert not test & set(_prompts(train))
    same = environment_registry.get(name="math:arithmetic", split="train", size=300, seed=0)
    other = environment_registry.get(name="math:arithmetic", split="train", size=300, seed=7)
    assert _prompts(same) == _prompts(train)
    assert _prompts(other) != _prompts(train)
    with pytest.raises(ValueError, match="test seeds"):
        environment_registry.get(name="math:arithmetic", split="train", seed=TEST_SEED_START - 5)


def test_arithmetic_tasks_grow_in_depth_use_large_numbers_and_have_right_answers():
    tasks = arithmetic_tasks(start=TEST_SEED_START, size=50)
    depths = [t.metadata["depth"] for t in tasks]
    assert depths == sorted(depths) and depths[0] == 1 and depths[-1] == 4
    for task in tasks:
        numbers = [int(n) for n in re.findall(r"\d+", task.metadata["expression"])]
        assert len(numbers) == task.metadata["depth"] + 1
        assert all(n >= 100 for n in numbers)
        assert eval(task.metadata["expression"]) == task.reference  # an independent evaluation
        assert task.metadata["expression"] in task.prompt


def test_arithmetic_env_grades_the_reference_answer():
    env = environment_registry.get(name="math:arithmetic", split="test", tool_types=())
    task = env.task(10)
    assert env.check_answer(str(task.reference), task)
    assert not env.check_answer(str(task.reference + 1), task)


def test_word_problems_keep_the_old_twenty_and_split_them():
    whole = environment_registry.get(name="math:word_problems", tool_types=())
    assert [t.prompt for t in whole.tasks] == [t.prompt for t in ARITHMETIC_TASKS]
    train = environment_registry.get(name="math:word_problems", split="train", tool_types=())
    test = environment_registry.get(name="math:word_problems", split="test", tool_types=())
    assert len(train) + len(test) == 20 and len(train) > 0 and len(test) > 0
    assert not set(_prompts(train)) & set(_prompts(test))


def test_fixed_set_assignment_depends_on_id_only():
    ids = [f"item-{i}" for i in range(400)]
    test = split_indices(ids, "test", salt="s")
    train = split_indices(ids, "train", salt="s")
    assert sorted(test + train) == list(range(400)) and not set(test) & set(train)
    assert 150 < len(test) < 250  # about half
    # the assignment of an item does not move when the set is reordered or cut
    assert [split_of(i, salt="s") for i in ids[::-1][:50]] == [
        "test" if ids.index(i) in test else "train" for i in ids[::-1][:50]
    ]
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        split_indices(ids, "dev", salt="s")


def test_procedural_seed_ranges():
    assert split_seed_start("test", seed=3, size=50) == TEST_SEED_START
    assert split_seed_start("train", seed=3, size=50) == 3
    assert split_seed_start(None, seed=3, size=50) == 3
    with pytest.raises(ValueError, match="reach the test seeds"):
        split_seed_start("train", seed=TEST_SEED_START - 10, size=11)


def test_bfcl_multi_turn_splits_disjoint():
    train = environment_registry.get(name="bfcl:multi_turn_base", split="train")
    test = environment_registry.get(name="bfcl:multi_turn_base", split="test")
    whole = environment_registry.get(name="bfcl:multi_turn_base")
    train_ids, test_ids = {t.id for t in train.tasks}, {t.id for t in test.tasks}
    assert not train_ids & test_ids
    assert train_ids | test_ids == {t.id for t in whole.tasks}
    assert len(test) >= 50


def test_bfcl_multi_turn_categories_split_together_by_entry_number():
    """The four categories ask the same requests under the same number: entry N of every
    category sits in multi_turn_base_N's split, so no category's train entry is another's test
    entry, and multi_turn_base keeps the split it always had."""
    from tooluse.evals.bfcl.world import (
        MULTI_TURN_CATEGORIES,
        load_multi_turn,
        multi_turn_test_requests,
    )

    def number(task_id: str) -> str:
        return task_id.rsplit("_", 1)[-1]

    base = load_multi_turn("multi_turn_base")
    old_test = {number(e.id) for e in base if split_of(e.id, salt="bfcl:multi_turn_base") == "test"}
    for category in MULTI_TURN_CATEGORIES:
        test = environment_registry.get(name=f"bfcl:{category}", split="test")
        train = environment_registry.get(name=f"bfcl:{category}", split="train")
        assert {number(t.id) for t in test.tasks} == old_test, category
        assert not {number(t.id) for t in train.tasks} & old_test, category
    tested = multi_turn_test_requests()
    train_first_turns = [
        t.prompt.strip()
        for category in MULTI_TURN_CATEGORIES
        for t in environment_registry.get(name=f"bfcl:{category}", split="train").tasks
    ]
    # Only a request asked under two different numbers can still be on both sides.
    assert sum(prompt in tested for prompt in train_first_turns) <= len(MULTI_TURN_CATEGORIES)


def test_bfcl_single_turn_split_disjoint_and_large_enough():
    from tooluse.evals.bfcl.data import load_bfcl_category, select_entries

    for category in ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance"):
        entries = load_bfcl_category(category)
        test = select_entries(entries, split="test")
        train = select_entries(entries, split="train")
        assert not {e.id for e in test} & {e.id for e in train}
        assert len(test) + len(train) == len(entries)
        assert len(test) >= 50, category
        sample = select_entries(entries, split="test", sample=50, seed=0)
        assert {e.id for e in sample} <= {e.id for e in test}
        assert sample == select_entries(entries, split="test", sample=50, seed=0)


def test_reasoning_gym_splits_use_disjoint_seeds():
    pytest.importorskip("reasoning_gym")
    test = environment_registry.get(
        name="basic_arithmetic", adapter="reasoning_gym", split="test", size=20
    )
    train = environment_registry.get(
        name="basic_arithmetic", adapter="reasoning_gym", split="train", size=200
    )
    assert len(train) == 200 and len(test) == 20
    assert not set(_prompts(test)) & set(_prompts(train))
    assert test.tasks[0].metadata["seed"] == TEST_SEED_START
    again = environment_registry.get(
        name="basic_arithmetic", adapter="reasoning_gym", split="test", size=20
    )
    assert _prompts(again) == _prompts(test)


def test_gem_splits_use_disjoint_seeds():
    pytest.importorskip("gem")
    test = environment_registry.get(
        name="game:GuessTheNumber-v0-easy", adapter="gem", split="test", size=3
    )
    train = environment_registry.get(
        name="game:GuessTheNumber-v0-easy", adapter="gem", split="train", size=3
    )
    assert {test.task_seed(i) for i in range(3)} == {TEST_SEED_START + i for i in range(3)}
    assert {train.task_seed(i) for i in range(3)} == {0, 1, 2}


def test_eval_env_cli_split(tmp_path):
    from typer.testing import CliRunner

    from tooluse.cli.app import app

    result = CliRunner().invoke(
        app, ["eval", "env", "math:gsm8k", "-m", "local", "--split", "dev", "--data", "x"]
    )
    assert result.exit_code == 2 and "unknown split 'dev'" in result.output
