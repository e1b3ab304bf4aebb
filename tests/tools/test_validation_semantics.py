"""One validation semantics for function tools and raw-schema tools (issue 12, items 19 and 20).

Only documented lossless coercions are applied (and reported); everything that would change
the meaning is refused with a message the model can act on, the same way on both paths.
"""

from __future__ import annotations

import datetime
import enum
import json
import uuid
from typing import Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tooluse import ToolArgumentError, ToolDefinition


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


def plan(
    count: int = 0,
    ratio: float = 0.0,
    flag: bool = False,
    when: Optional[datetime.datetime] = None,
    day: Optional[datetime.date] = None,
    rank: Literal[1, 2, 3] = 1,
    level: Level = Level.LOW,
    unit: Literal["celsius", "fahrenheit"] = "celsius",
    point: tuple[float, float] = (0.0, 0.0),
    tags: Optional[list[str]] = None,
    ident: Optional[uuid.UUID] = None,
) -> str:
    """Plan something."""
    return "ok"


CALLABLE = ToolDefinition.from_callable(plan)
RAW = ToolDefinition.from_schema("plan", CALLABLE.parameters_schema)
BOTH = pytest.mark.parametrize("tool", [CALLABLE, RAW], ids=["callable", "raw-schema"])


def message(tool: ToolDefinition, arguments: object) -> str:
    with pytest.raises(ToolArgumentError) as info:
        tool.validate_arguments(arguments)
    return info.value.model_message


REFUSED = [
    ({"count": True}, "count: expected integer, got boolean true"),
    ({"ratio": True}, "ratio: expected number, got boolean true"),
    ({"flag": "yes"}, 'flag: expected boolean, got string "yes"'),
    ({"flag": "on"}, 'flag: expected boolean, got string "on"'),
    ({"flag": "1"}, 'flag: expected boolean, got string "1"'),
    ({"flag": 1}, "flag: expected boolean, got integer 1"),
    ({"flag": 0}, "flag: expected boolean, got integer 0"),
    ({"count": "3.0"}, 'count: expected integer, got string "3.0"'),
    ({"count": "5_000"}, 'count: expected integer, got string "5_000"'),
    ({"count": "0x10"}, 'count: expected integer, got string "0x10"'),
    ({"when": 2024}, "when: expected a date-time string"),
    ({"ratio": "NaN"}, 'ratio: expected number, got string "NaN"'),
    ({"ratio": "Infinity"}, 'ratio: expected number, got string "Infinity"'),
    ({"rank": True}, "rank: expected one of 1, 2, 3, got boolean true"),
    ({"level": True}, "level: expected one of 1, 2, got boolean true"),
    ({"level": False}, "level: expected one of 1, 2, got boolean false"),
    ({"day": "14/07/2024"}, 'day: expected a date string (YYYY-MM-DD, e.g. "2024-07-14")'),
    ({"ident": "not-a-uuid"}, "ident: expected a UUID string"),
]


@BOTH
@pytest.mark.parametrize(("arguments", "expected"), REFUSED, ids=[str(a) for a, _ in REFUSED])
def test_meaning_changing_coercions_are_refused(tool, arguments, expected):
    text = message(tool, arguments)
    assert expected in text


LOSSLESS = [
    ({"count": "5"}, "count", 5, "string to integer"),
    ({"count": "-12"}, "count", -12, "string to integer"),
    ({"count": 7.0}, "count", 7, "whole number to integer"),
    ({"ratio": "2.5"}, "ratio", 2.5, "string to number"),
    ({"flag": "true"}, "flag", True, "string to boolean"),
    ({"flag": "False"}, "flag", False, "string to boolean"),
    ({"tags": "x"}, "tags", ["x"], "wrapped a single value in a list"),
    ({"tags": '["a", "b"]'}, "tags", ["a", "b"], "decoded JSON text"),
    ({"unit": "CELSIUS"}, "unit", "celsius", "matched enum value ignoring case"),
    ({"rank": "2"}, "rank", 2, "string to integer"),
]


@BOTH
@pytest.mark.parametrize(
    ("arguments", "key", "value", "kind"), LOSSLESS, ids=[str(c[0]) for c in LOSSLESS]
)
def test_lossless_coercions_are_applied_and_reported(tool, arguments, key, value, kind):
    report = tool.validate_arguments_report(arguments)
    got = report.arguments[key]
    assert got == value and type(got) is type(value) or isinstance(got, enum.Enum)
    assert [c.kind for c in report.coercions] == [kind]
    assert report.coercions[0].path == key


