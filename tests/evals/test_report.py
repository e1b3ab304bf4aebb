"""``tooluse report``: the HTML page opened in real headless Chromium, the PNG, the trace viewer."""

from __future__ import annotations

import json
import re
import struct
from collections import Counter

import pytest
from typer.testing import CliRunner

from tooluse import RunResult, ScriptedBackend, ToolCall, run
from tooluse.cli.app import app
from tooluse.evals.browser import dump_dom
from tooluse.evals.engine import read_results


def write_run(directory, rows, model="m"):
    directory.mkdir()
    with (directory / "results.jsonl").open("w") as handle:
        for row in rows:
            handle.write(json.dumps({"key": row["id"], "model": model, **row}) + "\n")
    (directory / "summary.json").write_text(json.dumps({"model": model, "items_per_minute": 12.5}))


def record(id, category, valid, error_type="", latency=0.5):
    return {
        "id": id,
        "category": category,
        "valid": valid,
        "error_type": error_type,
        "latency": latency,
        "prompt": [{"role": "user", "content": f"question {id} <b>&"}],
        "tools": ["get_weather"],
        "raw": '<tool_call>{"name": "get_weather"}</tool_call>',
        "decoded": [{"get_weather": {"city": "Paris"}}],
        "expected": [{"get_weather": {"city": ["Paris"]}}],
    }


