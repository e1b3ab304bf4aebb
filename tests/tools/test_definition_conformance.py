"""Tool definitions against the peers' expectations (issue 12 items 10, 18, 21, 22, 24).

Dotted names mapped per provider, strict export of tuples and unions, Google ``Keyword Args``
and ``name : text`` docstrings, Gemini's IntEnum and formats, Mesa-LLM's ToolManager contract.
"""

from __future__ import annotations

import asyncio
import enum
import json
import warnings
from datetime import date
from typing import Any

import pytest

from tooluse import ToolDefinition, ToolDefinitionError, ToolManager
from tooluse.tools.schema_export import STRICT_ALLOWED_KEYWORDS
from tooluse.tools.tool_names import original_tool_name, provider_tool_name

# ----------------------------------------------------------------- item 10: dotted names


def test_dotted_names_are_accepted_and_mapped_per_provider():
    tool = ToolDefinition.from_schema(
        "Calendar.create_event", {"type": "object", "properties": {"title": {"type": "string"}}}
    )
    assert tool.name == "Calendar.create_event"
    names = {
        "openai": tool.to_openai_schema()["function"]["name"],
        "openai_responses": tool.to_openai_responses_schema()["name"],
        "anthropic": tool.to_anthropic_schema()["name"],
        "bedrock": tool.to_bedrock_schema()["toolSpec"]["name"],
        "gemini": tool.to_gemini_schema()["name"],
        "mcp": tool.to_mcp_schema()["name"],
    }
    assert names == {
        "openai": "Calendar__create_event",
        "openai_responses": "Calendar__create_event",
        "anthropic": "Calendar__create_event",
        "bedrock": "Calendar__create_event",
        "gemini": "Calendar.create_event",  # Gemini and MCP allow dots
        "mcp": "Calendar.create_event",
    }
    change = [c for c in tool.export("openai").changes if c.keyword == "name"]
    assert change and "Calendar.create_event -> Calendar__create_event" in change[0].detail
    for provider, wire in names.items():
        assert original_tool_name(wire, provider, ["other", tool.name]) == tool.name


def test_name_mapping_is_reversible_and_prefers_exact_names():
    offered = ["a.b", "a__b"]
    assert provider_tool_name("a.b", "openai") == "a__b"
    # a tool literally named a__b keeps its name; a.b then needs the offered list to disambiguate
    assert original_tool_name("a__b", "openai", offered) == "a__b"
    long = "Service." + "x" * 60
    wire = provider_tool_name(long, "anthropic")
    assert len(wire) <= 64 and wire != provider_tool_name(long + "y", "anthropic")
    assert original_tool_name(wire, "anthropic", [long]) == long
    assert original_tool_name("unknown_tool", "openai", offered) == "unknown_tool"


@pytest.mark.parametrize("bad", ["Calendar.", ".create", "a..b", "a.b c", "1a.b", "x" * 65])
def test_still_invalid_names_are_refused(bad):
    with pytest.raises(ToolDefinitionError, match="invalid tool name"):
        ToolDefinition(name=bad)


# ----------------------------------------------------------------- item 18 and issue 16: strict


def _strict_keywords_ok(schema: dict[str, Any]) -> bool:
    """Every keyword is one strict mode accepts, and every array says what its items are."""
    kinds = schema.get("type")
    if (kinds == "array" or isinstance(kinds, list) and "array" in kinds) and "items" not in schema:
        return False
    if any(k not in STRICT_ALLOWED_KEYWORDS for k in schema):
        return False
    subs = [*(schema.get("properties") or {}).values(), *schema.get("anyOf", [])]
    if isinstance(schema.get("items"), dict):
        subs.append(schema["items"])
    return all(_strict_keywords_ok(s) for s in subs)


def route(
    start: tuple[float, float], hops: list[tuple[int, str]], end: tuple[float, float] | None = None
) -> str:
    """Route between points."""
    return "ok"


def test_strict_export_of_tuples_is_strict_valid():
    export = ToolDefinition.from_callable(route).export("openai", strict=True)
    assert export.strict is True
    params = export.schema["function"]["parameters"]
    assert _strict_keywords_ok(params), json.dumps(params)
    start = params["properties"]["start"]
    assert start == {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    hop = params["properties"]["hops"]["items"]
    assert hop["items"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert "integer, string" in hop["items"]["description"]
    kinds = {(c.path, c.keyword, c.action) for c in export.changes}
    assert ("/properties/start", "prefixItems", "rewritten") in kinds
    # validation still checks each position against the neutral schema
    tool = ToolDefinition.from_callable(route)
    assert tool.validate_arguments({"start": [1, 2], "hops": [[1, "a"]]})["hops"] == [(1, "a")]
    with pytest.raises(Exception, match="hops"):
        tool.validate_arguments({"start": [1, 2], "hops": [["a", 1]]})


def test_openai_strict_export_keeps_every_oneof_branch():
    """Issue 16: strict export must not silently drop a oneOf."""
    schema = {
        "type": "object",
        "properties": {
            "target": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"email": {"type": "string"}},
                        "required": ["email"],
                    },
                    {
                        "type": "object",
                        "properties": {"phone": {"type": "string"}},
                        "required": ["phone"],
                    },
                ]
            }
        },
        "required": ["target"],
    }
    export = ToolDefinition.from_schema("notify", schema).export("openai", strict=True)
    assert export.strict
    target = export.schema["function"]["parameters"]["properties"]["target"]
    assert "oneOf" not in target
    branches = target["anyOf"]
    assert [sorted(b["properties"]) for b in branches] == [["email"], ["phone"]]
    assert all(b["additionalProperties"] is False for b in branches)
    assert any(
        c.keyword == "oneOf" and c.action == "rewritten" and c.path == "/properties/target"
        for c in export.changes
    )


