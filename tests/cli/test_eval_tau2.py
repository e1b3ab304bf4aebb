"""`tooluse eval tau2` and `tooluse eval env tau2:DOMAIN`: the commands, their usage errors,
a run with a user model, and Ctrl-C keeping the finished conversations (a real process)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.envs.tau2.users import ScriptedUser
from tooluse.providers import register_model_prefix
from tooluse.providers.scripted import ScriptedBackend

CLI = str(Path(__file__).with_name("slow_model_cli.py"))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_usage_errors_are_one_line_with_exit_code_2():
    missing = invoke("eval", "tau2", "--domain", "airline", "-m", "local")
    assert missing.exit_code == 2
    assert "needs a user simulator: pass user_model= (--user-model MODEL)" in missing.output
    solo = invoke("eval", "tau2", "--domain", "retail", "--solo", "-m", "local")
    assert solo.exit_code == 2 and "tau2:retail has no solo mode" in solo.output
    domain = invoke("eval", "tau2", "--domain", "banking", "-m", "local", "--solo")
    assert domain.exit_code == 2 and "unknown environment 'tau2:banking'" in domain.output
    other = invoke("eval", "env", "math:arithmetic", "-m", "local", "--user-model", "local")
    assert other.exit_code == 2 and "does not take these options: user_model" in other.output


def test_a_run_with_a_user_model_and_k_samples(tmp_path):
    register_model_prefix(
        "tau2-agent-test",
        lambda rest, **kw: ScriptedBackend(["Sorry, I cannot help."] * 8),
        replace=True,
    )
    register_model_prefix(
        "tau2-user-test",
        lambda rest, **kw: ScriptedUser(["I want to cancel my trip.", "###STOP###"]),
        replace=True,
    )
    out = tmp_path / "run"
    args = ["eval", "env", "tau2:airline", "-m", "tau2-agent-test:x", "--user-model"]
    args += ["tau2-user-test:x", "--split", "test", "-n", "2", "-k", "2", "--out", str(out), "-q"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert re.search(r"pass\^2\s+0\.", result.output)
    rows = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in rows) == ["0/0", "0/1", "1/0", "1/1"]
    for row in rows:
        last = row["steps"][-1]["info"]
        assert row["environment"] == "tau2:airline" and last["end"] == "user_stop"
        assert "tau2" in last and row["messages"][1]["content"] == "Hi! How can I help you today?"
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["pass_hat_k"]) == {"1", "2"}
    again = invoke(*args)
    assert re.search(r"ran / resumed\s+0 / 4", again.output), again.output


def rows(out: Path) -> list[dict]:
    path = out / "trajectories.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_ctrl_c_keeps_the_finished_conversations_and_the_rerun_resumes(tmp_path):
    out = tmp_path / "solo"
    command = [sys.executable, CLI, "eval", "tau2", "--domain", "telecom", "--solo"]
    command += ["--split", "test", "--limit", "5", "--out", str(out), "-q"]
    run = subprocess.Popen(
        [*command, "-m", "slow:2:60:check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    while len(rows(out)) < 2:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)  # the third conversation is generating (a minute of tokens)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert "interrupted: 2 finished item(s) written" in err
    assert [r["key"] for r in rows(out)] == ["0/0", "1/0"]
    # The slow model answers in text: solo, that ends the conversation unscored.
    assert all(r["steps"][-1]["info"]["end"] == "agent_error" for r in rows(out))
    rerun = subprocess.run(
        [*command, "-m", "slow:9:0:check"], capture_output=True, text=True, timeout=300
    )
    assert rerun.returncode == 0, rerun.stderr
    assert re.search(r"ran / resumed\s+3 / 2", rerun.stdout)
    assert sorted(r["key"] for r in rows(out)) == [f"{i}/0" for i in range(5)]


def test_a_user_model_that_cannot_load_is_a_usage_error():
    bad = invoke("eval", "tau2", "--domain", "mock", "-m", "local", "--user-model", "nope:x")
    assert bad.exit_code == 2 and "the user model 'nope:x' cannot be loaded" in bad.output
