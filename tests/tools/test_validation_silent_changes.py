"""Arguments that reading into the function's types would change without a word: lost values
go back to the model as argument errors, changed ones are listed as coercions."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from tooluse import GenerationResult, ScriptedBackend, ToolCall, run
from tooluse.errors import ToolArgumentError
from tooluse.tools import ToolDefinition, as_tool


def tag(tags: set[str]) -> str:
    """Tag a document."""
    return ",".join(sorted(tags))


def freeze(tags: frozenset[int]) -> str:
    """Freeze some ids."""
    return str(sorted(tags))


def score(points: dict[int, str]) -> str:
    """Score by number."""
    return str(points)


def groups(sets: list[set[int]]) -> str:
    """Groups of ids."""
    return str(sets)


@pytest.mark.parametrize(
    ("fn", "arguments", "path", "shown"),
    [
        (tag, {"tags": ["a", "b", "a"]}, "tags", '"a"'),
        (tag, '{"tags": ["a", "b", "a"]}', "tags", '"a"'),
        (freeze, {"tags": [1, 2, 2, 1]}, "tags", "2, 1"),
        (groups, {"sets": [[1, 2], [3, 3]]}, "sets[1]", "3"),
    ],
)
def test_repeated_set_items_are_an_argument_error(fn, arguments, path, shown):
    with pytest.raises(ToolArgumentError) as caught:
        as_tool(fn).validate_arguments_report(arguments)
    assert f"{path}: items must be unique; repeated: {shown}" in caught.value.model_message


def test_unique_items_are_read_as_a_set():
    report = as_tool(tag).validate_arguments_report({"tags": ["a", "b"]})
    assert report.arguments == {"tags": {"a", "b"}}
    assert report.coercions == ()


def test_raw_schema_unique_items_says_which_repeat():
    schema = {
        "type": "object",
        "properties": {"ids": {"type": "array", "uniqueItems": True}},
        "required": ["ids"],
    }
    with pytest.raises(ToolArgumentError, match=r"ids: items must be unique; repeated: \"x\""):
        ToolDefinition.from_schema("ids", schema).validate_arguments({"ids": ["x", "y", "x"]})


def test_keys_that_become_one_are_an_argument_error():
    with pytest.raises(ToolArgumentError, match='points: keys "01" repeat a key once read'):
        as_tool(score).validate_arguments_report({"points": {"1": "a", "01": "b"}})


def test_key_text_changed_by_reading_is_a_coercion():
    report = as_tool(score).validate_arguments_report({"points": {"01": "a", "2": "b"}})
    assert report.arguments == {"points": {1: "a", 2: "b"}}
    assert [(c.path, c.kind, c.original, c.value) for c in report.coercions] == [
        ("points.01", "key text read as a value", "01", 1)
    ]


def test_repeated_json_key_is_a_coercion():
    report = as_tool(tag).validate_arguments_report('{"tags": ["a"], "tags": ["b"]}')
    assert report.arguments == {"tags": {"b"}}
    assert [(c.path, c.kind, c.original, c.value) for c in report.coercions] == [
        ("tags", "repeated key, the last value kept", ["a"], ["b"])
    ]


def test_loop_sends_the_repeated_items_back_to_the_model():
    seen: list[set[str]] = []

    def label(tags: set[str]) -> str:
        """Label a document."""
        seen.append(tags)
        return "ok"

    backend = ScriptedBackend(
        [
            [ToolCall(id="c1", name="label", arguments={"tags": ["a", "b", "a"]})],
            [ToolCall(id="c2", name="label", arguments={"tags": ["a", "b"]})],
            GenerationResult(text="done"),
        ]
    )
    result = run(backend, "label it", tools=[label])
    replies = [m.content for m in result.messages if m.role == "tool"]
    assert "items must be unique" in replies[0]
    assert replies[1] == "ok"
    assert seen == [{"a", "b"}]


class Point(BaseModel):
    x: int
    y: int = 0


class StrictPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int


def place(at: Point, label: str = "") -> str:
    """Place a label at a point."""
    return f"{label}@{at.x},{at.y}"


def place_strict(at: StrictPoint) -> str:
    """Place at a point."""
    return str(at.x)


def test_name_a_nested_model_ignores_is_a_coercion():
    report = as_tool(place).validate_arguments_report({"at": {"x": 1, "z": 3}, "label": "a"})
    assert report.arguments["at"] == Point(x=1)
    assert [(c.path, c.kind, c.original, c.value) for c in report.coercions] == [
        ("at.z", "dropped: Point has no field of that name", 3, "(dropped)")
    ]


def test_nested_model_that_forbids_unknown_names_still_reports_them():
    with pytest.raises(ToolArgumentError, match="at.z"):
        as_tool(place_strict).validate_arguments_report({"at": {"x": 1, "z": 3}})
