"""``ToolSearch``: a large toolset behind one ``search_tools`` tool. The model sees only the
search tool at first, the tools its query found from the next request on, and every tool of
the set still runs; a query that matches nothing is answered so; a resumed run keeps what was
found. Where the backend's provider searches tools itself, the run sends every tool deferred
instead (the wire side is in tests/providers/test_tool_loading.py)."""

from __future__ import annotations

import pytest

from tooluse import ModelCapabilities, ScriptedBackend, StopReason, ToolCall, ToolDefinition, run
from tooluse.retrieval import BM25Scorer
from tooluse.retrieval.tool_search import ToolSearch


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


def many_tools() -> list:
    filler = [
        ToolDefinition.from_schema(
            f"inventory_item_{i}",
            {"type": "object", "properties": {"sku": {"type": "string"}}},
            description=f"Look up stock level number {i} for a warehouse product.",
        )
        for i in range(80)
    ]
    return [*filler, get_weather]


def script() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [ToolCall(id="s", name="search_tools", arguments={"query": "weather in a city"})],
            [ToolCall(id="w", name="get_weather", arguments={"city": "Oslo"})],
            "Sunny in Oslo.",
        ]
    )


def test_the_model_sees_the_search_tool_then_what_it_found():
    backend = script()
    result = run(backend, "Weather in Oslo?", tools=ToolSearch(many_tools(), top_k=3))
    assert result.final_text == "Sunny in Oslo."
    first, second, third = (r.tools for r in backend.requests)
    assert [t.name for t in first] == ["search_tools"]
    assert [t.name for t in second][0] == "search_tools" and "get_weather" in {
        t.name for t in second
    }
    assert len(second) <= 4  # the search tool and at most top_k found tools, not 81
    assert "get_weather" in {t.name for t in third}
    found = result.messages[2].result.output
    assert found.startswith("These tools can be called now:") and "get_weather" in found
    assert [t.output for t in result.trail if t.name == "get_weather"] == ["sunny in Oslo"]


def test_a_required_call_stays_required_after_a_search():
    # the search only finds the tool: the forced choice holds until a found tool is called
    backend = script()
    result = run(
        backend, "Weather in Oslo?", tools=ToolSearch(many_tools(), top_k=3), tool_choice="required"
    )
    assert result.final_text == "Sunny in Oslo."
    assert [r.tool_choice for r in backend.requests] == ["required", "required", "auto"]


def test_a_query_that_matches_nothing_is_answered_so_and_every_tool_still_runs():
    backend = ScriptedBackend(
        [
            [ToolCall(id="s", name="search_tools", arguments={"query": "zebra xylophone"})],
            [ToolCall(id="w", name="get_weather", arguments={"city": "Rome"})],
            "done",
        ]
    )
    result = run(backend, "q", tools=ToolSearch(many_tools()))
    assert "no tool matches 'zebra xylophone'" in result.messages[2].result.output
    assert [t.name for t in backend.requests[1].tools] == ["search_tools"]
    assert result.trail[-1].output == "sunny in Rome"  # not offered, still runs when called
    assert result.stop_reason is StopReason.FINAL_TEXT


def test_tools_named_always_are_offered_from_the_start():
    backend = ScriptedBackend(["hi"])
    run(backend, "q", tools=ToolSearch(many_tools(), always=["get_weather"]))
    assert [t.name for t in backend.requests[0].tools] == ["search_tools", "get_weather"]


def test_a_resumed_run_keeps_the_tools_found(tmp_path):
    from tooluse import RunState, resume

    path = tmp_path / "run.json"
    tools = ToolSearch(many_tools(), top_k=2)
    backend = ScriptedBackend(
        [[ToolCall(id="s", name="search_tools", arguments={"query": "weather city"})], "ok"]
    )
    run(backend, "q", tools=tools, checkpoint=path)
    state = RunState.load(path)
    assert "get_weather" in state.discovered
    later = ScriptedBackend(["ok"])
    resume(later, RunState(messages=state.messages[:1], discovered=state.discovered), tools=tools)
    assert "get_weather" in {t.name for t in later.requests[0].tools}


NATIVE = ModelCapabilities(supports_tool_search=True)


def test_a_backend_with_its_own_search_gets_every_tool_deferred_but_those_named_always():
    backend = ScriptedBackend(
        [[ToolCall(id="w", name="get_weather", arguments={"city": "Oslo"})], "Sunny."],
        capabilities=NATIVE,
    )
    result = run(backend, "Weather?", tools=ToolSearch(many_tools(), always=["get_weather"]))
    assert result.trail[0].output == "sunny in Oslo"
    for request in backend.requests:
        assert len(request.tools) == 81 and "search_tools" not in {t.name for t in request.tools}
        assert request.params is not None
        assert len(request.params.deferred_tools) == 80
        assert "get_weather" not in request.params.deferred_tools


def test_native_false_or_a_custom_scorer_keeps_search_tools():
    for search in (
        ToolSearch(many_tools(), native=False),
        ToolSearch(many_tools(), scorer=BM25Scorer()),
    ):
        backend = ScriptedBackend(["hi"], capabilities=NATIVE)
        run(backend, "q", tools=search)
        assert [t.name for t in backend.requests[0].tools] == ["search_tools"]
        assert backend.requests[0].params is None


def test_native_true_needs_a_backend_with_its_own_search():
    with pytest.raises(ValueError, match="no tool search of its own"):
        run(ScriptedBackend(["hi"]), "q", tools=ToolSearch(many_tools(), native=True))
