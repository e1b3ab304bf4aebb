"""invoke/ainvoke with injection, as_tool, Tool classes, @tool, registries and ToolManager."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import AliasChoices, BaseModel, Field

from tooluse import (
    DEFAULT_REGISTRY,
    GenerationResult,
    Injected,
    Tool,
    ToolArgumentError,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolDefinitionError,
    ToolExecutionError,
    ToolManager,
    ToolNotFoundError,
    ToolRegistry,
    as_tool,
    tool,
)


class Db:
    def __init__(self) -> None:
        self.rows = {"a": 1}


def lookup(key: str, db: Injected[Db], ctx: ToolContext, agent: Any = None) -> str:
    """Look a key up.

    Args:
        key: the key
    """
    return f"{key}={db.rows.get(key)} call={ctx.call_id} agent={agent}"


def test_invoke_injects_values_context_and_agent():
    t = ToolDefinition.from_callable(lookup)
    assert t.invoke({"key": "a"}, injected={"db": Db(), "agent": "A1"}, call_id="c9") == (
        "a=1 call=c9 agent=A1"
    )


def test_missing_injected_value_is_an_execution_error():
    t = ToolDefinition.from_callable(lookup)
    with pytest.raises(ToolExecutionError, match="'db'"):
        t.invoke({"key": "a"})


def test_injected_name_in_arguments_is_rejected_not_used():
    t = ToolDefinition.from_callable(lookup)
    with pytest.raises(ToolArgumentError, match="db: unknown argument"):
        t.invoke({"key": "a", "db": "evil"}, injected={"db": Db()})


async def slow_double(x: int) -> int:
    """Double x."""
    await asyncio.sleep(0)
    return 2 * x


def test_invoke_sync_and_async_tools():
    t = ToolDefinition.from_callable(slow_double)
    assert t.invoke({"x": "21"}) == 42
    assert asyncio.run(t.ainvoke('{"x": 4}')) == 8
    s = ToolDefinition.from_callable(lambda a, b: str(a + b), name="add")
    assert s.invoke({"a": 5, "b": 3}) == "8"
    assert asyncio.run(s.ainvoke({"a": 1, "b": 1})) == "2"


async def test_sync_invoke_of_async_tool_inside_a_loop_says_use_ainvoke():
    t = ToolDefinition.from_callable(slow_double)
    with pytest.raises(ToolExecutionError, match="ainvoke"):
        t.invoke({"x": 1})


def test_tool_exceptions_propagate_unchanged():
    def boom() -> None:
        """Fail."""
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        ToolDefinition.from_callable(boom).invoke({})


def test_invoke_without_implementation():
    t = ToolDefinition.from_schema("remote", {"type": "object", "properties": {}})
    with pytest.raises(ToolExecutionError, match="no implementation"):
        t.invoke({})


class Calculator(Tool):
    name = "calculator"

    @property
    def schema(self) -> dict:
        return {
            "type": "function",
            "function": {
                "name": "calculator",
                "description": "Evaluate a basic arithmetic expression and return the result.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "expression": {"type": "string", "description": "e.g. '2 * (3 + 4)'"}
                    },
                    "required": ["expression"],
                },
            },
        }

    def __call__(self, expression: str) -> str:
        return str(eval(expression, {"__builtins__": {}}))


class Echo(Tool):
    name = "echo"
    description = "Repeat the text."

    def __call__(self, text: str, times: int = 1) -> str:
        return text * times


def test_class_based_tools():
    calc = as_tool(Calculator())
    assert calc.name == "calculator"
    assert calc.invoke({"expression": "17 * 23"}) == "391"
    with pytest.raises(ToolArgumentError, match="expression: missing"):
        calc.validate_arguments({})
    echo = Echo()
    assert echo.schema["function"]["parameters"]["properties"]["times"]["default"] == 1
    assert as_tool(echo).invoke({"text": "ab", "times": "2"}) == "abab"
    assert as_tool(Echo).description == "Repeat the text."


class MovieInfo(BaseModel):
    """Extracted information for a movie."""

    title: str
    rating_value: float


def test_as_tool_accepts_every_form():
    definition = ToolDefinition.from_callable(slow_double)
    assert as_tool(definition) is definition
    model_tool = as_tool(MovieInfo)
    assert model_tool.name == "MovieInfo"
    assert model_tool.description == "Extracted information for a movie."
    movie = model_tool.invoke({"title": "Avatar", "rating_value": "7.5"})
    assert movie == MovieInfo(title="Avatar", rating_value=7.5)
    with pytest.raises(ToolArgumentError, match='did you mean "title"'):
        model_tool.validate_arguments({"titel": "x", "rating_value": 1})
    openai = definition.to_openai_schema()
    shapes = [
        openai,
        definition.to_openai_responses_schema(),
        definition.to_anthropic_schema(),
        definition.to_bedrock_schema(),
        definition.to_mcp_schema(),
        definition.to_gemini_schema(),
    ]
    for shape in shapes:
        back = as_tool(shape)
        assert back.name == "slow_double"
        assert back.validate_arguments({"x": "3"}) == {"x": 3}

    class McpLike:
        name = "read_file"
        description = "Read a file"
        inputSchema = {"type": "object", "properties": {"path": {"type": "string"}}}

    assert as_tool(McpLike()).parameters[0].name == "path"
    with pytest.raises(ToolDefinitionError, match="cannot use int"):
        as_tool(5)


def test_decorator_bare_and_with_options():
    registry = ToolRegistry()

    @tool(registry=registry)
    def ping() -> str:
        """Ping."""
        return "pong"

    @tool(name="submit", is_terminal=True, registry=registry)
    def submit_answer(answer: str) -> str:
        """Submit the final answer."""
        return answer

    assert ping() == "pong"  # still a plain function
    assert registry.names() == ["ping", "submit"]
    assert registry.get("submit").is_terminal
    assert as_tool(submit_answer).name == "submit"

    @tool
    def tooluse_test_bare_tool(x: int) -> int:
        """Bare."""
        return x

    assert "tooluse_test_bare_tool" in DEFAULT_REGISTRY
    DEFAULT_REGISTRY.unregister("tooluse_test_bare_tool")


def test_registry_duplicates_scopes_and_lookup_errors():
    registry = ToolRegistry([slow_double])
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.register(ToolDefinition.from_callable(lambda x: x, name="slow_double"))
    registry.register(slow_double)  # the same function again is fine (module reload)
    replacement = ToolDefinition.from_callable(lambda x: x, name="slow_double")
    registry.register(replacement, replace=True)
    assert registry.get("slow_double") is replacement
    child = registry.scoped()
    child.register(lookup)
    assert child.names() == ["lookup", "slow_double"]
    assert "lookup" not in registry
    with pytest.raises(ToolNotFoundError) as info:
        registry.get("nope")
    assert "available tools: slow_double" in info.value.model_message
    registry.register(Calculator())
    assert isinstance(registry.get_object("calculator"), Calculator)


# ----------------------------------------------------------------- ToolManager (Mesa-LLM)


class Agent:
    def __init__(self, uid: int) -> None:
        self.unique_id = uid
        self.internal_state: list[str] = []


def change_state(agent: Agent, new_state: str) -> str:
    """Change the agent's internal state.

    Args:
        agent: The agent whose state to change (provided automatically)
        new_state: The new state value to set
    """
    agent.internal_state.append(f"State changed to: {new_state}")
    return f"Agent {agent.unique_id} state changed to {new_state}"


async def wait_and_report(agent: Agent, seconds: float) -> str:
    """Wait, then report."""
    await asyncio.sleep(seconds)
    return f"{agent.unique_id} waited {seconds}"


def failing(agent: Agent) -> str:
    """Always fails."""
    raise RuntimeError("broken tool")


def _manager() -> ToolManager:
    manager = ToolManager(registry=None)
    for fn in (change_state, wait_and_report, failing):
        manager.register(fn)
    return manager


def test_manager_schemas_selection_semantics():
    manager = _manager()
    assert manager.has_tool("change_state") and not manager.has_tool("nope")
    all_names = [s["function"]["name"] for s in manager.get_all_tools_schema()]
    assert all_names == ["change_state", "wait_and_report", "failing"]
    assert manager.get_all_tools_schema([]) == []
    picked = manager.get_all_tools_schema(["failing", "change_state"])
    assert [s["function"]["name"] for s in picked] == ["failing", "change_state"]
    params = picked[1]["function"]["parameters"]
    assert list(params["properties"]) == ["new_state"]  # agent hidden
    assert params["required"] == ["new_state"]
    with pytest.raises(ToolNotFoundError):
        manager.get_all_tools_schema(["nope"])


def test_manager_call_validates():
    manager = _manager()
    manager.register(slow_double)
    assert manager.call("slow_double", {"x": "5"}) == "10"
    with pytest.raises(ToolArgumentError):
        manager.call("slow_double", {"y": 1})


def _openai_style_response(calls: list[tuple[str, str, Any]]) -> dict:
    return {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": args if isinstance(args, str) else json.dumps(args),
                            },
                        }
                        for cid, name, args in calls
                    ],
                }
            }
        ]
    }


def test_call_tools_one_result_per_id_errors_as_data():
    manager = _manager()
    agent = Agent(7)
    response = _openai_style_response(
        [
            ("c1", "change_state", {"new_state": "calm"}),
            ("c2", "wait_and_report", {"seconds": "0"}),
            ("c3", "failing", {}),
            ("c4", "nope", {}),
            ("c5", "change_state", '{"new_stat": "x"}'),
            ("c6", "change_state", "{broken"),
        ]
    )
    results = manager.call_tools(agent, response)
    assert [r["tool_call_id"] for r in results] == ["c1", "c2", "c3", "c4", "c5", "c6"]
    by_id = {r["tool_call_id"]: r for r in results}
    assert by_id["c1"]["response"] == "Agent 7 state changed to calm"
    assert by_id["c1"]["role"] == "tool" and by_id["c1"]["name"] == "change_state"
    assert by_id["c2"]["response"] == "7 waited 0.0"
    assert by_id["c3"]["is_error"] and "broken tool" in by_id["c3"]["response"]
    assert by_id["c4"]["is_error"] and "unknown tool 'nope'" in by_id["c4"]["response"]
    assert 'did you mean "new_state"' in by_id["c5"]["response"]
    assert "not valid JSON" in by_id["c6"]["response"]
    assert agent.internal_state == ["State changed to: calm"]


async def test_acall_tools_runs_async_tools_in_parallel():
    manager = _manager()
    started: list[str] = []
    release = asyncio.Event()

    async def gate(agent: Agent, name: str) -> str:
        """Wait for the gate."""
        started.append(name)
        if len(started) == 2:
            release.set()
        await release.wait()  # only returns when both calls are running at once
        return name

    manager.register(gate)
    calls = [
        ToolCall(id="a", name="gate", arguments={"name": "a"}),
        ToolCall(id="b", name="gate", arguments={"name": "b"}),
    ]
    results = await asyncio.wait_for(
        manager.acall_tools(Agent(1), GenerationResult(tool_calls=tuple(calls))), 10
    )
    assert [r["response"] for r in results] == ["a", "b"]


async def test_call_tools_inside_a_running_loop():
    manager = _manager()
    results = manager.call_tools(
        Agent(2), [ToolCall(id="x", name="wait_and_report", arguments={"seconds": 0})]
    )
    assert results[0]["response"] == "2 waited 0.0"


def test_manager_receives_registry_tools_and_add_tool_to_all():
    registry = ToolRegistry()
    m1 = ToolManager(registry=registry)
    m2 = ToolManager({"double": slow_double}, registry=registry)
    assert m2.has_tool("double")

    @tool(registry=registry)
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    assert m1.has_tool("shout") and m2.has_tool("shout")
    ToolManager.add_tool_to_all(Echo())
    assert m1.has_tool("echo") and m2.has_tool("echo")
    local = ToolManager(registry=None)

    @tool(tool_manager=local)
    def only_here() -> str:
        """Only in one manager."""
        return "here"

    assert local.has_tool("only_here") and not m1.has_tool("only_here")
    assert "only_here" not in DEFAULT_REGISTRY


class AliasedRecord(BaseModel):
    """A record whose fields are named differently on the wire."""

    year_: int = Field(alias="year")
    title_text: str = Field(validation_alias="title")
    tag: str = Field(default="none", validation_alias=AliasChoices("label", "tag_name"))


def test_model_tool_with_aliases_validates_and_invokes_by_schema_names():
    definition = ToolDefinition.from_model(AliasedRecord)
    assert set(definition.parameters_schema["properties"]) == {"year", "title", "label"}
    arguments = definition.validate_arguments({"year": "1995", "title": "Heat", "label": "crime"})
    # Keyed as the schema names them, so they round-trip through the schema and the model.
    assert arguments == {"year": 1995, "title": "Heat", "label": "crime"}
    record = definition.invoke({"year": 1995, "title": "Heat"})
    assert record == AliasedRecord(year=1995, title="Heat")
    assert record.tag == "none"
    with pytest.raises(ToolArgumentError) as info:
        definition.validate_arguments({"year_": 1995, "title": "Heat"})
    assert "year_" in info.value.model_message and 'did you mean "year"' in info.value.model_message


def test_manager_register_replaces_by_name_and_warns_for_a_different_tool():
    import warnings

    from tooluse.tools import ToolDefinitionWarning

    def ping() -> str:
        """First ping."""
        return "one"

    def other_ping() -> str:
        """Second ping."""
        return "two"

    manager = ToolManager(registry=None)
    manager.register(ping)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        manager.register(ping)  # the same tool again: nothing to say
    replacement = ToolDefinition.from_callable(other_ping, name="ping")
    with pytest.warns(ToolDefinitionWarning, match="'ping' replaces an earlier tool"):
        manager.register(replacement)
    assert manager.call("ping", {}) == "two"
    assert manager.get_all_tools_schema()[0]["function"]["description"] == "Second ping."