def test_dates_and_enums_come_back_typed_for_functions_and_as_json_for_raw_schemas():
    args = {"when": "2024-07-14T09:30:00Z", "level": 2, "point": [1, 2.5]}
    typed = CALLABLE.validate_arguments(args)
    assert typed["when"] == datetime.datetime(2024, 7, 14, 9, 30, tzinfo=datetime.timezone.utc)
    assert typed["level"] is Level.HIGH and typed["point"] == (1.0, 2.5)
    assert RAW.validate_arguments(args) == args


def test_ambiguous_enum_case_match_is_refused():
    """Issue 16: an ambiguous enum coercion must not choose a value."""
    for tool in (
        ToolDefinition.from_schema(
            "pick",
            {"type": "object", "properties": {"mode": {"enum": ["Fast", "FAST", "slow"]}}},
        ),
        ToolDefinition.from_callable(pick_mode),
    ):
        text = message(tool, {"mode": "fast"})
        assert 'mode: expected one of "Fast", "FAST", "slow", got string "fast"' in text
        # one case-insensitive match is not ambiguous
        report = tool.validate_arguments_report({"mode": "SLOW"})
        assert report.arguments["mode"] == "slow"
        assert [c.kind for c in report.coercions] == ["matched enum value ignoring case"]


def pick_mode(mode: Literal["Fast", "FAST", "slow"]) -> str:
    """Pick a mode."""
    return mode


# ----------------------------------------------------------------- model-facing messages


class Circle(BaseModel):
    radius: float


class Rect(BaseModel):
    width: float
    height: float


def draw(shape: Circle | Rect, label: str | None = None) -> str:
    """Draw a shape."""
    return "drawn"


DRAW = ToolDefinition.from_callable(draw)
DRAW_RAW = ToolDefinition.from_schema("draw", DRAW.parameters_schema)


@pytest.mark.parametrize("tool", [DRAW, DRAW_RAW], ids=["callable", "raw-schema"])
def test_union_errors_point_at_the_closest_branch(tool):
    text = message(tool, {"shape": {"width": 2, "height": "tall"}})
    assert 'shape.height: expected number, got string "tall"' in text
    assert "radius" not in text
    text = message(tool, {"shape": {"radius": "big"}})
    assert 'shape.radius: expected number, got string "big"' in text
    assert "width" not in text
    # no branch fits: every branch is listed
    text = message(tool, {"shape": "circle"})
    assert "expected object with radius or object with width, height" in text


@BOTH
def test_short_tuple_is_too_short_not_a_missing_argument(tool):
    text = message(tool, {"point": [1.0]})
    assert "point: array too short" in text and "got 1" in text
    assert "missing" not in text


@BOTH
def test_messages_are_json_never_python_reprs(tool):
    text = message(tool, {"unit": None, "count": None, "flag": None, "tags": {"a": None}})
    assert "null null" not in text
    assert "None" not in text and "True" not in text and "'" not in text.split(":", 1)[1]
    text = message(tool, {"tags": [True, None]})
    assert "got boolean true" in text and "got null" in text


def test_null_for_a_value_is_reported_as_got_null():
    strict = ToolDefinition.from_schema(
        "s", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    assert "n: expected integer, got null\n" in message(strict, {"n": None})


def test_coercion_report_text_is_json():
    report = CALLABLE.validate_arguments_report({"flag": "true", "tags": "x"})
    assert [str(c) for c in report.coercions] == [
        'flag: string to boolean ("true" -> true)',
        'tags: wrapped a single value in a list ("x" -> ["x"])',
    ]


# ----------------------------------------------------------------- both paths agree

_KEYS = ["count", "ratio", "flag", "when", "day", "rank", "level", "unit", "point", "tags", "x"]
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.5, 2.0, -1.5, 3.0])
    | st.sampled_from(
        [
            "",
            "1",
            "2",
            "2.5",
            "true",
            "yes",
            "Celsius",
            "celsius",
            "NaN",
            "2024-07-14",
            "2024-07-14T09:30:00Z",
            "14/07/2024",
            "[1, 2]",
            "x",
        ]
    ),  # fmt: skip
    lambda children: st.lists(children, max_size=3),
    max_leaves=4,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _values, max_size=4))
def test_callable_and_raw_schema_paths_accept_the_same_arguments(arguments):
    outcomes = []
    for tool in (CALLABLE, RAW):
        try:
            report = tool.validate_arguments_report(arguments)
        except ToolArgumentError as exc:
            outcomes.append(("refused", exc.errors[0]["path"]))
        else:
            outcomes.append(("accepted", tuple(c.kind for c in report.coercions)))
    assert outcomes[0][0] == outcomes[1][0], (arguments, outcomes)
    if outcomes[0][0] == "accepted":
        assert outcomes[0] == outcomes[1], (arguments, outcomes)
    json.dumps(arguments)  # the probes are JSON values
