"""The ToolManager answers as Mesa-LLM's does where Mesa-LLM users' code reads the answer:
schemas of non-tools, unknown names, arguments the tool does not take, Returns text."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tooluse import GenerationResult, ScriptedBackend, ToolCall, ToolManager, run
from tooluse.tools import ToolRegistry, tool


def _call(call_id: str, name: str, arguments: str) -> SimpleNamespace:
    return SimpleNamespace(id=call_id, function=SimpleNamespace(name=name, arguments=arguments))


def _response(*calls: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(tool_calls=list(calls))


@pytest.fixture
def manager() -> ToolManager:
    registry = ToolRegistry()

    @tool(registry=registry)
    def greet(agent, name: str, times: int = 1) -> str:
        """Greet someone.

        Args:
            agent: The calling agent.
            name: Person name.
            times: Repetitions.

        Returns:
            The greeting, repeated.
        """
        return " ".join([f"Hi {name}!"] * times)

    @tool(registry=registry)
    def ping() -> str:
        """Answer pong."""
        return "pong"

    return ToolManager(registry=registry)


def test_schema_of_a_function_that_is_not_a_tool_is_an_error_dict(manager):
    def plain():
        return "x"

    assert manager.get_tool_schema(plain, "plain") == {
        "error": "Tool plain missing __tool_schema__"
    }


def test_schema_carried_by_the_function_is_answered_as_it_is(manager):
    def carried(x: int) -> int:
        return x

    given = {"type": "function", "function": {"name": "carried", "description": "Given."}}
    carried.__tool_schema__ = given  # type: ignore[attr-defined]
    assert manager.get_tool_schema(carried, "carried") == given


def test_unknown_names_in_a_selection_are_named_with_the_tools_available(manager):
    with pytest.raises(ValueError) as caught:
        manager.get_all_tools_schema(["greet", "nope", "gone"])
    assert str(caught.value) == (
        "Unknown tool name(s): ['nope', 'gone']. Available tools: ['greet', 'ping']"
    )


def test_calling_an_unknown_tool_says_it_is_not_found(manager):
    with pytest.raises(
        ValueError, match=r"^Tool 'nope' not found; available tools: \['greet', 'ping'\]$"
    ):
        manager.call("nope", {})


def test_returns_text_is_in_the_description(manager):
    by_name = {s["function"]["name"]: s["function"] for s in manager.get_all_tools_schema()}
    assert by_name["greet"]["description"] == "Greet someone. returns: The greeting, repeated."
    assert by_name["ping"]["description"] == "Answer pong."
    assert manager.get_tool_schema(manager.tools["greet"], "greet")["function"][
        "description"
    ].endswith(" returns: The greeting, repeated.")


def test_call_tools_drops_arguments_the_tool_does_not_take(manager):
    [result] = manager.call_tools(
        object(), _response(_call("c1", "greet", json.dumps({"name": "Ann", "mood": "happy"})))
    )
    assert result["response"] == "Hi Ann!"
    assert result["is_error"] is False


def test_call_tools_reports_a_model_sent_agent_even_beside_droppable_names(manager):
    sent = {"name": "Ann", "agent": "someone else", "mood": "happy"}
    [result] = manager.call_tools("the agent", _response(_call("c1", "greet", json.dumps(sent))))
    assert result["is_error"] is True
    assert "agent: unknown argument" in result["response"]
    assert "Hi Ann" not in result["response"]  # the tool did not run


def test_call_tools_still_reports_a_misspelt_required_argument(manager):
    [result] = manager.call_tools(
        object(), _response(_call("c1", "greet", json.dumps({"nme": "Ann", "mood": "happy"})))
    )
    assert result["is_error"] is True
    assert 'did you mean "name"' in result["response"]


def test_loop_still_reports_unknown_arguments_to_the_model():
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hi {name}!"

    backend = ScriptedBackend(
        [
            [ToolCall(id="c1", name="greet", arguments={"name": "Ann", "mood": "happy"})],
            GenerationResult(text="done"),
        ]
    )
    result = run(backend, "greet Ann", tools=[greet])
    [reply] = [m.content for m in result.messages if m.role == "tool"]
    assert "mood: unknown argument" in reply
