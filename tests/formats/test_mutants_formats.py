"""Tests aimed at format mutants the other format tests let through: streamed JSON arguments
arrive exactly once at every chunk size, and Seed-OSS's tool prompt uses its own markers."""

from __future__ import annotations

import json

import pytest

from tooluse.events import ArgumentsDelta
from tooluse.formats import get_parser

from .helpers import TOOLS, chunks

ARGS = {"query": 'tea, {not} "json" [x]', "filters": {"k": [1, 2], "on": True}, "tags": ["x"]}


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_hermes_streamed_arguments_arrive_exactly_once(size):
    text = f'Looking.<tool_call>{{"name": "search", "arguments": {json.dumps(ARGS)}}}</tool_call>'
    stream = get_parser("hermes").stream(TOOLS)
    events = [e for piece in chunks(text, size) for e in stream.feed(piece)]
    events += stream.close()
    pieces = [e.text for e in events if isinstance(e, ArgumentsDelta)]
    assert json.loads("".join(pieces)) == ARGS


def test_seed_oss_tool_prompt_uses_its_own_markers():
    parser = get_parser("seed_oss")
    prompt = parser.format_tools(TOOLS)
    assert "<seed:tool_call>" in prompt and "</seed:tool_call>" in prompt
    assert "<tool_call>" not in prompt.replace("<seed:tool_call>", "")
    assert "</tool_call>" not in prompt.replace("</seed:tool_call>", "")
