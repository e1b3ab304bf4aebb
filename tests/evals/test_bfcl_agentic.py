"""The agentic answer check agrees with bfcl-eval's own ``agentic_checker``.

On the ground truth of every entry of the five agentic categories, with replies that carry the
right answer (in BFCL's answer format, in other spellings) and replies that do not, tooluse's
verdict is compared with bfcl-eval's checker called directly: first the check function alone,
then the verdict the environments give when a reply ends an episode.
"""

from __future__ import annotations

import pytest
from bfcl_eval.eval_checker.agentic_eval.agentic_checker import agentic_checker

from tooluse import ScriptedBackend
from tooluse.envs import Action, TrajectoryRunner, environment_registry
from tooluse.evals.bfcl.agentic import (
    AGENTIC_CATEGORIES,
    check_agentic_answer,
    standardize_answer,
)
from tooluse.evals.bfcl.memory import MEMORY_CATEGORIES, load_memory_category
from tooluse.evals.bfcl.web_search import WEB_SEARCH_CATEGORIES, load_web_search_category


def entries_of(category):
    if category in MEMORY_CATEGORIES:
        return load_memory_category(category)[0]
    return load_web_search_category(category)


def replies(answers, other):
    """Replies to an entry whose accepted answers are ``answers``; ``other`` is another
    entry's first answer. Some carry an accepted answer, some do not, some are near misses."""
    first, last = answers[0], answers[-1]
    return [
        f"{{'answer': '{first}', 'context': 'found it in the notes'}}",
        f"The answer is {last.upper()}.",
        f"{{'answer': '{first.replace(' ', '-')}', 'context': 'hyphenated'}}",
        f"It is ({first}), I am sure.",
        "{'answer': 'I do not know', 'context': 'I do not know'}",
        f"{{'answer': '{other}', 'context': 'another entry'}}",
        f"{{'answer': '{first}xyz', 'context': 'glued to another word'}}",
        f"{{'answer': 'pre{first}', 'context': 'glued in front'}}",
        "",
    ]


def cases(category):
    entries = entries_of(category)
    for index, entry in enumerate(entries):
        other = entries[(index + 7) % len(entries)].possible_answers[0]
        for reply in replies(entry.possible_answers, other):
            yield entry, reply


def test_the_categories_are_bfcl_eval_s_agentic_categories():
    from bfcl_eval.constants.category_mapping import AGENTIC_CATEGORY

    assert set(AGENTIC_CATEGORIES) == set(AGENTIC_CATEGORY)


def test_standardization_matches_bfcl_eval_s():
    from bfcl_eval.eval_checker.agentic_eval.agentic_checker import standardize_string

    for text in ["April 1, 2024", "Dong-Sup Yoon", "(a)*b^c_d/e.f", "It's 08:00 AM", ""]:
        assert standardize_answer(text) == standardize_string(text)


@pytest.mark.parametrize("category", AGENTIC_CATEGORIES)
def test_check_agrees_with_bfcl_eval_on_every_entry(category):
    verdicts = []
    for entry, reply in cases(category):
        ours = check_agentic_answer(reply, list(entry.possible_answers))
        theirs = agentic_checker(reply, list(entry.possible_answers))
        assert ours.valid == theirs["valid"], (entry.id, reply)
        if not ours.valid:
            assert ours.error_type == theirs["error_type"] == "agentic:answer_not_found"
        verdicts.append(ours.valid)
    # Both kinds of replies occur: the comparison is not all-true or all-false.
    assert any(verdicts) and not all(verdicts)


def test_the_right_answer_in_bfcl_s_format_is_accepted_and_i_do_not_know_is_not():
    for category in ("memory_kv", "web_search_base"):
        for entry in entries_of(category):
            right, *_rest = replies(entry.possible_answers, "")
            assert check_agentic_answer(right, entry.possible_answers).valid, entry.id
            unknown = "{'answer': 'I do not know', 'context': 'I do not know'}"
            assert not check_agentic_answer(unknown, entry.possible_answers).valid, entry.id


def test_a_list_reply_is_read_as_its_first_item_like_bfcl():
    answers = ["Seattle"]
    for reply in (["Seattle, WA", "Portland"], ["Portland", "Seattle"], [42]):
        ours = check_agentic_answer(reply, answers)
        assert ours.valid == agentic_checker(list(reply), answers)["valid"]


