"""``tooluse chat --code-mode``: the model's program is shown, then each call it made under it;
a call whose tool requires approval is asked about (saying the program called it), and the
program goes on with the answer. The model is a scripted one (``scripted_model_cli.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SCRIPTED = str(HERE / "scripted_model_cli.py")

TOOLS = '''
from tooluse import tool

@tool
def stock(sku: str) -> int:
    """Units in stock.

    Args:
        sku: The item.
    """
    return {"A1": 3, "B2": 0}[sku]

@tool(requires_approval=True)
def reorder(sku: str, units: int) -> str:
    """Order more of an item.

    Args:
        sku: The item.
        units: How many.
    """
    print("RAN reorder", sku, units, flush=True)
    return f"ordered {units} of {sku}"
'''

PROGRAM = """
empty = [s for s in ["A1", "B2"] if await stock(s) == 0]
for sku in empty:
    try:
        print(await reorder(sku, 10))
    except CallDenied:
        print("not ordered:", sku)
"""


def chat(tmp_path: Path, answer: str) -> str:
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS)
    turns = [{"call": "run_python", "arguments": {"code": PROGRAM}}, "Done: {tool}"]
    env = {**os.environ, "SCRIPTED_TURNS": json.dumps(turns), "HOME": str(tmp_path)}
    env["COLUMNS"] = "200"
    done = subprocess.run(
        [sys.executable, SCRIPTED, "chat", "--model", "script:x", "--tools", str(tools)]
        + ["--code-mode", "--no-log"],
        input=f"Reorder what is out of stock\n{answer}\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize(("answer", "ran"), [("y", True), ("n", False)])
def test_chat_in_code_mode_shows_the_program_its_calls_and_asks_for_approval(tmp_path, answer, ran):
    out = chat(tmp_path, answer)
    assert "→ program" in out and 'empty = [s for s in ["A1", "B2"]' in out
    assert 'approve reorder({"sku": "B2", "units": 10}) (called by the program)? [y/n/e]' in out
    assert ("RAN reorder B2 10" in out) is ran
    assert "↳ call stock(sku='A1')" in out and "↳ call stock(sku='B2')" in out
    if ran:
        assert "Done: ordered 10 of B2" in out
    else:
        assert "Done: not ordered: B2" in out
