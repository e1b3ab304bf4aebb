"""The relevance teacher and the decider it trains: the yes/no question in the decider's own
words, on train entries only, with as many No as Yes answers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tooluse.local.decision import (
    NO,
    TRAINED_RELEVANCE_THRESHOLD,
    YES,
    ModelDecider,
    RelevanceDecider,
    ToolDecision,
    TrainedDecider,
    YesNoDecider,
    decider_named,
    yes_no_messages,
)
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition
from tooluse.train.data import TrainDataError, teacher_conversations
from tooluse.train.relevance import RelevanceCase, cases_from_conversations, mismatched


def _tool(name: str) -> ToolDefinition:
    return ToolDefinition.from_schema(name, {"type": "object", "properties": {}})


def test_bfcl_relevance_teacher_is_balanced_and_uses_train_entries_only():
    from tooluse.envs.splits import split_of
    from tooluse.evals.bfcl.data import load_bfcl_category, split_of_entry
    from tooluse.train.bfcl_teachers import RELEVANT_CATEGORIES

    conversations = teacher_conversations("bfcl:relevance", size=10**6)
    answers = Counter(c.messages[-1].content for c in conversations)
    assert answers[YES] == answers[NO] >= 100
    single = {
        e.id: e
        for category in (*RELEVANT_CATEGORIES, "live_irrelevance")
        for e in load_bfcl_category(category)
    }
    mismatches = 0
    for conversation in conversations:
        system, user, reply = conversation.messages
        assert system.role == "system" and user.role == "user" and reply.role == "assistant"
        asked, _, offered = conversation.source.removeprefix("relevance:bfcl:").partition("+")
        if asked.startswith("multi_turn_base"):
            assert split_of(asked.removesuffix("/turn0"), salt="bfcl:multi_turn_base") == "train"
        else:
            entry = single[asked]
            assert split_of_entry(entry) == "train"
            assert entry.category != "live_irrelevance" or reply.content == NO
        if offered:  # the request with another entry's functions: none of them serves it
            mismatches += 1
            assert reply.content == NO
    assert mismatches >= 50


def test_mismatched_cases_offer_tools_that_share_no_name_with_the_request_s_own():
    cases = [
        RelevanceCase(request="weather?", tools=(_tool("weather"),), needs_tool=True, source="a"),
        RelevanceCase(request="stock?", tools=(_tool("quote"),), needs_tool=True, source="b"),
        RelevanceCase(
            request="both?", tools=(_tool("weather"), _tool("quote")), needs_tool=True, source="c"
        ),
        RelevanceCase(request="hi", tools=(_tool("weather"),), needs_tool=False, source="d"),
    ]
    out = mismatched(cases, random.Random(0))
    assert {(c.request, c.tools[0].name) for c in out} == {
        ("weather?", "quote"),
        ("stock?", "weather"),
    }
    assert all(not c.needs_tool for c in out)  # "both?" has no partner and is left out


def test_relevance_of_a_teacher_asks_its_requests_with_its_tools():
    asked = teacher_conversations("relevance:math:arithmetic", size=4)
    played = teacher_conversations("math:arithmetic", size=4)
    assert len(asked) == 4
    for question, conversation in zip(asked, played, strict=True):
        request = conversation.messages[1].content
        assert question.messages[:2] == yes_no_messages(request, conversation.tools)
        assert question.messages[-1] == ChatMessage(role="assistant", content=YES)
    texts = cases_from_conversations(teacher_conversations("bfcl:live_irrelevance", size=5))
    assert [c.needs_tool for c in texts] == [False] * 5
    with pytest.raises(TrainDataError, match="no scripted teacher for 'nope'"):
        teacher_conversations("relevance:nope", size=1)


class _Recorder:
    def __init__(self, name: str) -> None:
        self.name, self.seen = name, 0

    def decide(self, backend, messages, tools):
        self.seen += 1
        return ToolDecision(call=True, reason=self.name)


def test_trained_decider_asks_first_and_lets_the_model_go_on_after_results():
    ask, then = _Recorder("ask"), _Recorder("then")
    decider = TrainedDecider(ask=ask, then=then)
    call = ToolCall(name="python", arguments={"code": "print(1)"})
    first = [ChatMessage.user("Compute 1.")]
    after = [
        *first,
        ChatMessage(role="assistant", content="", tool_calls=(call,)),
        ChatMessage.tool_result(ToolResult(call_id=call.id, tool_name="python", output="1")),
    ]
    assert decider.decide(None, first, []).reason == "ask"  # type: ignore[arg-type]
    assert decider.decide(None, after, []).reason == "then"  # type: ignore[arg-type]
    assert (ask.seen, then.seen) == (1, 1)
    trained = decider_named("trained")
    assert isinstance(trained, TrainedDecider) and isinstance(trained.ask, RelevanceDecider)
    assert trained.ask.threshold == TRAINED_RELEVANCE_THRESHOLD
    assert isinstance(trained.then, ModelDecider)


@pytest.mark.slow
def test_training_text_of_the_question_is_what_the_decider_scores():
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.train.data import render_examples

    backend = LlamaCppBackend.default(n_ctx=1024)
    try:
        played = teacher_conversations("math:arithmetic", size=2)
        asked = teacher_conversations("relevance:math:arithmetic", size=2)
        examples = render_examples(asked, backend)
        for conversation, example in zip(played, examples, strict=True):
            request = conversation.messages[1].content
            assert example.prompt == YesNoDecider.prompt(backend, request, conversation.tools)
            assert example.completion == f"{YES}<|im_end|>"
            # the decider reads the first token of the answer: the one the example trains
            first = backend.loop.tokenize(example.completion)[0]
            assert first == backend.loop.tokenize(YES)[0]
    finally:
        backend.close()