# -- the environments' verdicts ------------------------------------------------------------------


def fill_memory_with_plain_replies(env):
    """Prepare every scenario with a model that only ever replies 'Noted.'."""
    turns = sum(len(e.turns) for e in env.prerequisites.entries)
    backend = ScriptedBackend(["Noted."] * turns)
    env.prepare(TrajectoryRunner(environment=env, backend=backend))
    assert backend.remaining == 0


def environment_for(category, tmp_path, monkeypatch):
    if category in WEB_SEARCH_CATEGORIES:
        monkeypatch.setenv("SERPAPI_API_KEY", "test-key")
        monkeypatch.setenv("TOOLUSE_SERPAPI_URL", "http://127.0.0.1:9")  # never reached here
        return environment_registry.get(name=f"bfcl:{category}")
    env = environment_registry.get(name=f"bfcl:{category}", memory_dir=tmp_path / category)
    fill_memory_with_plain_replies(env)
    return env


@pytest.mark.parametrize("category", AGENTIC_CATEGORIES)
def test_environment_verdicts_agree_with_bfcl_eval_on_every_entry(category, tmp_path, monkeypatch):
    """A reply without calls ends the episode; its verdict is bfcl-eval's checker's."""
    with environment_for(category, tmp_path, monkeypatch) as env:
        assert [e.id for e in env.entries] == [e.id for e in entries_of(category)]
        for index, entry in enumerate(env.entries):
            other = env.entries[(index + 7) % len(env)].possible_answers[0]
            for reply in replies(entry.possible_answers, other)[::2]:
                state, _ = env.reset(options={"task_index": index})
                result = env.step(state, Action(text=reply))
                theirs = agentic_checker(reply, list(entry.possible_answers))["valid"]
                assert result.terminated and result.info["correct"] == theirs, (entry.id, reply)
                assert result.reward == (1.0 if theirs else 0.0)
                assert result.state.answer == reply


@pytest.mark.parametrize("category", AGENTIC_CATEGORIES)
def test_entries_are_the_ones_bfcl_eval_loads_for_the_category(category):
    """Ids, user turns, functions and the answer-format system message, as bfcl-eval's own
    loader prepares them (prerequisite conversations included, per scenario in order)."""
    from bfcl_eval.utils import is_memory_prereq, load_dataset_entry

    from tooluse.evals.bfcl.agentic import agentic_format_prompt

    theirs = load_dataset_entry(category, include_prereq=True)
    ours = list(entries_of(category))
    if category in MEMORY_CATEGORIES:
        ours += list(load_memory_category(category)[1])
    by_id = {row["id"]: row for row in theirs}
    assert sorted(by_id) == sorted(e.id for e in ours)
    for entry in ours:
        row = by_id[entry.id]
        users = [[m["content"] for m in turn if m["role"] == "user"] for turn in row["question"]]
        assert [[t] for t in entry.turns] == users, entry.id
        assert [d["name"] for d in entry.functions] == [d["name"] for d in row["function"]]
        first = row["question"][0][0]
        if is_memory_prereq(entry.id):
            assert first["role"] == "user" and not entry.scored
        else:
            assert first == {"role": "system", "content": agentic_format_prompt()}
    if category in MEMORY_CATEGORIES:
        prerequisites = load_memory_category(category)[1]
        for scenario in {e.scenario for e in prerequisites}:
            mine = [e.id for e in prerequisites if e.scenario == scenario]
            bfcl = [
                r["id"] for r in theirs if is_memory_prereq(r["id"]) and r["scenario"] == scenario
            ]
            assert mine == bfcl


@pytest.mark.parametrize("category", ["memory_rec_sum", "web_search_no_snippet"])
def test_train_and_test_splits_partition_the_entries(category, tmp_path, monkeypatch):
    monkeypatch.setenv("SERPAPI_API_KEY", "test-key")
    options = {"memory_dir": tmp_path} if category in MEMORY_CATEGORIES else {}
    name = f"bfcl:{category}"
    ids = {}
    for split in ("train", "test", None):
        with environment_registry.get(name=name, split=split, **options) as env:
            ids[split] = [e.id for e in env.entries]
    assert ids["train"] and ids["test"] and not set(ids["train"]) & set(ids["test"])
    assert sorted(ids["train"] + ids["test"]) == sorted(ids[None])
