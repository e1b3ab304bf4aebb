"""``tooluse`` with one more model prefix, ``script:``: turns read from ``SCRIPTED_TURNS``.

``SCRIPTED_TURNS`` is a JSON list; each turn is ``{"call": NAME, "arguments": {...}}`` (the
model calls that tool) or a text, in which ``{tool}`` becomes the last tool result's text (so a
test sees what a tool returned in the chat's answer).
"""

from __future__ import annotations

import json
import os
import sys

from tooluse.cli.app import main
from tooluse.messages import ToolCall
from tooluse.providers.base import BaseBackend, GenerationResult
from tooluse.providers.model_registry import register_model_prefix


class EnvScriptBackend(BaseBackend):
    def __init__(self) -> None:
        self.turns = json.loads(os.environ["SCRIPTED_TURNS"])
        self.name = "script"

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        turn = self.turns.pop(0) if self.turns else "(no more turns)"
        if isinstance(turn, dict):
            call = ToolCall(name=turn["call"], arguments=turn.get("arguments", {}))
            return GenerationResult(tool_calls=(call,), finish_reason="tool_calls")
        outputs = [m.content for m in messages if m.role == "tool"]
        text = turn.replace("{tool}", outputs[-1] if outputs else "")
        return GenerationResult(text=text, finish_reason="stop")


register_model_prefix("script", lambda rest, **options: EnvScriptBackend(), replace=True)

if __name__ == "__main__":
    sys.argv[0] = "tooluse"
    main()
