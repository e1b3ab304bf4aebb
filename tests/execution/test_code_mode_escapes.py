"""The escape corpus of code mode (``benchmarks/code_mode_escapes.py``) as a test: every attempt
is contained or refused with a clear error, no output holds the host's secrets, and the run goes
on to the model's answer after all of them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tooluse import StopReason

pytestmark = pytest.mark.slow

CORPUS_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "code_mode_escapes.py"


def load_corpus():
    spec = importlib.util.spec_from_file_location("code_mode_escapes", CORPUS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["code_mode_escapes"] = module
    spec.loader.exec_module(module)
    return module


def test_every_escape_is_contained_or_refused_and_the_run_goes_on():
    corpus = load_corpus()
    outcomes, result = corpus.run_corpus()
    failed = {o.name: o.output[:400] for o in outcomes if not o.passed}
    assert not failed, failed
    assert len(outcomes) == len(corpus.CORPUS) >= 20
    assert result.stop_reason is StopReason.FINAL_TEXT
    assert result.final_text == "I tried everything."
    everything = result.state.to_json() if result.state is not None else ""
    everything += "".join(m.content for m in result.messages)
    everything += "".join(t.output for t in result.trail)
    assert corpus.SECRET not in everything
