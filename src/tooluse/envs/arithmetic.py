"""``ArithmeticEnvironment``: short word problems with numeric answers, solved with ``python``.

The built-in tasks are small, hand-written, GSM8K-style problems; pass ``tasks=`` for your own.
Answers are compared as numbers (``"$12.00"``, ``"#### 12"``, ``"\\boxed{12}"`` and ``"12"``
all read as 12) with a small relative tolerance.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from tooluse.envs.base import Task, ToolEnvironment
from tooluse.envs.rewards import CorrectnessReward
from tooluse.execution.sandbox import python_tool
from tooluse.tools.definition import ToolDefinition

__all__ = ["ARITHMETIC_TASKS", "ArithmeticEnvironment", "parse_number"]

ARITHMETIC_TASKS: tuple[Task, ...] = (
    Task(id="tip", prompt="What is 15% of 80?", reference=12),
    Task(
        id="apples",
        prompt=(
            "Mia has 23 apples. She gives 7 to her brother and then buys 3 bags with 12 apples "
            "each. How many apples does she have now?"
        ),
        reference=52,
    ),
    Task(
        id="train",
        prompt="A train travels at 84 km per hour for 2.5 hours. How many kilometres does it travel?",
        reference=210,
    ),
    Task(
        id="tickets",
        prompt=(
            "Concert tickets cost $18 each and there is a $4 booking fee per order. Sam orders "
            "5 tickets in one order. How many dollars does he pay in total?"
        ),
        reference=94,
    ),
    Task(
        id="power",
        prompt="What is 17 to the power of 5?",
        reference=1419857,
    ),
    Task(
        id="average",
        prompt="The test scores were 72, 85, 90, 64 and 99. What is their average?",
        reference=82,
    ),
    Task(
        id="pages",
        prompt=(
            "A book has 356 pages. Lena reads 28 pages a day. After 9 days, how many pages are "
            "left to read?"
        ),
        reference=104,
    ),
    Task(
        id="primes",
        prompt="What is the sum of all prime numbers below 50?",
        reference=328,
    ),
)

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")


def parse_number(value: Any) -> float | None:
    """The number an answer states (the last one in text; ``#### N`` and ``\\boxed{N}`` win)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value)
    for marker in (r"####\s*([^\n]+)", r"\\boxed\{([^}]*)\}"):
        found = re.search(marker, text)
        if found:
            text = found.group(1)
            break
    numbers = _NUMBER.findall(text)
    if not numbers:
        return None
    try:
        return float(numbers[-1].replace(",", ""))
    except ValueError:
        return None


class ArithmeticEnvironment(ToolEnvironment):
    """Word problems with numeric answers; tools: the sandboxed ``python`` (optional) and
    ``submit_answer``."""

    name = "math:arithmetic"

    def __init__(
        self,
        tasks: Sequence[Task] = ARITHMETIC_TASKS,
        *,
        tool_types: Sequence[str] = ("python",),
        rewards: Sequence[Any] = (CorrectnessReward(),),
        max_steps: int = 10,
        python_timeout: float = 10.0,
        tolerance: float = 1e-6,
    ) -> None:
        tools: list[ToolDefinition] = []
        for kind in tool_types:
            if kind != "python":
                raise ValueError(f"unknown tool type {kind!r}; this environment offers: python")
            tools.append(python_tool(timeout=python_timeout))
        super().__init__(tasks, tools=tools, rewards=rewards, max_steps=max_steps)
        self.tolerance = tolerance

    def check_answer(self, answer: Any, task: Task) -> bool:
        got = parse_number(answer)
        want = parse_number(task.reference)
        if got is None or want is None:
            return False
        return math.isclose(got, want, rel_tol=self.tolerance, abs_tol=self.tolerance)

    def answer_from_text(self, text: str) -> Any:
        return text.strip()
