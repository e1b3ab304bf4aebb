"""A class-based tool (interlens style) registered by name in ``DEFAULT_REGISTRY``.

The hand-written ``schema`` is the standard function-calling shape, so it can go straight to a
chat template; tooluse also validates calls against it.
"""

from __future__ import annotations

from tooluse import DEFAULT_REGISTRY, ScriptedBackend, Tool, ToolCall, run


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
        return str(eval(expression, {"__builtins__": {}}))  # sandbox eval for the example only


DEFAULT_REGISTRY.register(Calculator())  # now resolvable by the name "calculator"

calculator = DEFAULT_REGISTRY.get("calculator")
print("resolved:", calculator.name, "-", calculator.description)
print("direct:", calculator.invoke({"expression": "2 * (3 + 4)"}))

# A scripted model asks for the tool, then answers with its result.
backend = ScriptedBackend(
    [
        [ToolCall(id="call_1", name="calculator", arguments={"expression": "17 * 23"})],
        "17 * 23 = 391.",
    ]
)
result = run(backend, "Compute 17 * 23 using your tool, then explain.", tools=[Calculator()])
for message in result.messages:
    if message.role == "tool":
        print("tool result:", message.content)
print("final:", result.final_text)
