"""``ArithmeticEnvironment``: short word problems with numeric answers, solved with ``python``.

The built-in tasks are small, hand-written, GSM8K-style problems; pass ``tasks=`` for your own.
Answers are compared as numbers (``"$12.00"``, ``"#### 12"``, ``"\\boxed{12}"`` and ``"12"``
all read as 12) with a small relative tolerance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.envs.base import EnvState, StepResult, Task, ToolEnvironment
from tooluse.envs.python_sessions import SessionPool, new_episode_data
from tooluse.envs.rewards import CorrectnessReward, numbers_match, parse_number
from tooluse.execution.sandbox import PythonSandbox, python_tool
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["ARITHMETIC_TASKS", "ArithmeticEnvironment", "parse_number"]

SESSION_NOTE = " Variables, functions and imports are kept between calls within one task."

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
    Task(id="product", prompt="What is 48 times 27?", reference=1296),
    Task(
        id="change",
        prompt="Tom pays for a $6.75 sandwich with a $20 bill. How many dollars of change does he get?",
        reference=13.25,
    ),
    Task(
        id="rectangle",
        prompt="A rectangle is 14 metres long and 9 metres wide. What is its area in square metres?",
        reference=126,
    ),
    Task(
        id="minutes",
        prompt="How many minutes are there in 3 days?",
        reference=4320,
    ),
    Task(
        id="eggs",
        prompt=(
            "A farm collects 156 eggs and packs them in boxes of 12. How many full boxes does it "
            "fill?"
        ),
        reference=13,
    ),
    Task(
        id="discount",
        prompt="A jacket costs $240 and is sold at 35% off. What is the sale price in dollars?",
        reference=156,
    ),
    Task(
        id="squares",
        prompt="What is the sum of the squares of the whole numbers from 1 to 10?",
        reference=385,
    ),
    Task(
        id="savings",
        prompt=(
            "Ana saves $45 a week. After 12 weeks she spends $130 on a bike lock and helmet. "
            "How many dollars has she left?"
        ),
        reference=410,
    ),
    Task(
        id="factorial",
        prompt="What is 10 factorial (10!)?",
        reference=3628800,
    ),
    Task(
        id="fuel",
        prompt=(
            "A car uses 6.5 litres of fuel per 100 km. How many litres does it use for a 340 km "
            "trip?"
        ),
        reference=22.1,
    ),
    Task(
        id="classes",
        prompt=(
            "A school has 7 classes of 28 pupils and 3 classes of 31 pupils. How many pupils "
            "are there in all?"
        ),
        reference=289,
    ),
    Task(
        id="remainder",
        prompt="What is the remainder when 1000 is divided by 37?",
        reference=1,
    ),
)


class ArithmeticEnvironment(ToolEnvironment):
    """Word problems with numeric answers; tools: the sandboxed ``python`` (optional) and
    ``submit_answer``.

    With ``python_session=True`` (the default) each episode gets its own sandbox session, so
    variables persist between its ``python`` calls (never across episodes); the code run so far
    is part of the state, which therefore still saves, restores and branches (see
    :mod:`tooluse.envs.python_sessions`). ``python_session=False`` runs each call in a fresh
    interpreter.
    """

    name = "math:arithmetic"

    def __init__(
        self,
        tasks: Sequence[Task] = ARITHMETIC_TASKS,
        *,
        tool_types: Sequence[str] = ("python",),
        rewards: Sequence[Any] = (CorrectnessReward(),),
        max_steps: int = 10,
        python_timeout: float = 10.0,
        python_session: bool = True,
        tolerance: float = 1e-6,
    ) -> None:
        tools: list[ToolDefinition] = []
        for kind in tool_types:
            if kind != "python":
                raise ValueError(f"unknown tool type {kind!r}; this environment offers: python")
            tool = python_tool(timeout=python_timeout)
            if python_session:
                tool = dataclasses.replace(tool, description=tool.description + SESSION_NOTE)
            tools.append(tool)
        super().__init__(tasks, tools=tools, rewards=rewards, max_steps=max_steps)
        self.tolerance = tolerance
        self._sessions = (
            SessionPool(PythonSandbox(timeout=python_timeout), timeout=python_timeout)
            if python_session and tools
            else None
        )

    def check_answer(self, answer: Any, task: Task) -> bool:
        return numbers_match(parse_number(answer), parse_number(task.reference), self.tolerance)

    def answer_from_text(self, text: str) -> Any:
        return text.strip()

    # -- one sandbox session per episode ---------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        state, info = super().reset(seed=seed, options=options)
        if self._sessions is not None:
            state = dataclasses.replace(state, data=new_episode_data())
        return state, info

    def _execute(
        self, state: EnvState, calls: Sequence[ToolCall]
    ) -> tuple[Sequence[ToolResult], dict[str, Any]]:
        if self._sessions is None or not calls:
            return super()._execute(state, calls)
        return self._sessions.run(state.data, calls)

    async def _aexecute(
        self, state: EnvState, calls: Sequence[ToolCall]
    ) -> tuple[Sequence[ToolResult], dict[str, Any]]:
        if self._sessions is None or not calls:
            return await super()._aexecute(state, calls)
        return await self._sessions.arun(state.data, calls)

    def _ended(self, result: StepResult) -> StepResult:
        if self._sessions is not None and result.done:
            self._sessions.end(result.state.data)
        return result

    def close(self) -> None:
        if self._sessions is not None:
            self._sessions.close()
        super().close()
