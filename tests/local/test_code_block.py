"""The embedded model in code mode: the program grammar accepts the programs it should and no
other, llama.cpp reads it, and the real SmolLM2 model writes a program that runs in the
sandbox and calls the right tool, then answers from its output (``tooluse.run``)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

import tooluse
from tooluse import ChatMessage, GenerationResult, ToolDefinition, ToolParameter
from tooluse.execution.code_mode import CodeMode, program_tool, tool_stubs
from tooluse.local.code_block import CodeBlockModel, program_grammar

sys.path.insert(0, str(Path(__file__).parent))
from gbnf_match import accepts  # noqa: E402

WEATHER = ToolDefinition(
    name="get_weather",
    description="Get the current weather for a city",
    parameters=(
        ToolParameter("city", description="City name"),
        ToolParameter("unit", enum=("celsius", "fahrenheit"), required=False),
    ),
)
CONVERT = ToolDefinition(
    name="convert_currency",
    description="Convert money",
    parameters=(
        ToolParameter("amount", type="number"),
        ToolParameter("to_currency", description="ISO code"),
    ),
)
GRAMMAR = program_grammar(tool_stubs([WEATHER, CONVERT]))


@pytest.mark.parametrize(
    "program",
    [
        'result = await get_weather(city="Paris")\nprint(result)\n```',
        'result = await get_weather(city="Oslo", unit="celsius")\nprint(result["temp"])\n```',
        'result = await convert_currency(amount=12.5, to_currency="EUR")\n'
        'result2 = await get_weather(city=result["city"])\nfinal_answer(f"It is {result2}")\n```',
    ],
)
def test_the_grammar_accepts_programs_that_call_the_tools(program):
    assert accepts(GRAMMAR, program)


@pytest.mark.parametrize(
    "program",
    [
        "import os\nprint(os.environ)\n```",  # anything but a tool call first
        'result = get_weather(city="Paris")\n```',  # not awaited
        'result = await get_weather(town="Paris")\n```',  # not the tool's argument
        'result = await get_weather(city="Paris", unit="kelvin")\n```',  # not in the enum
        'result = await convert_currency(amount="ten", to_currency="EUR")\n```',  # not a number
        'def = await get_weather(city="Paris")\n```',  # a keyword as a name
    ],
)
def test_the_grammar_refuses_anything_else(program):
    assert not accepts(GRAMMAR, program)


def test_llama_cpp_reads_the_grammar_and_a_tool_without_named_arguments_is_left_out():
    from llama_cpp import LlamaGrammar

    LlamaGrammar.from_string(GRAMMAR, verbose=False)
    odd = ToolDefinition.from_schema("odd", {"type": "object", "properties": {"from": {}}})
    assert "odd(" not in program_grammar(tool_stubs([WEATHER, odd]))
    with pytest.raises(ValueError, match="no tool can be called"):
        program_grammar(tool_stubs([odd]))


class _Answering:
    """Stands in for the wrapped backend where only its text turns are asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, list[str]]] = []

    def generate(self, messages, tools=(), params=None, tool_choice="auto"):
        self.asked.append((len(messages), [t.name for t in tools]))
        return GenerationResult(text="done")


def test_after_the_programs_result_the_wrapped_model_answers():
    wrapped = _Answering()
    model = CodeBlockModel(wrapped)
    program = program_tool(CodeMode(), [WEATHER])
    history = [
        ChatMessage.user("weather?"),
        ChatMessage.assistant(tool_calls=[tooluse.ToolCall(id="p", name="run_python")]),
        ChatMessage.tool_result(tooluse.ToolResult.success("p", "run_python", "18")),
    ]
    assert model.generate(history, [program]).text == "done"
    assert wrapped.asked == [(3, [])]  # without the program tool


@pytest.mark.slow
def test_the_embedded_model_writes_a_program_that_runs_and_answers(backend):
    weather = dataclasses.replace(
        WEATHER, function=lambda city, unit="celsius": {"city": city, "temperature": 18}
    )
    model = CodeBlockModel(backend)
    result = tooluse.run(
        model, "What's the weather in Paris?", tools=[weather], code_mode=True, max_tool_iters=1
    )
    model.close()
    inner = [t for t in result.trail if t.caller]
    assert [t.name for t in inner] == ["get_weather"]
    assert "paris" in inner[0].arguments["city"].lower()
    program = next(m.result for m in result.messages if m.role == "tool")
    assert not program.is_error, program.output
    assert result.final_text  # the wrapped model answered from the program's output
