"""A test policy: a backend that submits answers from a key (optionally slow or sometimes wrong).

Used by the evaluation tests, also inside a subprocess that the resume test kills.
"""

from __future__ import annotations

import itertools
import threading
import time

from tooluse import ScriptedBackend, ToolCall
from tooluse.envs import ARITHMETIC_TASKS

ANSWERS = {task.prompt: str(task.reference) for task in ARITHMETIC_TASKS}


class AnswerKeyBackend(ScriptedBackend):
    """Submits the key's answer for the task in the first user message.

    ``delay`` seconds per request; with ``wrong_every=n`` every n-th request answers "-1".
    """

    def __init__(self, *, delay: float = 0.0, wrong_every: int | None = None) -> None:
        super().__init__([])
        self.delay = delay
        self.wrong_every = wrong_every
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    def generate_with_tools(self, messages, tools=(), params=None, tool_choice="auto"):
        with self._lock:
            number = next(self._count)
        if self.delay:
            time.sleep(self.delay)
        prompt = next(m.content for m in messages if m.role == "user")
        answer = ANSWERS[prompt]
        if self.wrong_every and number % self.wrong_every == 0:
            answer = "-1"
        call = ToolCall(id=f"s{number}", name="submit_answer", arguments={"answer": answer})
        self._responses.append([call])
        return super().generate_with_tools(messages, tools, params, tool_choice)


def make_runner():
    """A runner built inside a worker (for the Ray engine)."""
    from tooluse.envs import ArithmeticEnvironment, TrajectoryRunner

    return TrajectoryRunner(
        environment=ArithmeticEnvironment(tool_types=()), backend=AnswerKeyBackend()
    )
