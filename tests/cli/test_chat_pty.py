"""``tooluse chat`` in a real pseudo-terminal on the embedded model: text streams, Ctrl-C stops
an answer and the chat goes on, a second Ctrl-C at the prompt quits, the tool-round limit is
shown, and every turn is in the run log."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect
import pytest

pytestmark = pytest.mark.slow

TOOLS = '''
from tooluse import tool

@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city.

    Args:
        city: City name, e.g. Paris.
    """
    return {"city": city, "temperature": 17, "unit": "celsius"}
'''


def spawn(tmp_path: Path, *args: str):
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS)
    command = Path(sys.executable).with_name("tooluse")
    env = {**os.environ, "TOOLUSE_LOG_PATH": str(tmp_path / "logs.db"), "HOME": str(tmp_path)}
    env["COLUMNS"] = "200"
    child = pexpect.spawn(
        str(command),
        ["chat", "--model", "local", "--tools", str(tools), *args],
        env=env,
        encoding="utf-8",
        timeout=240,
        dimensions=(40, 200),
    )
    child.expect("you> ")
    return child


def test_text_streams_and_ctrl_c_interrupts_then_quits(tmp_path):
    child = spawn(tmp_path, "--max-tokens", "300")
    child.sendline("Tell me a long story about a dragon and a knight.")
    child.expect("assistant>")
    # the answer arrives in pieces while it is generated
    pieces = []
    deadline = time.monotonic() + 120
    while len(pieces) < 3 and time.monotonic() < deadline:
        try:
            pieces.append(child.read_nonblocking(size=1000, timeout=5))
        except pexpect.TIMEOUT:
            continue
    assert len(pieces) >= 3, pieces
    child.sendintr()  # Ctrl-C during generation
    child.expect("interrupted")
    child.expect("you> ")
    child.sendintr()  # Ctrl-C at the prompt quits
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_round_limit_is_shown_and_turns_are_logged(tmp_path):
    child = spawn(tmp_path, "--max-tool-iters", "0", "--max-tokens", "64")
    child.sendline("What's the weather in Paris?")
    # the model asks for the tool, which the limit of 0 rounds does not allow
    child.expect(r"the tool-round limit was reached")
    child.expect("you> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    from tooluse.loop.run_log import RunLog

    entries = RunLog(tmp_path / "logs.db").entries()
    assert len(entries) == 1
    assert entries[0].prompt == "What's the weather in Paris?"
    assert entries[0].stop_reason == "max_tool_iters"
    assert entries[0].source == "library" and entries[0].model == "local"
    assert entries[0].tools == ("get_weather",)