@pytest.fixture()
def two_runs(tmp_path):
    a = [
        record("simple_python_0", "simple_python", True),
        record("simple_python_1", "simple_python", False, "simple:wrong_func_name", 1.5),
        record("parallel_0", "parallel", False, "parallel:wrong_count", 2.0),
        record("irrelevance_0", "irrelevance", True, latency=0.2),
    ]
    b = [
        record("simple_python_0", "simple_python", True),
        record("simple_python_1", "simple_python", True),
        record("parallel_0", "parallel", True),
        record("irrelevance_0", "irrelevance", False, "irrelevance:called"),
    ]
    write_run(tmp_path / "constrained", a, "local")
    write_run(tmp_path / "free", b, "local")
    return tmp_path


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_report_loads_in_chromium_without_errors_and_the_filter_works(two_runs):
    out = two_runs / "report.html"
    png = two_runs / "accuracy.png"
    result = CliRunner().invoke(
        app,
        [
            "report",
            str(two_runs / "constrained"),
            str(two_runs / "free"),
            "-o",
            str(out),
            "--png",
            str(png),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "rendered by headless Chromium" in result.output
    assert png_size(png) == (760, 300)
    page = out.read_text()
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script src" not in page and "<link" not in page  # nothing loaded from outside
    assert "question simple_python_0 &lt;b&gt;&amp;" in page  # escaped, not injected

    dump = dump_dom(out, fragment="#selftest")
    assert dump.errors == () and dump.console == ()
    assert re.search(r'<pre id="js-errors">\s*</pre>', dump.dom)
    selftest = json.loads(re.search(r'<pre id="selftest"[^>]*>(.*?)</pre>', dump.dom, re.S)[1])
    rows = [
        r
        for run in ("constrained", "free")
        for r in read_results(two_runs / run / "results.jsonl").values()
    ]
    categories = Counter(r["category"] for r in rows)
    assert {k: v for k, v in selftest.items() if k.startswith("category=")} == {
        f"category={c}": n for c, n in categories.items()
    }
    assert selftest["verdict=right"] == sum(r["valid"] for r in rows) == 5
    assert selftest["verdict=wrong"] == 3
    assert selftest["error=parallel:wrong_count"] == 1
    assert selftest["run=0"] == selftest["run=1"] == 4
    assert "8 of 8 items" in dump.dom  # after the self-test every filter is back to "all"
    # bars: one per run and category, heights from the accuracy
    assert dump.dom.count('class="bar"') == 6


@pytest.mark.slow
def test_the_error_check_is_not_blind(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    dump = dump_dom(broken)
    assert any("undefinedFunction is not defined" in e for e in dump.errors)


def test_report_of_a_directory_without_results_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["report", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "has no results.jsonl" in result.output
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def failing_tool(city: str) -> str:
    """Always fails.

    Args:
        city: A city.
    """
    raise RuntimeError("weather service down")


def get_time(city: str) -> str:
    """Time in a city.

    Args:
        city: A city.
    """
    return f"12:00 in {city}"


def test_run_result_save_and_load_round_trip(tmp_path):
    backend = ScriptedBackend(
        [
            [
                ToolCall(name="get_time", arguments={"city": "Oslo"}),
                ToolCall(name="failing_tool", arguments={"city": "Oslo"}),
            ],
            "It is noon in Oslo.",
        ]
    )
    result = run(backend, "time and weather in Oslo?", tools=[get_time, failing_tool])
    path = tmp_path / "run.json"
    result.save(path)
    loaded = RunResult.load(path)
    assert loaded.final_text == result.final_text == "It is noon in Oslo."
    assert loaded.stop_reason == result.stop_reason
    assert [(t.name, t.arguments, t.is_error, t.output) for t in loaded.trail] == [
        (t.name, t.arguments, t.is_error, t.output) for t in result.trail
    ]
    assert [(m.role, m.content, m.tool_calls) for m in loaded.messages] == [
        (m.role, m.content, m.tool_calls) for m in result.messages
    ]
    assert loaded.usage == result.usage


@pytest.mark.slow
def test_trace_viewer_renders_a_saved_run_and_a_trajectory(tmp_path):
    backend = ScriptedBackend(
        [
            [
                ToolCall(name="get_time", arguments={"city": "Oslo"}),
                ToolCall(name="failing_tool", arguments={"city": "Oslo"}),
            ],
            "It is noon in Oslo.",
        ]
    )
    run(backend, "time and weather in Oslo?", tools=[get_time, failing_tool]).save(
        tmp_path / "run.json"
    )
    trajectory = {
        "task_id": "arith-3",
        "success": True,
        "answer": "12",
        "total_reward": 1.0,
        "stop_reason": "terminal_tool",
        "usage": {"input_tokens": 5},
        "messages": [{"role": "user", "content": "What is 3*4?"}],
        "steps": [
            {
                "index": 0,
                "text": "",
                "reward": 0.5,
                "calls": [{"id": "c1", "name": "python", "arguments": {"code": "print(3*4)"}}],
                "results": [{"call_id": "c1", "name": "python", "output": "12", "is_error": False}],
            },
        ],
    }
    (tmp_path / "runs.jsonl").write_text(json.dumps(trajectory) + "\n")
    out = tmp_path / "traces.html"
    result = CliRunner().invoke(
        app, ["report", str(tmp_path / "run.json"), str(tmp_path / "runs.jsonl"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    dump = dump_dom(out)
    assert dump.errors == ()
    dom = dump.dom
    assert "stop: final_text" in dom and "stop: terminal_tool" in dom
    assert "tool failing_tool" in dom and "ERROR" in dom  # the failed call is flagged
    assert "weather service down" in dom and "12:00 in Oslo" in dom
    assert "runs.jsonl: arith-3" in dom and "print(3*4)" in dom and "step reward 0.5" in dom
    assert dom.count('class="trace"') == 2
    assert re.search(r"\d\.\d{3}s", dom)  # tool durations are shown


def test_markdown_table_has_a_column_per_run_and_counts(two_runs, tmp_path):
    out = tmp_path / "table.md"
    result = CliRunner().invoke(
        app,
        [
            "report",
            str(two_runs / "constrained"),
            str(two_runs / "free"),
            "-o",
            str(tmp_path / "r.html"),
            "--markdown",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0] == "| category | constrained (local) | free (local) |"
    assert lines[2] == "| simple_python | 50% (1/2) | 100% (2/2) |"
    assert lines[3] == "| parallel | 0% (0/1) | 100% (1/1) |"
    assert lines[4] == "| irrelevance | 100% (1/1) | 0% (0/1) |"
    assert lines[5] == "| **all** | 50% (2/4) | 75% (3/4) |"
    assert lines[6] == "| items/min | 12.5 | 12.5 |"
    printed = CliRunner().invoke(
        app, ["report", str(two_runs / "free"), "-o", str(tmp_path / "s.html"), "--markdown", "-"]
    )
    assert "| simple_python | 100% (2/2) |" in printed.output
