"""Programs that survive a crash: a real process running a checkpointed code-mode run is killed
with SIGKILL at 20 random points (while the program runs in its sandbox, between its calls,
while the state is written) and resumed from its state file each time, then run to its end.
A charge the program made never runs twice, a finished call is never repeated, an idempotent
fetch may repeat, every call id of the history is answered once, and the program's answer
says what happened to each order."""

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

WORKER = Path(__file__).parent / "loop_workers" / "durable_program.py"
ORDERS = 6


def start(state: Path, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(state), str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def check_episode(state: Path, log: Path) -> None:
    saved = RunState.load(state)
    assert StopReason(saved.stop_reason) is StopReason.FINAL_TEXT
    messages = list(saved.messages)
    assert validate_history(messages) == messages
    (program,) = [m.result for m in messages if m.role == "tool"]
    lines = program.output.splitlines()
    effects = Counter(tuple(line.split()) for line in log.read_text().splitlines())
    charges = {int(key): n for (name, key), n in effects.items() if name == "charge"}
    assert all(n == 1 for n in charges.values()), charges  # never charged twice
    for order in range(ORDERS):
        said = [line for line in lines if line.startswith((f"charged {order}", f"charge {order} "))]
        assert len(said) == 1, (order, lines)
        if said[0] == f"charged {order}":  # answered as done: it really ran, once
            assert charges.get(order) == 1
        else:  # interrupted mid-call: said so, and not run again
            assert "interrupted" in said[0]
        assert f"record {order}" in lines  # the idempotent fetch always ends with its result
    inner = [t for t in saved.trail if t.get("caller") == "program"]
    assert sorted(t["arguments"]["order"] for t in inner if t["name"] == "charge") == list(
        range(ORDERS)
    )  # each charge in the trail once, however often the run was killed


def test_programs_killed_at_20_random_points_resume_without_repeating_a_call(tmp_path):
    rng = random.Random(20261207)
    kills, episodes = 0, 0
    folder = tmp_path / "0"
    folder.mkdir()
    while kills < 20:
        worker = start(folder / "run.json", folder / "effects.log")
        time.sleep(rng.uniform(0.1, 1.6))
        if worker.poll() is None:
            worker.send_signal(signal.SIGKILL)
            worker.communicate()
            kills += 1
            continue
        out, err = worker.communicate()
        assert worker.returncode == 0, err
        assert out.startswith("final_text all done"), out
        check_episode(folder / "run.json", folder / "effects.log")
        episodes += 1
        folder = tmp_path / str(episodes)
        folder.mkdir()
    final = start(folder / "run.json", folder / "effects.log")
    out, err = final.communicate(timeout=300)
    assert final.returncode == 0, err
    assert out.startswith("final_text all done"), out
    check_episode(folder / "run.json", folder / "effects.log")
