"""Runs that survive a crash: a real process running a checkpointed run is killed with SIGKILL
at 20 random points, resumed each time from its state file, and finally run to its end. Nothing
may run twice that must not (a non-idempotent tool), nothing may be lost (every call id gets
exactly one answer), and the history stays valid."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tooluse import RunState, StopReason
from tooluse.providers.history import validate_history

pytestmark = pytest.mark.slow

WORKER = Path(__file__).parent / "loop_workers" / "durable_run.py"


def start(state: Path, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(state), str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def check_episode(state: Path, log: Path) -> None:
    """What must hold for a run that was killed and resumed any number of times."""
    saved = RunState.load(state)
    assert StopReason(saved.stop_reason) is StopReason.FINAL_TEXT
    messages = list(saved.messages)
    assert validate_history(messages) == messages  # every call answered once, in place
    calls = [c.id for m in messages for c in m.tool_calls]
    answers = Counter(m.result.call_id for m in messages if m.role == "tool")
    assert len(calls) == 12 and set(answers) == set(calls) and set(answers.values()) == {1}
    effects = Counter(tuple(line.split()) for line in log.read_text().splitlines())
    charges = {key: n for (name, key), n in effects.items() if name == "charge"}
    assert all(n == 1 for n in charges.values()), charges  # never charged twice
    by_id = {m.result.call_id: m.result for m in messages if m.role == "tool"}
    for order in range(6):
        answer = by_id[f"charge_{order}"]
        if answer.is_error:  # interrupted mid-call: said so, not run again
            assert "interrupted" in answer.output
        else:  # answered as done: it really ran, once
            assert charges.get(str(order)) == 1
        # an idempotent fetch always ends with its real result, however often it ran
        assert by_id[f"fetch_{order}"].output == f"record {order}"


def test_runs_killed_at_20_random_points_resume_without_repeating_or_losing_a_call(tmp_path):
    rng = random.Random(20261201)
    kills, episodes = 0, 0
    folder = tmp_path / "0"
    folder.mkdir()
    while kills < 20:
        worker = start(folder / "run.json", folder / "effects.log")
        # Kill points spread over the start-up, model turns, tool calls and state writes; where
        # one lands depends on the machine, what must hold does not.
        time.sleep(rng.uniform(0.05, 1.0))
        if worker.poll() is None:
            worker.send_signal(signal.SIGKILL)
            worker.communicate()
            kills += 1
            continue
        out, err = worker.communicate()
        assert worker.returncode == 0, err
        assert out.startswith("final_text all done"), out
        check_episode(folder / "run.json", folder / "effects.log")  # this run ended: a new one
        episodes += 1
        folder = tmp_path / str(episodes)
        folder.mkdir()
    final = start(folder / "run.json", folder / "effects.log")
    out, err = final.communicate(timeout=300)
    assert final.returncode == 0, err
    assert out.startswith("final_text all done"), out
    check_episode(folder / "run.json", folder / "effects.log")
