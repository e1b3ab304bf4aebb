"""``ArithmeticEnvironment``: problems with numeric answers, solved with ``python``.

``math:arithmetic`` is procedural (:func:`arithmetic_environment`): integer expressions of
growing depth over numbers too large to do in one's head, task ``i`` generated from seed
``start + i``; its test split is a fixed 50 tasks, its train split as many as asked, from
seeds disjoint from the test seeds (see :mod:`tooluse.envs.splits`). ``math:word_problems``
is the 20 small, hand-written, GSM8K-style problems of :data:`ARITHMETIC_TASKS` (the class's
default tasks); pass ``tasks=`` for your own.
Answers are compared as numbers (``"$12.00"``, ``"#### 12"``, ``"\\boxed{12}"`` and ``"12"``
all read as 12) with a small relative tolerance.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.envs.base import EnvState, StepResult, Task, ToolEnvironment
from tooluse.envs.python_sessions import SessionPool, new_episode_data
from tooluse.envs.rewards import CorrectnessReward, numbers_match, parse_number
from tooluse.envs.splits import check_split, split_indices, split_seed_start
from tooluse.execution.sandbox import PythonSandbox, python_tool
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ARITHMETIC_TASKS",
    "ARITHMETIC_TEST_SIZE",
    "ArithmeticEnvironment",
    "arithmetic_environment",
    "arithmetic_tasks",
    "parse_number",
    "word_problems_environment",
]

#: The fixed size of ``math:arithmetic``'s test split.
ARITHMETIC_TEST_SIZE = 50
#: The deepest expressions (number of operators) of a procedural split.
MAX_DEPTH = 4
ARITHMETIC_PROMPT = "Compute {expression}. Give the exact integer."

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

    name = "math:word_problems"

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


def _expression(rng: random.Random, depth: int) -> str:
    """An integer expression with ``depth`` operators over 3- and 4-digit numbers."""
    text = str(rng.randint(100, 9999))
    for level in range(depth):
        operator = rng.choice(("+", "-", "*"))
        number = str(rng.randint(100, 999) if operator == "*" else rng.randint(100, 9999))
        pair = (text, number) if rng.random() < 0.5 else (number, text)
        text = f"{pair[0]} {operator} {pair[1]}"
        if level < depth - 1:
            text = f"({text})"
    return text


def arithmetic_tasks(*, start: int, size: int) -> tuple[Task, ...]:
    """``size`` procedural tasks, task ``i`` from seed ``start + i``; the depth grows with ``i``
    from 1 to :data:`MAX_DEPTH` operators."""
    tasks = []
    for index in range(size):
        seed = start + index
        depth = 1 + index * MAX_DEPTH // size
        expression = _expression(random.Random(f"arithmetic:{seed}"), depth)
        value = eval(expression, {"__builtins__": {}})  # our own digits and operators only
        tasks.append(
            Task(
                id=f"arithmetic-{seed}",
                prompt=ARITHMETIC_PROMPT.format(expression=expression),
                reference=value,
                metadata={"seed": seed, "depth": depth, "expression": expression},
            )
        )
    return tuple(tasks)


def arithmetic_environment(
    *, split: str | None = None, size: int | None = None, seed: int = 0, **options: Any
) -> ArithmeticEnvironment:
    """``math:arithmetic``: the procedural expressions. ``split="test"`` (also the default, as
    evaluation wants it) is the fixed 50 tasks; ``split="train"`` is ``size`` tasks (default
    1000) from seeds ``seed, seed + 1, ...``, all below the test seeds."""
    split = check_split(split) or "test"
    if split == "test":
        if size not in (None, ARITHMETIC_TEST_SIZE):
            raise ValueError(f"the test split has a fixed {ARITHMETIC_TEST_SIZE} tasks")
        size = ARITHMETIC_TEST_SIZE
    size = 1000 if size is None else size
    if size < 1:
        raise ValueError("size must be >= 1")
    start = split_seed_start(split, seed=seed, size=size)
    environment = ArithmeticEnvironment(arithmetic_tasks(start=start, size=size), **options)
    environment.name = "math:arithmetic"
    return environment


def word_problems_environment(*, split: str | None = None, **options: Any) -> ArithmeticEnvironment:
    """``math:word_problems``: the 20 hand-written problems (a split keeps its share of them)."""
    keep = split_indices([t.id for t in ARITHMETIC_TASKS], split, salt="math:word_problems")
    return ArithmeticEnvironment(tuple(ARITHMETIC_TASKS[i] for i in keep), **options)
