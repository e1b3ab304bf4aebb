"""The answers-after-results teacher: BFCL's real results, a writer's reply kept only when it
is grounded, the writer's prompt left out of the kept conversation, other categories' test
items never used, every left-out entry named; and one real run with the untouched local model
as the writer."""

from __future__ import annotations

import json

import pytest

from tooluse.providers.base import GenerationResult
from tooluse.train.data import TEACHERS, TrainDataError, teacher_data
from tooluse.train.result_answers import (
    RESULT_ANSWERS,
    WRITER_PROMPT,
    AnswerWriting,
    grounded_reply,
    new_values,
    result_answers,
)


def test_new_values_are_the_results_scalars_the_request_and_arguments_lack():
    outputs = [
        '{"current_working_directory": "documents"}',
        '{"last_lines": "The quick brown fox jumps over the lazy dog.", "count": 3}',
        "None",
        "['RMS', 'CDG']",
        '{"ok": "ok", "done": true}',
    ]
    known = "Go to documents folder and show the last line. {'folder': 'documents'}"
    assert new_values(outputs, known) == [
        "The quick brown fox jumps over the lazy dog.",
        "3",
        "RMS",
        "CDG",
    ]


def test_a_grounded_reply_is_short_plain_and_invents_no_number():
    values = ["780.0", "The quick brown fox jumps over the lazy dog."]
    evidence = "distance to Silverpine 780.0 and file1.txt"
    assert grounded_reply("Silverpine is about 780.0 miles away.", values, evidence)
    # a run of five of a long value's words is enough
    assert grounded_reply("It ends: quick brown fox jumps over the dog", values, evidence)
    assert not grounded_reply("Silverpine is 780.0 miles, or 1255 km.", values, evidence)
    assert not grounded_reply("I cannot tell you the distance.", values, evidence)
    assert not grounded_reply("`distance = 780.0`", values, evidence)
    assert not grounded_reply("The distance(km) is 780.0.", values, evidence)
    assert not grounded_reply("It is 780.0 miles. " * 20, values, evidence)


class _Writer:
    """Says nothing useful on a request's first draw, then the last result's first value."""

    def __init__(self) -> None:
        self.requests: list[tuple[list, str]] = []

    def generate(self, messages, tools, params=None, tool_choice="auto"):
        self.requests.append((list(messages), tool_choice))
        if len(self.requests) % 2:
            return GenerationResult(text="Happy to help with that!")
        values = new_values([messages[-1].content], "")
        return GenerationResult(text=f"The result: {values[0]}." if values else "Done.")


def test_kept_conversations_are_the_request_the_gold_calls_their_real_results_and_the_reply():
    from tooluse.envs.splits import split_of
    from tooluse.evals.bfcl.world import ground_truth_world, load_multi_turn

    writer = _Writer()
    kept, left = result_answers(size=4, backend=writer, how=AnswerWriting(samples=2))
    assert len(kept) == 4
    entries = {e.id: e for e in load_multi_turn("multi_turn_base")}
    for conversation in kept:
        entry = entries[conversation.source.removeprefix("bfcl:").removesuffix("/turn0-answer")]
        assert split_of(entry.id, salt="bfcl:multi_turn_base") == "train"
        user, calls, *results, reply = conversation.messages
        assert user.role == "user" and user.content == entry.turns[0]
        assert calls.tool_calls and all(r.role == "tool" for r in results)
        assert [r.content for r in results] == ground_truth_world(entry, 0)[1]
        assert reply.content.startswith("The result: ") and not reply.tool_calls
        assert {c.name for c in calls.tool_calls} <= {t.name for t in conversation.tools}
    # the writer was asked twice per kept entry (its first draw is never grounded), with its
    # prompt first and no call allowed; the prompt is not in what is kept
    messages, choice = writer.requests[0]
    assert messages[0].content == WRITER_PROMPT and choice == "none"
    assert all(m.role != "system" for c in kept for m in c.messages)
    assert all(reason.split(" (", 1)[1].rstrip(")") for reason in left)


def test_entries_without_a_grounded_reply_are_left_out_and_named():
    class Silent:
        def generate(self, messages, tools, params=None, tool_choice="auto"):
            return GenerationResult(text="Sure, I can help.")

    kept, left = result_answers(size=3, backend=Silent(), how=AnswerWriting(samples=1))
    assert kept == []
    assert any(reason.endswith("(no grounded reply in 1 draws)") for reason in left)
    assert any(reason.endswith("(the results hold nothing new)") for reason in left)
    assert any(reason.endswith("(its functions do not fit)") for reason in left)


def test_requests_that_are_a_multi_turn_test_item_are_never_written_for():
    """The multi-turn categories are split together by entry number, yet one request is asked
    under two numbers: a train entry whose request is a test item is left out before the
    writer runs."""
    from tooluse.evals.bfcl.world import multi_turn_test_requests

    tested = multi_turn_test_requests()
    writer = _Writer()
    kept, left = result_answers(backend=writer, how=AnswerWriting(samples=2))
    skipped = [r for r in left if r.endswith("(its request is a multi-turn test item)")]
    assert len(skipped) >= 1
    assert len(kept) > len(skipped)
    assert all(c.messages[0].content.strip() not in tested for c in kept)
    assert all(m[1].content.strip() not in tested for m, _ in writer.requests)


def test_the_teacher_is_a_recipe_source_and_its_bad_options_are_named():
    assert RESULT_ANSWERS in TEACHERS
    with pytest.raises(TrainDataError, match="bfcl:multi_turn_answers.*unexpected keyword"):
        teacher_data(RESULT_ANSWERS, size=1, options={"writers": "local:base"})
    with pytest.raises(TrainDataError, match="test split"):
        teacher_data(RESULT_ANSWERS, split="test", size=1)


def test_the_untouched_local_model_writes_only_grounded_replies_and_every_entry_is_counted():
    from tooluse.evals.bfcl.world import multi_turn_split_entries

    # until the first kept reply: every entry on the way is kept or named, in the split's order
    kept, left = result_answers(size=1, how=AnswerWriting(samples=2))
    train = multi_turn_split_entries("multi_turn_base", "train")
    visited = {c.source.removeprefix("bfcl:").removesuffix("/turn0-answer") for c in kept}
    visited |= {reason.split(" (", 1)[0] for reason in left}
    assert visited == {e.id for e in train[: len(kept) + len(left)]}
    assert len(kept) == 1 or len(left) == len(train)
    reasons = {reason.split(" (", 1)[1].rstrip(")") for reason in left}
    assert reasons <= {
        "its functions do not fit",
        "its request is a multi-turn test item",
        "the results hold nothing new",
        "no grounded reply in 2 draws",
    }
    written = len(kept) + sum(r.endswith("(no grounded reply in 2 draws)") for r in left)
    assert written > 0  # the real model was asked
    for conversation in kept:
        _, calls, *results, reply = conversation.messages
        known = conversation.messages[0].content + json.dumps(
            [c.arguments for c in calls.tool_calls]
        )
        values = new_values([r.content for r in results], known)
        evidence = known + "\n".join(r.content for r in results)
        assert grounded_reply(reply.content, values, evidence)
