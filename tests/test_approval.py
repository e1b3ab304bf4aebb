"""Runs that stop for a person's decision and go on with ``tooluse.resume``: approval by tool
flag or by policy, decisions (approve, deny, edit), state saved as JSON and loaded in another
process, and the errors for states and decisions that do not fit."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

import tooluse
from tooluse import (
    Approve,
    Deny,
    Edit,
    RunState,
    RunStateError,
    ScriptedBackend,
    StopReason,
    ToolCall,
    resume,
    run,
    tool,
)
from tooluse.loop import ApprovalRequested, iter_run
from tooluse.providers.history import validate_history

RAN: list[tuple[str, dict]] = []


@tool(requires_approval=True, registry=tooluse.ToolRegistry())
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    RAN.append(("delete_file", {"path": path}))
    return f"deleted {path}"


@tool(registry=tooluse.ToolRegistry())
def list_files(folder: str) -> str:
    """List a folder.

    Args:
        folder: The folder.
    """
    RAN.append(("list_files", {"folder": folder}))
    return "a.log b.log"


TOOLS = [delete_file, list_files]


@pytest.fixture(autouse=True)
def _clear():
    RAN.clear()


def turn_with_both() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [
                ToolCall(id="ls", name="list_files", arguments={"folder": "/logs"}),
                ToolCall(id="rm", name="delete_file", arguments={"path": "/logs/a.log"}),
            ],
            "Done.",
        ]
    )


def test_a_call_that_needs_approval_stops_the_run_after_the_others_ran():
    backend = turn_with_both()
    result = run(backend, "clean the logs", tools=TOOLS)
    assert result.stop_reason is StopReason.APPROVAL_REQUIRED
    assert [c.id for c in result.pending] == ["rm"]
    assert RAN == [("list_files", {"folder": "/logs"})]  # the call needing no approval ran
    assert len(backend.requests) == 1
    state = result.state
    assert state is not None and state.round is not None
    assert state.round.results["ls"].output == "a.log b.log"


@pytest.mark.parametrize(
    ("decision", "ran", "answer"),
    [
        (Approve(), [("delete_file", {"path": "/logs/a.log"})], "deleted /logs/a.log"),
        (Deny(reason="not on a Friday"), [], "error: denied: not on a Friday"),
        (
            Edit(arguments={"path": "/logs/b.log"}),
            [("delete_file", {"path": "/logs/b.log"})],
            "deleted /logs/b.log",
        ),
    ],
)
def test_resume_applies_the_decision_and_runs_each_call_exactly_once(decision, ran, answer):
    backend = turn_with_both()
    paused = run(backend, "clean the logs", tools=TOOLS)
    RAN.clear()
    result = resume(backend, paused.state, tools=TOOLS, decisions={"rm": decision})
    assert result.stop_reason is StopReason.FINAL_TEXT and result.final_text == "Done."
    assert RAN == ran  # list_files did not run again
    answers = {m.result.call_id: m.result.output for m in result.messages if m.role == "tool"}
    assert answers == {"ls": "a.log b.log", "rm": answer}
    # one answer per call id, in call order, right after the turn: a valid history
    assert validate_history(list(result.messages)) == list(result.messages)
    tool_ids = [m.result.call_id for m in result.messages if m.role == "tool"]
    assert tool_ids == ["ls", "rm"]
    # the model saw the answers on its next request
    assert backend.requests[1].messages[-1].result.call_id == "rm"


def test_an_approval_policy_decides_and_none_defers_to_the_tool():
    seen = []

    def policy(call):
        seen.append(call.name)
        return False if call.name == "list_files" else None

    result = run(turn_with_both(), "clean the logs", tools=TOOLS, approve=policy)
    assert seen == ["list_files", "delete_file"]
    assert result.stop_reason is StopReason.APPROVAL_REQUIRED  # delete_file still asks
    assert RAN == []
    assert "denied" in result.state.round.results["ls"].output

    allow_all = run(turn_with_both(), "clean the logs", tools=TOOLS, approve=lambda call: True)
    assert allow_all.stop_reason is StopReason.FINAL_TEXT
    assert [name for name, _ in RAN] == ["list_files", "delete_file"]


def test_a_call_left_without_a_decision_keeps_waiting():
    backend = turn_with_both()
    paused = run(backend, "q", tools=TOOLS)
    again = resume(backend, paused.state, tools=TOOLS)
    assert again.stop_reason is StopReason.APPROVAL_REQUIRED
    assert [c.id for c in again.pending] == ["rm"]
    assert len(backend.requests) == 1


def test_iter_run_announces_the_calls_that_wait():
    events = list(iter_run(turn_with_both(), "q", tools=TOOLS))
    asked = [e for e in events if isinstance(e, ApprovalRequested)]
    assert len(asked) == 1 and [c.id for c in asked[0].calls] == ["rm"]
    assert events[-1].result.stop_reason is StopReason.APPROVAL_REQUIRED


def test_arun_pauses_and_aresume_goes_on():
    async def go():
        backend = turn_with_both()
        paused = await tooluse.arun(backend, "q", tools=TOOLS)
        return await tooluse.aresume(
            backend, paused.state, tools=TOOLS, decisions={"rm": Approve()}
        )

    assert asyncio.run(go()).final_text == "Done."


def test_the_state_goes_through_json_and_resumes_in_another_process(tmp_path):
    paused = run(turn_with_both(), "clean the logs", tools=TOOLS)
    path = tmp_path / "state.json"
    paused.state.save(path)
    assert json.loads(path.read_text())["kind"] == "tooluse.run_state"
    assert not [p for p in tmp_path.iterdir() if p.name != "state.json"]  # no temporary left
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from test_approval import TOOLS, RAN
        from tooluse import Approve, RunState, ScriptedBackend, resume
        state = RunState.load({str(path)!r})
        result = resume(ScriptedBackend(["Done in another process."]), state, tools=TOOLS,
                        decisions={{"rm": Approve()}})
        print(result.final_text, RAN)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert "Done in another process." in out.stdout
    assert "('delete_file', {'path': '/logs/a.log'})" in out.stdout
    assert "list_files" not in out.stdout  # it ran before the pause, not again


def test_states_that_do_not_fit_are_refused_with_a_clear_error(tmp_path):
    paused = run(turn_with_both(), "q", tools=TOOLS)
    text = paused.state.to_json()
    with pytest.raises(RunStateError, match="corrupt or cut short"):
        RunState.from_json(text[: len(text) // 2])
    other = json.loads(text)
    other["version"] = "0.0.1"
    with pytest.raises(RunStateError, match=r"tooluse 0\.0\.1.*this is tooluse"):
        RunState.from_json(json.dumps(other))
    with pytest.raises(RunStateError, match="not a tooluse run state"):
        RunState.from_json('{"messages": []}')
    with pytest.raises(RunStateError, match="delete_file"):
        resume(ScriptedBackend([]), paused.state, tools=[list_files])
    with pytest.raises(RunStateError, match="nope"):
        resume(ScriptedBackend([]), paused.state, tools=TOOLS, decisions={"nope": Approve()})
    with pytest.raises(RunStateError, match="cannot read"):
        RunState.load(tmp_path / "missing.json")


def test_a_state_keeps_what_replaying_to_a_provider_needs():
    from tooluse.messages import ChatMessage, ProviderState, ReasoningPart, TextPart

    signed = ProviderState(provider="anthropic", model="claude", data={"signature": "sig"})
    call = ToolCall(id="c", name="list_files", arguments={"folder": "/"}, state=signed)
    turn = ChatMessage(
        role="assistant",
        parts=(ReasoningPart(text="think", state=signed), TextPart(text="Looking."), call),
    )
    state = RunState(messages=(ChatMessage.user("q"), turn))
    loaded = RunState.from_json(state.to_json())
    again = loaded.messages[1]
    assert again.parts[0].state == signed and again.tool_calls[0].state == signed
    assert [type(p).__name__ for p in again.parts] == ["ReasoningPart", "TextPart", "ToolCall"]
