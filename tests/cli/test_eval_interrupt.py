"""Ctrl-C and SIGTERM stop `tooluse eval env` promptly, keep what finished, and resume.

Real ``tooluse`` processes (through a script adding a slow model prefix; and the real local
model in the slow test), real signals. The bounds are generous against machine speed but far
below the time the remaining work would take (a minute per unfinished trajectory).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = str(Path(__file__).with_name("slow_model_cli.py"))
TOOLUSE = str(Path(sys.executable).with_name("tooluse"))  # the installed command


def start(
    out: Path, model: str, limit: int = 5, script: str = CLI, *extra: str
) -> subprocess.Popen[str]:
    command = [sys.executable, script] if script != TOOLUSE else [TOOLUSE]
    command += ["eval", "env", "math:arithmetic", "-m", model, "--limit", str(limit)]
    command += ["--out", str(out), "--no-python", "-q", *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rows(out: Path) -> list[dict]:
    path = out / "trajectories.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]  # every line whole


def wait_for_rows(out: Path, count: int, process: subprocess.Popen[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while len(rows(out)) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never got that far"
        time.sleep(0.05)


def stop(process: subprocess.Popen[str], *signals: signal.Signals) -> tuple[float, str]:
    started = time.monotonic()
    for number in signals:
        process.send_signal(number)
        time.sleep(0.2)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("the run went on after the signal") from None
    return time.monotonic() - started, err


@pytest.mark.parametrize(
    ("number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl_c", "sigterm"]
)
def test_a_signal_cancels_the_generation_and_the_rerun_resumes(tmp_path, number, code):
    out = tmp_path / "run"
    run = start(out, "slow:2:60:check")
    wait_for_rows(out, 2, run, 120)
    time.sleep(0.3)  # the third trajectory is generating (a minute of tokens)
    took, err = stop(run, number)
    assert run.returncode == code, err
    assert took < 10  # the cancelled generation had ~60 s to go
    assert "interrupted: 2 finished item(s) written" in err and "run the same command" in err
    assert [r["key"] for r in rows(out)] == ["0/0", "1/0"]  # the cut-short item is not there
    rerun = subprocess.run(
        [sys.executable, CLI, "eval", "env", "math:arithmetic", "-m", "slow:9:0:check"]
        + ["--limit", "5", "--out", str(out), "--no-python", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "ran / resumed           3 / 2" in rerun.stdout
    assert sorted(r["key"] for r in rows(out)) == ["0/0", "1/0", "2/0", "3/0", "4/0"]


def test_ctrl_c_writes_what_finished_to_the_output_file_too(tmp_path):
    out, output = tmp_path / "run", tmp_path / "trajectories.jsonl"
    run = start(out, "slow:2:60:check", 5, CLI, "-o", str(output))
    wait_for_rows(out, 2, run, 120)
    time.sleep(0.3)
    _, err = stop(run, signal.SIGINT)
    assert run.returncode == 130, err
    assert f"2 finished item(s) written in {out}, 2 in {output}" in err
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert written == rows(out)  # the same rows, in task order
    assert [r["key"] for r in written] == ["0/0", "1/0"]


def test_ctrl_c_without_out_names_the_directory_that_holds_what_finished(tmp_path):
    command = [sys.executable, CLI, "eval", "env", "math:arithmetic", "-m", "slow:2:60:check"]
    run = subprocess.Popen(
        [*command, "--limit", "5", "--no-python", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # the run's scratch directory goes here
    )
    deadline = time.monotonic() + 120
    while not [p for p in tmp_path.glob("tooluse-eval-*/trajectories.jsonl") if rows(p.parent)[1:]]:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never got that far"
        time.sleep(0.05)
    time.sleep(0.3)
    _, err = stop(run, signal.SIGINT)
    assert run.returncode == 130, err
    (directory,) = tmp_path.glob("tooluse-eval-*")
    assert f"2 finished item(s) written in {directory}" in err
    assert f"run the same command with --out {directory} to resume" in err
    assert [r["key"] for r in rows(directory)] == ["0/0", "1/0"]


def test_a_generation_that_ignores_the_stop_is_abandoned_after_the_grace(tmp_path):
    out = tmp_path / "run"
    run = start(out, "slow:1:60:ignore")
    wait_for_rows(out, 1, run, 120)
    time.sleep(0.3)
    took, err = stop(run, signal.SIGINT)
    assert run.returncode == 130, err
    assert took < 10
    assert [r["key"] for r in rows(out)] == ["0/0"]


def test_a_second_ctrl_c_exits_at_once(tmp_path):
    out = tmp_path / "run"
    run = start(out, "slow:1:60:ignore")
    wait_for_rows(out, 1, run, 120)
    time.sleep(0.3)
    took, err = stop(run, signal.SIGINT, signal.SIGINT)
    assert run.returncode == 130, err
    assert took < 1.8  # sooner than the two-second grace a single Ctrl-C gets
    assert "interrupted" in err


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_ctrl_c_stops_the_local_model_mid_generation_and_the_run_resumes(tmp_path):
    out = tmp_path / "run"
    short = ("--max-turns", "1", "--max-tokens", "48")  # short trajectories, many left to do
    run = start(out, "local", 20, TOOLUSE, *short)
    wait_for_rows(out, 1, run, 900)
    time.sleep(0.3)  # the next trajectory is generating
    took, err = stop(run, signal.SIGINT)
    assert run.returncode == 130, err  # not a crash of the interpreter mid-generation
    assert took < 15
    finished = rows(out)
    assert 1 <= len(finished) < 20 and "interrupted" in err
    rerun = subprocess.run(
        [TOOLUSE, "eval", "env", "math:arithmetic", "-m", "local", *short]
        + ["--limit", str(len(finished)), "--out", str(out), "--no-python", "-q"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"ran / resumed           0 / {len(finished)}" in rerun.stdout


def test_ctrl_c_stops_eval_bfcl_and_the_rerun_resumes(tmp_path):
    out = tmp_path / "bfcl"
    command = [sys.executable, CLI, "eval", "bfcl", "-c", "simple_python", "--limit", "5"]
    command += ["--out", str(out)]
    run = subprocess.Popen(
        [*command, "-m", "slow:2:60:check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while not results.exists() or len(results.read_text().splitlines()) < 2:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)
    took, err = stop(run, signal.SIGINT)
    assert run.returncode == 130, err
    assert took < 10
    assert "interrupted: 2 finished item(s) written" in err
    done = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(done) == 2
    rerun = subprocess.run(
        [*command, "-m", "slow:2:60:check"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SLOW_MODEL_FAST": "99"},
    )
    assert rerun.returncode == 0, rerun.stderr
    assert len(results.read_text().splitlines()) == 5  # three more, the first two kept


def test_ctrl_c_of_eval_bfcl_without_out_says_nothing_was_kept(tmp_path):
    """Without --out, eval bfcl works in a scratch directory it removes: the message must not
    claim the finished entries were written."""
    command = [sys.executable, CLI, "eval", "bfcl", "-c", "simple_python", "--limit", "5"]
    run = subprocess.Popen(
        [*command, "-m", "slow:2:60:check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    deadline = time.monotonic() + 120
    while not [
        p for p in tmp_path.glob("tooluse-bfcl-*/results.jsonl") if p.read_text().count("\n") >= 2
    ]:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never got that far"
        time.sleep(0.05)
    time.sleep(0.3)
    _, err = stop(run, signal.SIGINT)
    assert run.returncode == 130, err
    assert "interrupted: 2 finished item(s) not kept (no --out)" in err
    assert not list(tmp_path.glob("tooluse-bfcl-*"))
