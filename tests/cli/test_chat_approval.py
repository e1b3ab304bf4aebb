"""``tooluse chat`` asks before a call of a tool that requires approval: the real embedded
model calls the tool, the user answers y (it runs) or n (the model is told it was denied)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TOOLS = '''
from tooluse import tool

@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file from the disk.

    Args:
        path: The file to delete, e.g. notes.txt.
    """
    print("RAN delete_file", path, flush=True)
    return f"deleted {path}"
'''


def chat(tmp_path: Path, answer: str) -> str:
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS)
    command = Path(sys.executable).with_name("tooluse")
    done = subprocess.run(
        [str(command), "chat", "--model", "local", "--tools", str(tools), "--no-log"],
        input=f"Delete the file notes.txt\n{answer}\n",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("answer", "ran"), [("y", True), ("n", False)])
def test_chat_asks_before_a_call_that_needs_approval(tmp_path, answer, ran):
    out = chat(tmp_path, answer)
    assert 'approve delete_file({"path": "notes.txt"})? [y/n/e]' in out
    assert ("RAN delete_file notes.txt" in out) is ran
    if ran:
        assert "← result deleted notes.txt" in out
    else:
        assert "← denied delete_file: the user said no" in out
