"""Defining tools as in the llenvs docs: by hand, and from a Python function.

Shows the manual ``ToolDefinition``/``ToolParameter`` form, ``from_callable``, the provider
exports, validation of the model's arguments, and the tool-result message that answers a call.
"""

from __future__ import annotations

import json

from tooluse import (
    ChatMessage,
    ToolArgumentError,
    ToolCall,
    ToolDefinition,
    ToolParameter,
    ToolParameterType,
    ToolResult,
)

# Define a tool by hand
weather_tool = ToolDefinition(
    name="get_weather",
    description="Get the current weather for a city",
    parameters=(
        ToolParameter(
            name="city",
            type=ToolParameterType.STRING,
            description="The city name",
        ),
        ToolParameter(
            name="units",
            type=ToolParameterType.STRING,
            description="Temperature units",
            required=False,
            enum=("celsius", "fahrenheit"),
        ),
    ),
)

# Terminal tools end the episode when called
submit_tool = ToolDefinition(
    name="submit_answer",
    description="Submit the final answer",
    parameters=(ToolParameter("answer", ToolParameterType.STRING, "The answer"),),
    is_terminal=True,
)

print("openai:", json.dumps(weather_tool.to_openai_schema()))
print("anthropic:", json.dumps(weather_tool.to_anthropic_schema()))


# From a Python function: signature + docstring
def get_weather(city: str, units: str = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
        units: Temperature units (celsius or fahrenheit).
    """
    return f"18 degrees {units} and sunny in {city}"


def submit_answer(answer: str) -> str:
    """Submit the final answer."""
    return answer


generated = ToolDefinition.from_callable(get_weather)
print(f"name={generated.name!r} description={generated.description!r}")
for p in generated.parameters:
    print(f"  {p.name}: {p.type.name}, required={p.required}, description={p.description!r}")

submit = ToolDefinition.from_callable(submit_answer, name="submit", is_terminal=True)
print(f"submit: name={submit.name!r} is_terminal={submit.is_terminal}")

# A model's call: validate its arguments, run the tool, answer the call id
call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
weather_data = generated.invoke(call.arguments)
tool_result = ToolResult.success(call_id=call.id, tool_name=call.name, output=weather_data)
messages = [
    ChatMessage(role="user", content="What's the weather in Paris?"),
    ChatMessage(role="assistant", content="", tool_calls=(call,)),
    ChatMessage.tool_result(tool_result),
]
print("tool message:", messages[-1].role, messages[-1].tool_call_id, messages[-1].content)

# Bad arguments get a message the model can act on
try:
    weather_tool.validate_arguments('{"citty": "Paris", "units": "kelvin"}')
except ToolArgumentError as exc:
    print(exc.model_message)
