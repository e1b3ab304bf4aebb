"""``tooluse`` with one more model prefix, for interrupting runs: ``slow:FAST:SECONDS:MODE``.

The first FAST turns answer at once; every later turn is a blocking loop of "tokens" lasting
SECONDS, on the engine's worker thread like the local model's token loop. With MODE ``check``
it stops between tokens when a stop is requested (as the local model does); with ``ignore``
it never does (a generation stuck in native code). ``SLOW_MODEL_FAST`` overrides FAST.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from tooluse.cli.app import main
from tooluse.interrupts import GenerationInterrupted, stop_requested
from tooluse.providers.base import BaseBackend, GenerationResult
from tooluse.providers.model_registry import register_model_prefix


class SlowBackend(BaseBackend):
    def __init__(self, fast: int, seconds: float, mode: str) -> None:
        self.fast, self.seconds, self.mode = fast, seconds, mode
        self.turns = 0
        self.lock = threading.Lock()

    def generate(self, messages, tools=(), params=None, tool_choice="auto"):
        with self.lock:
            self.turns += 1
            turn = self.turns
        if turn > self.fast:
            end = time.monotonic() + self.seconds
            while time.monotonic() < end:
                if self.mode == "check" and stop_requested():
                    raise GenerationInterrupted("stopped between tokens")
                time.sleep(0.01)
        return GenerationResult(text=f"answer {turn}", finish_reason="stop")

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        return self.generate(messages, tools, params, tool_choice)


def make(rest: str, **options: object) -> SlowBackend:
    fast, seconds, mode = rest.split(":")
    # A rerun under the same model name (BFCL run directories check it) can be made all fast.
    fast = os.environ.get("SLOW_MODEL_FAST", fast)
    return SlowBackend(int(fast), float(seconds), mode)


register_model_prefix("slow", make, replace=True)

if __name__ == "__main__":
    sys.argv[0] = "tooluse"
    main()
