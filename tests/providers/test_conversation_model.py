"""Ordered assistant parts and provider-tagged state on ChatMessage."""

from __future__ import annotations

from tooluse import ChatMessage, GenerationResult, ProviderState, ReasoningPart, TextPart, ToolCall
from tooluse.providers.call_ids import wire_call_id


def test_parts_fill_content_calls_and_reasoning():
    call = ToolCall(id="c", name="t")
    m = ChatMessage(
        role="assistant",
        parts=[ReasoningPart(text="why"), TextPart(text="a"), call, TextPart(text="b")],
    )
    assert (m.content, m.reasoning, m.tool_calls) == ("ab", "why", (call,))
    assert isinstance(m.parts, tuple)


def test_ordered_parts_derived_from_plain_fields():
    call = ToolCall(id="c", name="t")
    m = ChatMessage(role="assistant", content="hi", tool_calls=[call], reasoning="r")
    assert m.ordered_parts() == (ReasoningPart(text="r"), TextPart(text="hi"), call)
    assert ChatMessage.assistant("x").ordered_parts() == (TextPart(text="x"),)


def test_state_replay_rules():
    s = ProviderState(provider="gemini", model="gemini-3-pro", data={"thoughtSignature": "x"})
    assert s.replayable_to("gemini", "gemini-3-pro") and s.replayable_to("gemini")
    assert not s.replayable_to("gemini", "gemini-2.5-flash") and not s.replayable_to("anthropic")


def test_generation_result_without_message_still_gives_a_message():
    r = GenerationResult(text="t", tool_calls=(ToolCall(id="c", name="n"),))
    assert r.to_message().tool_calls[0].id == "c"


def test_wire_ids_keep_valid_ids_and_hash_others_deterministically():
    assert wire_call_id("call_abc", "openai") == "call_abc"
    a, b = wire_call_id("x" * 41, "openai"), wire_call_id("x" * 42, "openai")
    assert len(a) == 40 and len(b) == 40 and a != b
    assert wire_call_id("a.b", "anthropic") != wire_call_id("a_b", "anthropic") == "a_b"
    assert wire_call_id("x" * 41, "openai") == a


def test_mistral_ids_are_nine_alphanumerics_and_valid_ones_pass():
    assert wire_call_id("abcDEF123", "mistral") == "abcDEF123"
    for original in ("call_1", "abcDEF12", "abcDEF1234", "abc_EF123"):
        wire = wire_call_id(original, "mistral")
        assert len(wire) == 9 and wire.isalnum() and wire != original
    assert wire_call_id("call_1", "mistral") != wire_call_id("call_2", "mistral")


def test_made_up_tool_names_fit_64_characters():
    from tooluse.providers.call_ids import wire_tool_name

    longest = "t" * 64
    assert wire_tool_name(longest) == longest  # valid at the limit: unchanged
    for name in ("t" * 65, "get weather " * 10):
        wire = wire_tool_name(name)
        assert len(wire) == 64 and wire != name and wire == wire_tool_name(name)


def test_arguments_that_are_json_but_not_an_object_are_kept_raw():
    from tooluse.providers.wire_common import decode_arguments

    assert decode_arguments('{"a": 1}') == ({"a": 1}, None)
    for raw in ("[1, 2]", '"text"', "3", "true"):
        assert decode_arguments(raw) == ({}, raw)
    assert decode_arguments(["x"]) == ({}, '["x"]')


async def test_scripted_backend_streams_async():
    from tooluse import GenerationDone, ScriptedBackend, ToolCallFinished

    backend = ScriptedBackend([[ToolCall(id="c1", name="t", arguments={"x": 1})], "done"])
    events = [e async for e in backend.astream_with_tools([ChatMessage.user("q")])]
    assert isinstance(events[-1], GenerationDone) and events[-1].result.tool_calls[0].id == "c1"
    assert [e.call.arguments for e in events if isinstance(e, ToolCallFinished)] == [{"x": 1}]
    assert backend.remaining == 1


def test_two_ids_that_would_share_a_wire_id_are_refused():
    import pytest

    from tooluse import HistoryError
    from tooluse.providers.call_ids import CallIdMapper

    rewritten = wire_call_id("a.b", "openai")  # "a_b_" + a digest: itself a valid id
    mapper = CallIdMapper("openai")
    assert mapper("a.b") == rewritten and mapper("a.b") == rewritten
    with pytest.raises(HistoryError) as info:
        mapper(rewritten)
    assert set(info.value.call_ids) == {"a.b", rewritten}
