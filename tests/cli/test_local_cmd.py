"""`tooluse schema`, `tooluse demo` and `tooluse chat` (the last two on the real local model)."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app

runner = CliRunner()

TOOLS_FILE = textwrap.dedent(
    '''
    from typing import Literal

    from tooluse.tools import ToolRegistry, tool

    registry = ToolRegistry()


    @tool(registry=registry)
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
        """Get the current weather for a city.

        Args:
            city: City name, e.g. Paris.
            unit: Temperature unit.
        """
        return {"city": city, "temperature": 21, "unit": unit, "conditions": "sunny"}


    def plain(x: int) -> int:
        """Not decorated, still exportable by `tooluse schema`."""
        return x
    '''
)


@pytest.fixture()
def tools_file(tmp_path):
    path = tmp_path / "my_tools.py"
    path.write_text(TOOLS_FILE)
    return path


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini", "bedrock", "mcp"])
def test_schema_prints_each_format(tools_file, fmt):
    result = runner.invoke(app, ["schema", f"{tools_file}:get_weather", "--format", fmt])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    text = json.dumps(data)
    assert "get_weather" in text and "city" in text and "fahrenheit" in text


def test_schema_of_undecorated_function(tools_file):
    result = runner.invoke(app, ["schema", f"{tools_file}:plain"])
    assert result.exit_code == 0, result.output
    assert (
        json.loads(result.output)["function"]["parameters"]["properties"]["x"]["type"] == "integer"
    )


def test_schema_bad_input_is_a_clear_error(tools_file, tmp_path):
    unknown = runner.invoke(app, ["schema", f"{tools_file}:get_weather", "--format", "xml"])
    assert unknown.exit_code != 0 and "unknown format" in unknown.output
    missing = runner.invoke(app, ["schema", f"{tools_file}:nothing"])
    assert missing.exit_code != 0 and "no attribute 'nothing'" in missing.output
    nofile = runner.invoke(app, ["schema", f"{tmp_path / 'absent.py'}:f"])
    assert nofile.exit_code != 0 and "no such file" in nofile.output
    shape = runner.invoke(app, ["schema", "just_a_name"])
    assert shape.exit_code != 0 and "no such file" in shape.output


def test_schema_of_a_whole_file_in_every_format(tools_file):
    import json

    for fmt in ("openai", "openai-responses", "anthropic", "gemini", "bedrock", "mcp"):
        result = runner.invoke(app, ["schema", str(tools_file), "--format", fmt])
        assert result.exit_code == 0, result.output
        schemas = json.loads(result.output)
        assert isinstance(schemas, list) and len(schemas) >= 1
    responses = json.loads(
        runner.invoke(app, ["schema", str(tools_file), "-f", "openai-responses"]).output
    )
    assert responses[0]["type"] == "function" and "parameters" in responses[0]


def test_help_everywhere():
    for command in ("demo", "chat", "schema"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output


@pytest.mark.slow
def test_demo_runs_a_real_tool_loop():
    result = runner.invoke(app, ["demo", "-q", "What's the weather in Paris?"])
    assert result.exit_code == 0, result.output
    assert "→ call get_weather(city=" in result.output
    assert "← result" in result.output and "temperature" in result.output
    assert "answer" in result.output


@pytest.mark.slow
def test_demo_is_right_on_the_calculator_without_the_argument_check():
    """The default model (the shipped adapter) keeps the brackets itself; the untouched model
    drops them, and the check (off by default) puts them back."""
    question = "What is 12 * (3 + 4)?"
    plain = runner.invoke(app, ["demo", "-q", question])
    assert plain.exit_code == 0, plain.output
    assert "→ call calculate(expression='12 * (3 + 4)')" in plain.output
    assert "argument check" not in plain.output and "1/1 answers right" in plain.output
    assert "model SmolLM2-135M-Instruct (Q4_1) + smollm2-135m-arithmetic," in plain.output
    checked = runner.invoke(app, ["demo", "-m", "local:base", "--argument-check", "-q", question])
    assert checked.exit_code == 0, checked.output
    assert "argument check" in checked.output and "1/1 answers right" in checked.output


@pytest.mark.slow
def test_chat_reads_piped_stdin(tools_file):
    result = runner.invoke(
        app,
        ["chat", "--model", "local", "--tools", str(tools_file), "--max-tokens", "64"],
        input="What's the weather in Paris?\nWhat is the capital of France?\n\n",
    )
    assert result.exit_code == 0, result.output
    assert "tools: get_weather" in result.output
    assert result.output.count("assistant>") == 2
    assert "→ call get_weather" in result.output


def test_chat_rejects_a_file_without_tools(tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    result = runner.invoke(app, ["chat", "--tools", str(empty)], input="\n")
    assert result.exit_code != 0 and "defines no @tool functions" in result.output


def test_chat_unknown_model_prefix(tmp_path):
    result = runner.invoke(app, ["chat", "--model", "nosuch:model"], input="\n")
    assert result.exit_code != 0 and "unknown model prefix" in result.output


def test_schema_tokens_prints_each_tools_size_largest_first(tools_file):
    result = runner.invoke(app, ["schema", str(tools_file), "--tokens", "--format", "anthropic"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    counts = [int(line.split()[-2]) for line in lines[:-1]]
    assert counts == sorted(counts, reverse=True) and all(c > 10 for c in counts)
    assert lines[-1].startswith("total") and int(lines[-1].split()[1]) == sum(counts)
    bigger = runner.invoke(
        app, ["schema", str(tools_file), "--tokens", "--format", "openai", "--strict"]
    )
    assert bigger.exit_code == 0
