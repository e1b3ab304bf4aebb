"""The code channels of model families are code mode's program tool when it is offered:
Llama 3's code interpreter (``<|python_tag|>`` code) and gpt-oss Harmony's ``to=python``
messages become a call of ``run_python`` with the code, read whole or streamed the same way;
without the program tool they stay what they were."""

from __future__ import annotations

import pytest

from tooluse import ToolDefinition
from tooluse.execution.code_mode import CodeMode, program_tool
from tooluse.formats import get_parser

WEATHER = ToolDefinition.from_callable(lambda city: city, name="get_weather")
PROGRAM = program_tool(CodeMode(), [WEATHER])
CODE = 'w = await get_weather(city="Paris")\nprint(w["temp"])'
TEXTS = {
    "llama3_json": f"<|python_tag|>{CODE}<|eom_id|>",
    "harmony": (
        "<|channel|>analysis<|message|>I will write code.<|end|><|start|>assistant to=python"
        f"<|channel|>commentary code<|message|>{CODE}<|call|>"
    ),
}


def calls(name: str, text: str, tools: list[ToolDefinition]) -> tuple[list, list]:
    parser = get_parser(name)
    whole = [(c.name, c.arguments) for c in parser.parse(text, tools).tool_calls]
    stream = parser.stream(tools)
    events = [e for chunk in text for e in stream.feed(chunk)] + stream.close()
    streamed = [(e.call.name, e.call.arguments) for e in events if hasattr(e, "call")]
    return whole, streamed


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_code_channel_is_a_call_of_the_program_tool(name):
    whole, streamed = calls(name, TEXTS[name], [PROGRAM])
    assert whole == streamed == [("run_python", {"code": CODE})]


def test_without_the_program_tool_the_channels_are_what_they_were():
    whole, _ = calls("llama3_json", TEXTS["llama3_json"], [WEATHER])
    assert whole == []  # code is not a built-in tool's call: reported as an error, as before
    builtin = calls("llama3_json", '<|python_tag|>get_weather.call(city="Oslo")', [WEATHER])[0]
    assert builtin == [("get_weather", {"city": "Oslo"})]
    harmony, _ = calls("harmony", TEXTS["harmony"], [WEATHER])
    assert [name for name, _ in harmony] == ["python"]
