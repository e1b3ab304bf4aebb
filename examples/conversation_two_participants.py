"""A conversation between two participants, each with its own model, tools and tool budget.

The solver uses a calculator tool in a private loop; only its final message reaches the shared
transcript, with the calls kept in ``metadata["tool_trail"]``. The conversation is saved and
loaded back, resolving the calculator by name from a registry.
"""

from __future__ import annotations

import ast
import operator
import tempfile
from pathlib import Path

from tooluse import Conversation, Participant, ScriptedBackend, ToolCall
from tooluse.tools import ToolRegistry

OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def calculator(expression: str) -> str:
    """Evaluate a basic arithmetic expression and return the result.

    Args:
        expression: e.g. '2 * (3 + 4)'
    """

    def evaluate(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](evaluate(node.left), evaluate(node.right))
        raise ValueError(f"unsupported expression: {ast.unparse(node)}")

    value = evaluate(ast.parse(expression, mode="eval").body)
    return str(int(value) if float(value).is_integer() else value)


def build() -> Conversation:
    solver = Participant(
        name="solver",
        backend=ScriptedBackend(
            [
                [ToolCall(name="calculator", arguments={"expression": "17 * 23"})],
                "17 * 23 = 391.",
                [ToolCall(name="calculator", arguments={"expression": "17 * 20 + 17 * 3"})],
                "Check: 17 * 20 + 17 * 3 = 340 + 51 = 391.",
            ]
        ),
        tools=[calculator],
        max_tool_iters=4,
        model="scripted:solver",
    )
    critic = Participant(
        name="critic",
        backend=ScriptedBackend(["Please verify it another way."]),
        system_prompt="You are a careful reviewer. Ask for a check when an answer is given.",
        model="scripted:critic",
    )
    return Conversation(
        participants=[solver, critic],
        shared_context="Compute 17 * 23 using your tool, then explain.",
    )


def main() -> Conversation:
    conv = build()
    conv.run(turns=3)
    for message in conv.transcript:
        print(f"{message.name}: {message.content}")
        for step in message.metadata["tool_trail"]:
            print(f"    tool {step['name']}({step['arguments']}) -> {step['output']}")

    registry = ToolRegistry()
    registry.register(calculator)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversation.json"
        conv.save(path)
        loaded = Conversation.load(
            path,
            registry=registry,
            backends={"solver": ScriptedBackend([]), "critic": ScriptedBackend([])},
        )
    tools = [d.name for d in loaded.participants[0].tool_definitions]
    print(f"reloaded {len(loaded.transcript)} messages; solver tools: {tools}")
    return conv


if __name__ == "__main__":
    main()
