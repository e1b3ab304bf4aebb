"""Tool calling on the embedded local model (no API key): a grammar makes every call valid.

Run: python examples/local_tools.py
"""

from __future__ import annotations

import tooluse
from tooluse import ChatMessage
from tooluse.local import LlamaCppBackend, schema_to_gbnf
from tooluse.local.demo_tools import demo_tools


def main() -> None:
    backend = LlamaCppBackend.default()  # SmolLM2-135M-Instruct, loaded once and kept
    tools = demo_tools()

    # The whole loop: the model calls get_weather, the tool runs, the model answers.
    result = tooluse.run(backend, "What's the weather in Paris?", tools=tools)
    for step in result.trail:
        print(f"called {step.name}({step.arguments}) -> {step.output}")
    print("answer:", result.final_text)

    # One forced call, without the loop.
    turn = backend.generate(
        [ChatMessage.user("What is 12 * (3 + 4)?")], tools, tool_choice="calculate"
    )
    print("forced call:", turn.tool_calls[0].name, turn.tool_calls[0].arguments)

    # The grammar the model was held to for one tool's arguments.
    print(schema_to_gbnf(tools[0].parameters_schema))


if __name__ == "__main__":
    main()
