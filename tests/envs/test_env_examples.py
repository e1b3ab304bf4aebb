"""The environment and evaluation examples run as scripts and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_env_arithmetic_example():
    out = run_example("env_arithmetic.py")
    assert "Tools: ['python', 'submit_answer']" in out
    assert "Output: 12.0" in out
    assert "monitor tool_validity=1.00 weight=0.0" in out
    assert "Done: True correct: True reward: 1.0" in out
    assert "Success: True" in out
    assert "steps: 2 reward: 1.0 answer: 52" in out


def test_eval_bfcl_example():
    out = run_example("eval_bfcl.py")
    assert "entries: 11" in out
    assert "simple                    1/7" in out
    assert "irrelevance               4/4" in out
    assert "all entries              5/11" in out
