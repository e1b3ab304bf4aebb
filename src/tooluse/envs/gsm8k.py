"""``math:gsm8k``: GSM8K word problems from a local JSONL file, solved with ``python``.

::

    env = environment_registry.get(name="math:gsm8k", data_path="gsm8k_test.jsonl",
                                   tool_types=("python",))

Each line of the file is ``{"question": ..., "answer": ...}`` with the answer ending in
``#### N`` (the format of the GSM8K release); the number after ``####`` is the reference. The
tools are the sandboxed ``python`` and the terminal ``submit_answer``; the answer is graded as
a number with a relative tolerance (:class:`~tooluse.envs.rewards.NumericCorrectnessReward`).
A missing file, a line that is not JSON, or a line without a question or a ``#### N`` answer
raises ``ValueError`` naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooluse.envs.arithmetic import ArithmeticEnvironment
from tooluse.envs.base import Task
from tooluse.envs.rewards import NumericCorrectnessReward, parse_number
from tooluse.envs.splits import split_indices

__all__ = ["GSM8KEnvironment", "load_gsm8k"]


def load_gsm8k(path: str | Path, *, limit: int | None = None) -> tuple[Task, ...]:
    """The tasks of a GSM8K-format JSONL file (``ValueError`` naming the line on bad input)."""
    source = Path(path)
    if not source.is_file():
        raise ValueError(f"GSM8K data file not found: {source}")
    tasks: list[Task] = []
    with source.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{source}, line {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{where}: expected an object with 'question' and 'answer'")
            question, answer = row.get("question"), row.get("answer")
            if not isinstance(question, str) or not question.strip():
                raise ValueError(f"{where}: missing 'question'")
            if not isinstance(answer, (str, int, float)) or isinstance(answer, bool):
                raise ValueError(f"{where}: missing 'answer'")
            if isinstance(answer, str) and "####" not in answer:
                raise ValueError(f"{where}: the answer does not end with '#### <number>'")
            reference = parse_number(answer)
            if reference is None:
                raise ValueError(f"{where}: no number after '####' in the answer")
            tasks.append(
                Task(
                    id=str(row.get("id", f"gsm8k-{len(tasks)}")),
                    prompt=question.strip(),
                    reference=int(reference) if reference.is_integer() else reference,
                    metadata={"line": number, "solution": answer},
                )
            )
            if limit is not None and len(tasks) >= limit:
                break
    if not tasks:
        raise ValueError(f"{source}: no tasks in the file")
    return tuple(tasks)


class GSM8KEnvironment(ArithmeticEnvironment):
    """GSM8K problems from ``data_path``; tools: sandboxed ``python`` and ``submit_answer``."""

    name = "math:gsm8k"

    def __init__(  # noqa: PLR0913 -- keyword-only options of the registry
        self,
        data_path: str | Path | None = None,
        *,
        tool_types: Sequence[str] = ("python",),
        rewards: Sequence[Any] | None = None,
        max_steps: int = 10,
        python_timeout: float = 10.0,
        python_session: bool = True,
        tolerance: float = 1e-6,
        limit: int | None = None,
        split: str | None = None,
    ) -> None:
        if data_path is None:
            raise ValueError(
                "math:gsm8k needs data_path=... (a GSM8K-format JSONL file with 'question' and "
                "'answer' ending in '#### N'); math:arithmetic works offline without data"
            )
        tasks = load_gsm8k(data_path, limit=limit)
        keep = split_indices([t.id for t in tasks], split, salt="math:gsm8k")
        if not keep:
            raise ValueError(f"{data_path}: no tasks in the {split} split")
        super().__init__(
            tuple(tasks[i] for i in keep),
            tool_types=tool_types,
            rewards=(NumericCorrectnessReward(tolerance=tolerance),)
            if rewards is None
            else rewards,
            max_steps=max_steps,
            python_timeout=python_timeout,
            python_session=python_session,
            tolerance=tolerance,
        )
        self.data_path = str(data_path)