# ----------------------------------------------------------------- item 21: docstrings


def search(query: str, limit: int = 10, lang: str = "en") -> list:
    """Search the catalogue.

    Args:
        query : The text to look for.

    Keyword Args:
        limit (int): How many results at most.
        lang: Language code of the results.
    """
    return []


def search_kwargs_only(limit: int = 10) -> list:
    """Search.

    Keyword Arguments:
        limit: How many results at most.
    """
    return []


def test_keyword_args_sections_and_spaced_colons_keep_descriptions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "docstring and signature disagree" warning
        props = ToolDefinition.from_callable(search).parameters_schema["properties"]
        only = ToolDefinition.from_callable(search_kwargs_only).parameters_schema["properties"]
    assert props["query"]["description"] == "The text to look for."
    assert props["limit"]["description"] == "How many results at most."
    assert props["lang"]["description"] == "Language code of the results."
    assert only["limit"]["description"] == "How many results at most."
    assert ToolDefinition.from_callable(search).description == "Search the catalogue."


# ----------------------------------------------------------------- item 22: Gemini


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


def schedule(priority: Priority, on: date, note: str = "") -> str:
    """Schedule a task.

    Args:
        priority: How urgent.
        on: The day.
        note: A note.
    """
    return "ok"


def test_gemini_export_keeps_intenum_values_and_formats_in_the_description():
    export = ToolDefinition.from_callable(schedule).export("gemini")
    props = export.schema["parameters"]["properties"]
    assert props["priority"]["type"] == "integer" and "enum" not in props["priority"]
    assert props["priority"]["description"] == "How urgent. (allowed values: 1, 2)"
    assert "format" not in props["on"]
    assert props["on"]["description"] == "The day. (format: date)"
    dropped = {(c.path, c.keyword) for c in export.dropped}
    assert ("/properties/priority", "enum") in dropped and ("/properties/on", "format") in dropped


# ----------------------------------------------------------------- item 24: ToolManager


class Agent:
    def __init__(self, unique_id: int) -> None:
        self.unique_id = unique_id
        self.log: list[str] = []


def note_state(agent: Agent, state: str) -> None:
    """Record a state.

    Args:
        agent: Provided automatically.
        state: The new state.
    """
    agent.log.append(state)


def shout(text: str, times: int = 1, /) -> str:
    """Shout.

    Args:
        text: What to shout.
        times: How often.
    """
    return " ".join([text.upper()] * times)


def mover(agent: Agent, direction: str, /) -> str:
    """Move.

    Args:
        agent: Provided automatically.
        direction: Where.
    """
    return f"{agent.unique_id} {direction}"


@pytest.fixture
def manager() -> ToolManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mgr = ToolManager(registry=None)
        for fn in (note_state, shout, mover):
            mgr.register(fn)
    return mgr


def test_call_takes_the_agent_inside_the_arguments(manager):
    agent = Agent(7)
    assert manager.call("note_state", {"agent": agent, "state": "calm"}) == (
        "note_state executed successfully"
    )
    assert agent.log == ["calm"]
    assert manager.call("note_state", {"state": "busy"}, agent=agent)
    assert agent.log == ["calm", "busy"]


def test_unknown_tool_is_a_value_error_and_a_tooluse_error(manager):
    from tooluse.errors import ToolNotFoundError

    with pytest.raises(ValueError, match="Tool 'nope' not found") as info:
        manager.call("nope", {})
    assert isinstance(info.value, ToolNotFoundError)


def test_none_result_answers_executed_successfully_in_call_tools(manager):
    from tooluse import ToolCall

    agent = Agent(1)
    results = manager.call_tools(
        agent, [ToolCall(id="a", name="note_state", arguments={"state": "x"})]
    )
    assert results[0]["response"] == "note_state executed successfully"
    assert results[0]["is_error"] is False


def test_positional_only_parameters_are_accepted(manager):
    definition = manager.definition("shout")
    assert list(definition.parameters_schema["properties"]) == ["text", "times"]
    assert manager.call("shout", {"text": "hi", "times": 2}) == "HI HI"
    assert manager.call("shout", {"text": "hi"}) == "HI"
    assert manager.call("mover", {"direction": "North"}, agent=Agent(3)) == "3 North"
    assert asyncio.run(definition.ainvoke({"text": "yo"})) == "YO"
