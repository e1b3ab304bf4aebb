"""Mesa-LLM style tools: ``@tool`` functions with an injected ``agent`` and a ``ToolManager``.

The "model" is scripted: it asks for two tool calls, and the manager validates the
arguments, injects the calling agent, runs the tools and returns one result per call id.
"""

from __future__ import annotations

from tooluse import ScriptedBackend, ToolCall, ToolManager, tool


class Citizen:
    """A stand-in for a Mesa agent."""

    def __init__(self, unique_id: int) -> None:
        self.unique_id = unique_id
        self.internal_state: list[str] = []


@tool
def change_state(agent: Citizen, new_state: str) -> str:
    """
    Change the agent's internal state.

    Args:
       agent: The agent whose state to change (provided automatically)
       new_state: The new state value to set

    Returns:
       Confirmation message of the state change
    """
    agent.internal_state.append(f"State changed to: {new_state}")
    return f"Agent {agent.unique_id} state changed to {new_state}"


@tool
def move_one_step(agent: Citizen, direction: str) -> str:
    """Move one step in a cardinal direction.

    Args:
        agent: Provided automatically.
        direction: North, South, East or West.
    """
    return f"Agent {agent.unique_id} moved {direction}"


citizen_tool_manager = ToolManager()
print("tools:", sorted(citizen_tool_manager.tools))
schemas = citizen_tool_manager.get_all_tools_schema(selected_tools=["change_state"])
print("schema parameters:", schemas[0]["function"]["parameters"])
print("no tools:", citizen_tool_manager.get_all_tools_schema(selected_tools=[]))

backend = ScriptedBackend(
    [
        [
            ToolCall(id="call_a", name="change_state", arguments={"new_state": "protesting"}),
            ToolCall(id="call_b", name="move_one_step", arguments={"directoin": "North"}),
        ]
    ]
)
llm_response = backend.generate([], tools=[])
agent = Citizen(unique_id=42)
for result in citizen_tool_manager.call_tools(agent, llm_response):
    print(result["tool_call_id"], result["name"], "->", result["response"])
print("agent state:", agent.internal_state)
print(
    "direct call:", citizen_tool_manager.call("move_one_step", {"direction": "East"}, agent=agent)
)
