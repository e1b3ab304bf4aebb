"""validate_history: raise mode names the offending ids; repair mode closes unanswered calls."""

from __future__ import annotations

import pytest

from tooluse import ChatMessage, HistoryError, ToolCall, ToolResult, validate_history
from tooluse.providers import anthropic, bedrock, gemini, openai_chat, openai_responses

from .conversation import TIME, WEATHER

CALLS = [
    ToolCall(id="a", name="get_weather", arguments={"city": "Oslo"}),
    ToolCall(id="b", name="get_time"),
]


def ok(call_id: str, name: str = "get_weather") -> ChatMessage:
    return ChatMessage.tool_result(ToolResult.success(call_id, name, "fine"))


def test_valid_history_is_returned_unchanged():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=CALLS),
        ok("a"),
        ok("b", "get_time"),
        ChatMessage.assistant("done"),
    ]
    assert validate_history(history) == history


def test_results_out_of_call_order_are_kept_as_given_without_repair():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=CALLS),
        ok("b", "get_time"),
        ok("a"),
    ]
    assert validate_history(history) == history
    # Repair puts them in call order; the adapters do so for every request anyway.
    repaired = validate_history(history, repair=True)
    assert [m.result.call_id for m in repaired[2:]] == ["a", "b"]
    body = openai_chat.encode_request(history, [WEATHER, TIME])
    assert [m.get("tool_call_id") for m in body["messages"][2:]] == ["a", "b"]


def test_unanswered_calls_raise_with_their_ids():
    history = [ChatMessage.user("q"), ChatMessage.assistant(tool_calls=CALLS), ok("a")]
    with pytest.raises(HistoryError) as info:
        validate_history(history)
    assert info.value.call_ids == ("b",) and "b" in str(info.value)


def test_result_separated_from_its_turn_by_a_user_message_is_orphaned():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=CALLS[:1]),
        ChatMessage.user("hurry"),
        ok("a"),
    ]
    with pytest.raises(HistoryError) as info:
        validate_history(history)
    assert info.value.call_ids == ("a",)


def test_orphan_result_raises():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=CALLS[:1]),
        ok("a"),
        ok("zzz"),
    ]
    with pytest.raises(HistoryError) as info:
        validate_history(history, repair=True)
    assert info.value.call_ids == ("zzz",)


def test_duplicate_result_raises_even_in_repair_mode():
    history = [ChatMessage.user("q"), ChatMessage.assistant(tool_calls=CALLS[:1]), ok("a"), ok("a")]
    with pytest.raises(HistoryError, match="more than one result") as info:
        validate_history(history, repair=True)
    assert info.value.call_ids == ("a",)


def test_call_id_reused_across_turns_raises():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=CALLS[:1]),
        ok("a"),
        ChatMessage.assistant(tool_calls=[ToolCall(id="a", name="get_time")]),
        ok("a", "get_time"),
    ]
    with pytest.raises(HistoryError, match="used twice"):
        validate_history(history)


def test_tool_message_without_result_is_explained():
    with pytest.raises(HistoryError, match="ChatMessage.tool_result"):
        validate_history([ChatMessage.user("q"), ChatMessage(role="tool", content="x")])


def test_repair_synthesizes_error_results_in_call_order_and_is_idempotent():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant(tool_calls=CALLS),
        ok("b", "get_time"),
        ChatMessage.user("next"),
    ]
    repaired = validate_history(history, repair=True)
    results = [m.result for m in repaired if m.role == "tool"]
    assert [r.call_id for r in results] == ["a", "b"]
    assert (
        results[0].is_error
        and "not executed" in results[0].output
        and results[0].tool_name == "get_weather"
    )
    assert results[0].metadata == {"synthesized": True}
    assert results[0].output == "error: not executed: cancelled or timed out"
    assert results[1] == history[2].result  # a real result is kept, never replaced
    assert repaired[-1].content == "next"
    assert validate_history(repaired, repair=True) == repaired
    assert history[2].result.call_id == "b" and len(history) == 4  # input untouched


def test_trailing_unanswered_turn_after_a_crash_is_repaired():
    history = [ChatMessage.user("q"), ChatMessage.assistant(tool_calls=CALLS)]
    repaired = validate_history(history, repair=True)
    assert [m.result.call_id for m in repaired[2:]] == ["a", "b"]
    assert all(m.result.is_error for m in repaired[2:])


@pytest.mark.parametrize(
    "encode",
    [
        openai_chat.encode_request,
        openai_responses.encode_request,
        anthropic.encode_request,
        gemini.encode_request,
        bedrock.encode_request,
    ],
)
def test_every_adapter_validates_before_encoding(encode):
    history = [ChatMessage.user("q"), ChatMessage.assistant(tool_calls=CALLS), ok("a")]
    with pytest.raises(HistoryError) as info:
        encode(history, [WEATHER, TIME])
    assert info.value.call_ids == ("b",)
