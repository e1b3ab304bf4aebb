"""The loop, extraction and conversation examples run as scripts and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_weather_time_loop_example():
    out = run_example("loop_weather_time.py")
    assert '[ok] get_weather({\'city\': \'Paris\'}) -> {"city": "Paris", "temperature": 18' in out
    assert "[ok] get_time({'tz': 'Europe/Paris'}) -> 14:05" in out
    assert (
        "[error] get_weather({'city': 'Atlantis'}) -> error: ValueError: no weather station" in out
    )
    assert "stop: final_text, model requests: 2" in out


def test_movie_extraction_example():
    out = run_example("extract_movie.py")
    assert "rating_value: expected number" in out
    assert "'title': 'Avatar: Fire and Ash'" in out
    assert "'rating_value': 7.5" in out


def test_two_participant_conversation_example():
    out = run_example("conversation_two_participants.py")
    lines = out.splitlines()
    assert lines[0] == "solver: 17 * 23 = 391."
    assert "tool calculator({'expression': '17 * 23'}) -> 391" in lines[1]
    assert lines[2] == "critic: Please verify it another way."
    assert "reloaded 3 messages; solver tools: ['calculator']" in out


def test_examples_importable_functions_behave():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import conversation_two_participants as conv_example
        import loop_weather_time as loop_example
    finally:
        sys.path.remove(str(EXAMPLES))
    assert conv_example.calculator("2 * (3 + 4)") == "14"
    assert loop_example.get_weather("Tokyo", "fahrenheit")["temperature"] == 75
    result = loop_example.main()
    assert result.stop_reason.value == "final_text"
