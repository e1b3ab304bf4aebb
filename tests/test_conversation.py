"""Multi-participant conversations: private tool loops, shared final messages, save and load."""

from __future__ import annotations

import json

import pytest

from tooluse import Conversation, Participant, ScriptedBackend, ToolCall, ToolNotFoundError
from tooluse.tools import ToolRegistry


def calculator(expression: str) -> str:
    """Evaluate a basic arithmetic expression.

    Args:
        expression: e.g. '2 * (3 + 4)'
    """
    allowed = set("0123456789+-*/(). ")
    if not set(expression) <= allowed:
        raise ValueError("only arithmetic is allowed")
    return str(eval(expression, {"__builtins__": {}}))


def two_party():
    solver = Participant(
        name="solver",
        backend=ScriptedBackend(
            [
                [ToolCall(id="c1", name="calculator", arguments={"expression": "17 * 23"})],
                "17 * 23 = 391.",
                "Because 17 * 20 + 17 * 3 = 340 + 51.",
            ]
        ),
        tools=[calculator],
        max_tool_iters=4,
        model="scripted:solver",
    )
    critic = Participant(
        name="critic",
        backend=ScriptedBackend(["Show your working, please."]),
        system_prompt="You check answers.",
        model="scripted:critic",
    )
    return solver, critic


def test_only_final_messages_reach_the_transcript_with_the_trail_in_metadata():
    solver, critic = two_party()
    conv = Conversation(participants=[solver, critic], shared_context="Compute 17 * 23.")
    added = conv.run(turns=3)
    assert [m.name for m in conv.transcript] == ["solver", "critic", "solver"]
    assert added == conv.transcript
    assert all(m.role == "assistant" and not m.tool_calls for m in conv.transcript)
    first = conv.transcript[0]
    assert first.content == "17 * 23 = 391."
    trail = first.metadata["tool_trail"]
    assert trail[0]["name"] == "calculator"
    assert trail[0]["arguments"] == {"expression": "17 * 23"}
    assert trail[0]["output"] == "391" and trail[0]["error"] is False
    assert conv.transcript[1].metadata["tool_trail"] == []
    json.dumps([m.metadata for m in conv.transcript])  # metadata stays JSON-ready


def test_each_participant_sees_its_own_view():
    solver, critic = two_party()
    conv = Conversation(participants=[solver, critic], shared_context="Compute 17 * 23.")
    conv.run(turns=3)
    critic_view = critic.backend.requests[0].messages
    assert critic_view[0].content == "You check answers."
    assert [m.role for m in critic_view] == ["system", "user", "user"]
    assert critic_view[2].content == "solver: 17 * 23 = 391."
    assert critic.backend.requests[0].tools == ()
    # The solver's second turn sees its own earlier answer as assistant, no tool traffic.
    solver_view = solver.backend.requests[2].messages
    assert [m.role for m in solver_view] == ["system", "user", "assistant", "user"]
    assert "critic" in solver_view[0].content
    assert solver_view[3].content == "critic: Show your working, please."


def test_tool_errors_are_data_in_the_trail():
    backend = ScriptedBackend(
        [
            [ToolCall(id="x", name="calculator", arguments={"expression": "__import__('os')"})],
            "I cannot.",
        ]
    )
    conv = Conversation([Participant(name="solo", backend=backend, tools=[calculator])], "Try it.")
    conv.run(turns=1)
    step = conv.transcript[0].metadata["tool_trail"][0]
    assert step["error"] is True and "only arithmetic" in step["output"]


def test_single_participant_gets_a_turn_prompt_when_it_spoke_last():
    backend = ScriptedBackend(["one", "two"])
    conv = Conversation([Participant(name="solo", backend=backend)], "Count.")
    conv.run(turns=2)
    view = backend.requests[1].messages
    assert view[-1].role == "user" and "solo" in view[-1].content


def test_save_and_load_resolve_tools_by_name(tmp_path):
    solver, critic = two_party()
    conv = Conversation(participants=[solver, critic], shared_context="Compute 17 * 23.")
    conv.run(turns=2)
    path = tmp_path / "conv.json"
    conv.save(path)
    saved = json.loads(path.read_text())
    assert saved["participants"][0]["tools"] == ["calculator"]
    assert saved["participants"][0]["model"] == "scripted:solver"

    registry = ToolRegistry()
    registry.register(calculator)
    new_solver = ScriptedBackend(["Because 17 * 20 + 17 * 3."])
    loaded = Conversation.load(
        path,
        registry=registry,
        backends={"solver": new_solver, "critic": ScriptedBackend([])},
    )
    assert loaded.shared_context == "Compute 17 * 23."
    assert [m.content for m in loaded.transcript] == [m.content for m in conv.transcript]
    assert loaded.transcript[0].metadata["tool_trail"][0]["output"] == "391"
    assert [d.name for d in loaded.participants[0].tool_definitions] == ["calculator"]
    assert loaded.participants[0].max_tool_iters == 4
    assert loaded.next_speaker().name == "solver"
    loaded.run(turns=1)
    assert loaded.transcript[-1].content == "Because 17 * 20 + 17 * 3."
    assert [t.name for t in new_solver.requests[0].tools] == ["calculator"]


def test_load_with_a_missing_tool_or_backend_fails_clearly(tmp_path):
    solver, critic = two_party()
    path = tmp_path / "conv.json"
    Conversation([solver, critic]).save(path)
    with pytest.raises(ToolNotFoundError, match="calculator"):
        Conversation.load(path, registry=ToolRegistry(), backends={"solver": None, "critic": None})
    with pytest.raises(ValueError, match="critic"):
        Conversation.load(path, registry={"calculator": calculator}, backends={"solver": None})
    loaded = Conversation.load(
        path, registry={"calculator": calculator}, backends=lambda spec: ScriptedBackend([spec])
    )
    assert loaded.participants[1].backend.remaining == 1


def test_bad_conversations_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        Conversation([])
    backend = ScriptedBackend([])
    with pytest.raises(ValueError, match="unique"):
        Conversation(
            [Participant(name="a", backend=backend), Participant(name="a", backend=backend)]
        )
    with pytest.raises(ValueError, match="name"):
        Participant(name="", backend=backend)


async def test_async_turns_match_sync_turns():
    solver, critic = two_party()
    conv = Conversation([solver, critic], "Compute 17 * 23.")
    await conv.arun(turns=2)
    assert [m.content for m in conv.transcript] == ["17 * 23 = 391.", "Show your working, please."]


def test_text_format_participants_keep_their_parser_across_save_and_load(tmp_path):
    from tooluse import ModelCapabilities
    from tooluse.formats import HermesToolCallParser

    no_fc = ModelCapabilities(supports_function_calling=False)
    backend = ScriptedBackend(
        [
            '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n</tool_call>',
            "42",
        ],
        capabilities=no_fc,
    )
    small = Participant(
        name="small", backend=backend, tools=[calculator], tool_call_parser=HermesToolCallParser()
    )
    conv = Conversation([small], "What is 6 * 7?")
    conv.run(turns=1)
    assert conv.transcript[0].content == "42"
    assert conv.transcript[0].metadata["tool_trail"][0]["output"] == "42"
    path = tmp_path / "c.json"
    conv.save(path)
    loaded = Conversation.load(
        path, registry={"calculator": calculator}, backends={"small": backend}
    )
    assert isinstance(loaded.participants[0].tool_call_parser, HermesToolCallParser)
