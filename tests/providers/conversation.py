"""A shared conversation for the wire tests: parallel calls, one failed result, reasoning state."""

from __future__ import annotations

from tooluse import (
    ChatMessage,
    ProviderState,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolParameter,
    ToolResult,
)

WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city",
    parameters=(ToolParameter("city", description="City name"),),
)
TIME = ToolDefinition(name="get_time", description="Current time")


def conversation(
    state: ProviderState | None = None,
    call_state: ProviderState | None = None,
    text_state: ProviderState | None = None,
):
    """system, user, assistant(reasoning, text, 2 calls), 2 results (2nd failed), user."""
    return [
        ChatMessage.system("Be brief."),
        ChatMessage.user("Weather in Paris and the time?"),
        ChatMessage(
            role="assistant",
            parts=(
                ReasoningPart(text="Need both tools.", state=state),
                TextPart(text="Checking.", state=text_state),
                ToolCall(
                    id="call_1", name="get_weather", arguments={"city": "Paris"}, state=call_state
                ),
                ToolCall(id="call_2", name="get_time", arguments={}),
            ),
        ),
        ChatMessage.tool_result(ToolResult.success("call_1", "get_weather", "sunny")),
        ChatMessage.tool_result(ToolResult.failure("call_2", "get_time", "clock offline")),
        ChatMessage.user("Thanks. Anything else?"),
    ]
