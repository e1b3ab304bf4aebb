"""The run log: runs written with ``log=True`` or ``TOOLUSE_LOG=1``, read back by ``RunLog``
and by ``tooluse logs``; a log that cannot be written never fails the run."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tooluse import ScriptedBackend, ToolCall, arun, run, tool
from tooluse.cli.app import app
from tooluse.errors import BackendError
from tooluse.loop.run_log import RunLog


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def script():
    return ScriptedBackend([[ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})], "5"])


@pytest.fixture
def log_path(tmp_path, monkeypatch):
    path = tmp_path / "logs.db"
    monkeypatch.setenv("TOOLUSE_LOG_PATH", str(path))
    monkeypatch.delenv("TOOLUSE_LOG", raising=False)
    return path


def test_run_with_log_true_records_every_call(log_path):
    result = run(script(), "What is 2 + 3?", tools=[add], log=True)
    (entry,) = RunLog(log_path).entries()
    assert entry.prompt == "What is 2 + 3?"
    assert entry.model == "scripted" and entry.tools == ("add",)
    assert entry.final_text == result.final_text == "5"
    assert entry.stop_reason == "final_text"
    assert entry.calls == [
        {
            "id": "c1",
            "name": "add",
            "arguments": {"a": 2, "b": 3},
            "output": "5",
            "error": False,
            "duration": entry.calls[0]["duration"],
            "iteration": 1,
        }
    ]
    assert RunLog(log_path).get(entry.id[:10]).id == entry.id


def test_nothing_is_logged_unless_asked(log_path, monkeypatch):
    run(script(), "What is 2 + 3?", tools=[add])
    assert RunLog(log_path).entries() == []
    monkeypatch.setenv("TOOLUSE_LOG", "1")
    run(script(), "again", tools=[add])
    assert [e.prompt for e in RunLog(log_path).entries()] == ["again"]
    run(script(), "not this one", tools=[add], log=False)
    assert len(RunLog(log_path).entries()) == 1


async def test_arun_logs_too(log_path):
    await arun(script(), "async question", tools=[add], log=True)
    assert RunLog(log_path).entries()[0].prompt == "async question"


def test_a_failed_run_is_logged_with_its_error(log_path):
    class Broken(ScriptedBackend):
        def generate_with_tools(self, *args, **kwargs):
            raise BackendError("the model is down")

    with pytest.raises(BackendError):
        run(Broken([]), "hello", log=True)
    (entry,) = RunLog(log_path).entries()
    assert entry.error == "BackendError: the model is down"


def test_unwritable_log_warns_and_the_run_succeeds(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("TOOLUSE_LOG_PATH", str(blocker / "logs.db"))  # a file as a directory
    with pytest.warns(UserWarning, match="run log"):
        result = run(script(), "What is 2 + 3?", tools=[add], log=True)
    assert result.final_text == "5"


def test_logs_command_lists_and_shows(log_path):
    run(script(), "What is 2 + 3?", tools=[add], log=True)
    runner = CliRunner()
    listed = runner.invoke(app, ["logs", "--json"])
    assert listed.exit_code == 0, listed.output
    record = json.loads(listed.output.splitlines()[0])
    assert record["prompt"] == "What is 2 + 3?" and record["calls"][0]["name"] == "add"
    shown = runner.invoke(app, ["logs", "show", record["id"]])
    assert shown.exit_code == 0
    assert 'add({"a": 2, "b": 3}) -> [ok] 5' in shown.output
    assert "answer   5" in shown.output
    missing = runner.invoke(app, ["logs", "show", "nope"])
    assert missing.exit_code == 2
    table = runner.invoke(app, ["logs", "-n", "5"])
    assert "What is 2" in table.output and "final_text" in table.output


def test_a_logged_run_opens_in_the_trace_viewer(log_path, tmp_path):
    from tooluse.evals.trace_view import load_traces, render_trace

    run(script(), "What is 2 + 3?", tools=[add], log=True)
    entry = RunLog(log_path).entries()[0]
    saved = tmp_path / "run.json"
    result = CliRunner().invoke(app, ["logs", "show", entry.id, "--save", str(saved)])
    assert result.exit_code == 0, result.output
    (trace,) = load_traces(saved)
    html = render_trace(trace)
    assert "add" in html and "final_text" in trace.stop_reason


def test_logs_show_the_cost_of_a_priced_run(log_path):
    from tooluse import GenerationResult, Usage

    priced = ScriptedBackend([GenerationResult(text="ok", usage=Usage(requests=1, cost=0.0123))])
    run(priced, "a priced question", log=True)
    runner = CliRunner()
    record = json.loads(runner.invoke(app, ["logs", "--json"]).output.splitlines()[0])
    shown = runner.invoke(app, ["logs", "show", record["id"]])
    assert "cost $0.012300" in shown.output
