"""``@tool`` on methods: the instance is bound, never a parameter the model is asked for."""

from __future__ import annotations

from tooluse import GenerationResult, ScriptedBackend, ToolCall, run
from tooluse.tools import ToolRegistry, as_tool, tool

REGISTRY = ToolRegistry()


class Shop:
    def __init__(self, stock: int) -> None:
        self.stock = stock

    @tool(registry=REGISTRY)
    def count(self, item: str) -> int:
        """How many of an item the shop holds.

        Args:
            item: The item's name.
        """
        return self.stock + len(item)


class Counter:
    step = 3

    def add(self, value: int) -> int:
        """Add the counter's step to a value."""
        return value + self.step


def _properties(obj: object) -> dict:
    return as_tool(obj).input_schema["properties"]


def test_method_decorated_in_class_body_has_no_self_parameter():
    assert _properties(Shop.count) == {
        "item": {"type": "string", "description": "The item's name."}
    }
    assert as_tool(Shop.count).input_schema["required"] == ["item"]
    assert _properties(Shop(stock=1).count) == _properties(Shop.count)


def test_method_decorated_in_class_body_is_called_on_its_instance():
    shop = Shop(stock=10)
    assert as_tool(shop.count).invoke({"item": "pen"}) == 13
    # nothing without an instance was registered
    assert "count" not in REGISTRY


def test_bound_method_decorated_is_registered_bound():
    registry = ToolRegistry()
    counter = Counter()
    returned = tool(counter.add, registry=registry, name="add_step")
    assert returned == counter.add
    definition = registry.get("add_step")
    assert list(definition.input_schema["properties"]) == ["value"]
    assert definition.invoke({"value": 4}) == 7


def test_loop_calls_a_method_tool_on_the_instance():
    shop = Shop(stock=100)
    backend = ScriptedBackend(
        [
            [ToolCall(id="c1", name="count", arguments={"item": "ink"})],
            GenerationResult(text="done"),
        ]
    )
    result = run(backend, "how many?", tools=[shop.count])
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.content == "103"
