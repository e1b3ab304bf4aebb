"""``tooluse chat --mcp FILE``: a real MCP server's tools in the chat; its questions
(elicitation) and requests to use the model (sampling) are asked on the terminal, and declined
with a message when there is none; its progress is shown.

The chat's model is a scripted one (``scripted_model_cli.py``), so each run is deterministic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
SCRIPTED = str(HERE / "scripted_model_cli.py")
RICH = str(HERE.parent / "execution" / "mcp_servers" / "rich_server.py")


def servers(tmp_path: Path) -> str:
    path = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [RICH], "protocol": "2025-11-25"}
    path.write_text(json.dumps({"mcpServers": {"rich": entry}}))
    return str(path)


def environment(tmp_path: Path, turns: list) -> dict[str, str]:
    env = {**os.environ, "SCRIPTED_TURNS": json.dumps(turns), "HOME": str(tmp_path)}
    env["COLUMNS"] = "200"
    return env


def piped_chat(tmp_path: Path, turns: list, message: str) -> str:
    done = subprocess.run(
        [sys.executable, SCRIPTED, "chat", "--model", "script:x", "--mcp", servers(tmp_path)]
        + ["--no-log"],
        input=f"{message}\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=environment(tmp_path, turns),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_with_input_piped_in_a_question_is_declined_with_a_message(tmp_path):
    output = piped_chat(tmp_path, [{"call": "book"}, "Result: {tool}"], "Book me a seat.")
    assert "rich asks: Who is travelling, and how many seats?" in output
    assert "declined: there is no terminal to answer on" in output
    assert "Result: no booking (decline)" in output


def test_with_input_piped_in_sampling_is_refused_with_a_message(tmp_path):
    turns = [{"call": "ask_model", "arguments": {"question": "Capital of Peru?"}}, "R: {tool}"]
    output = piped_chat(tmp_path, turns, "Ask the server.")
    assert "rich wants to use the model (up to 64 tokens): Capital of Peru?" in output
    assert "refused: there is no terminal to ask on" in output
    assert "the client refused the sampling request" in output


def test_progress_is_shown_as_the_call_runs(tmp_path):
    turns = [{"call": "steps", "arguments": {"count": 2}}, "Result: {tool}"]
    output = piped_chat(tmp_path, turns, "Run the steps.")
    assert "… steps: 1/2 step 1 of 2" in output
    assert "… steps: 2/2 step 2 of 2" in output
    assert "Result: 2 steps done" in output


def spawn(tmp_path: Path, turns: list):
    child = pexpect.spawn(
        sys.executable,
        [SCRIPTED, "chat", "--model", "script:x", "--mcp", servers(tmp_path), "--no-log"],
        env=environment(tmp_path, turns),
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 200),
    )
    child.expect("you> ")
    return child


def test_on_a_terminal_the_user_fills_in_the_form(tmp_path):
    child = spawn(tmp_path, [{"call": "book"}, "Result: {tool}"])
    child.sendline("Book me a seat.")
    child.expect_exact("Who is travelling, and how many seats?")
    child.expect_exact("answer it? [Y/n] ")
    child.sendline("y")
    child.expect_exact("name (string)")
    child.sendline("Ann")
    child.expect_exact("seats (integer)")
    child.sendline("two")
    child.expect_exact("not an integer: two")
    child.expect_exact("seats (integer)")
    child.sendline("2")
    child.expect_exact("window (boolean, optional)")
    child.sendline("y")
    child.expect_exact("Result: booked 2 for Ann by the window")
    child.expect("you> ")
    child.sendline("")
    child.expect(pexpect.EOF)


def test_on_a_terminal_the_user_allows_sampling_with_the_chats_model(tmp_path):
    turns = [
        {"call": "ask_model", "arguments": {"question": "Capital of Peru?"}},
        "Lima.",  # the chat's model answers the server's sampling request
        "Result: {tool}",
    ]
    child = spawn(tmp_path, turns)
    child.sendline("Ask the server.")
    child.expect_exact("allow it? [y/N] ")
    child.sendline("y")
    child.expect_exact("Result: script said: Lima.")
    child.expect("you> ")
    child.sendline("")
    child.expect(pexpect.EOF)
