"""`tooluse parse` and `tooluse formats`: model text on stdin, calls as JSON on stdout."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from tooluse.cli.app import app

runner = CliRunner()
TOOLUSE = [sys.executable, "-c", "from tooluse.cli.app import main; main()"]
TEXT = 'Checking.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def test_parse_prints_calls_as_json():
    result = runner.invoke(app, ["parse", "--format", "qwen3", "--tool", "get_weather"], input=TEXT)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["text"] == "Checking."
    assert [(c["name"], c["arguments"]) for c in out["tool_calls"]] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert out["errors"] == []


def test_parse_reports_unknown_tools():
    result = runner.invoke(app, ["parse", "-f", "hermes", "-t", "today"], input=TEXT)
    out = json.loads(result.output)
    assert out["tool_calls"][0]["name"] == "get_weather"
    assert "unknown tool" in out["errors"][0]["message"]


def test_parse_stream_prints_one_event_per_line_in_a_real_process():
    proc = subprocess.run(
        [*TOOLUSE, "parse", "--format", "hermes", "--stream", "--chunk-size", "4"],
        input=TEXT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "TextDelta"
    assert "ToolCallStarted" in kinds and kinds[-1] == "ToolCallFinished"
    args = "".join(e["text"] for e in events if e["event"] == "ArgumentsDelta")
    assert json.loads(args) == {"city": "Paris"}
    assert events[-1]["call"]["arguments"] == {"city": "Paris"}


def test_unknown_format_is_a_clear_error():
    result = runner.invoke(app, ["parse", "--format", "nope"], input="x")
    assert result.exit_code == 2
    assert "unknown tool-call format" in result.output


def test_formats_lists_names():
    result = runner.invoke(app, ["formats"])
    assert result.exit_code == 0
    names = result.output.split()
    assert "hermes" in names and "harmony" in names and "qwen3_coder" in names
