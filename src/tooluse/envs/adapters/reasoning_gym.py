"""``adapter="reasoning_gym"``: the procedural tasks of reasoning-gym as a tool environment.

::

    env = environment_registry.get(name="basic_arithmetic", adapter="reasoning_gym",
                                   tool_types=("python",), size=20, seed=0)
    state, info = env.reset(options={"task_index": 0})
    state.observation.prompt                     # 'Calculate 5 - 3 - 6.'

``reasoning_gym.create_dataset(name, size=size, seed=seed)`` generates the tasks offline (the
same name, size and seed give the same tasks; ``config={...}`` passes the dataset's own
settings, such as its difficulty). Task ``i`` is entry ``i``: its ``question`` is the prompt and
the whole entry (question, answer, metadata) is the task's reference, because the dataset's
grader reads it. The tools are the sandboxed ``python`` (from ``tool_types``; one session per
episode, as in :class:`~tooluse.envs.ArithmeticEnvironment`) and the terminal ``submit_answer``;
a final text reply is read as the answer too.

==========================  =======  ===========================================================
reward                      type     value
==========================  =======  ===========================================================
ReasoningGymScoreReward     outcome  ``dataset.score_answer(answer, entry)``, the dataset's own
                                     grade in [0, 1] (0 without an answer or if grading fails)
==========================  =======  ===========================================================

The validity and efficiency monitors (weight 0) are added as in every environment. The episode
counts as correct (``info["correct"]``, the trajectory's ``success``) when the score is 1.

This is the only module that imports ``reasoning_gym`` (``pip install 'tooluse[reasoning-gym]'``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from tooluse.envs.arithmetic import ArithmeticEnvironment
from tooluse.envs.base import Task, ToolEnvironment
from tooluse.envs.rewards import RewardSignal, RewardType, StepContext, WeightedReward
from tooluse.envs.splits import split_seed_start
from tooluse.errors import MissingDependencyError

__all__ = ["ReasoningGymEnvironment", "ReasoningGymScoreReward", "build", "dataset_names"]


def _reasoning_gym() -> Any:
    try:
        import reasoning_gym
    except ImportError as exc:  # the extra is missing: say which one
        raise MissingDependencyError("reasoning-gym", "reasoning-gym") from exc
    return reasoning_gym


def dataset_names() -> tuple[str, ...]:
    """The names of reasoning-gym's registered datasets."""
    return tuple(sorted(_reasoning_gym().factory.DATASETS))


@dataclass(frozen=True, kw_only=True)
class ReasoningGymScoreReward(WeightedReward):
    """The dataset's own grade of the final answer: ``score(answer, entry)`` in [0, 1].

    Gives a signal only on the step that ends the episode (0.0 when it ended without an
    answer, e.g. truncated).
    """

    score: Callable[[Any, Any], float]
    name: str = "reasoning_gym_score"
    reward_type: ClassVar[RewardType] = RewardType.OUTCOME

    def compute(self, context: StepContext) -> RewardSignal | None:
        if not context.done:
            return None
        return self.signal(
            self.score(context.answer, context.reference), {"answer": context.answer}
        )


class ReasoningGymEnvironment(ArithmeticEnvironment):
    """One reasoning-gym dataset (``size`` entries from ``seed``) as a tool environment."""

    def __init__(  # noqa: PLR0913 -- keyword-only options of the registry
        self,
        dataset_name: str,
        *,
        size: int = 100,
        seed: int = 0,
        config: Mapping[str, Any] | None = None,
        tool_types: Sequence[str] = ("python",),
        rewards: Sequence[Any] | None = None,
        max_steps: int = 10,
        python_timeout: float = 10.0,
        python_session: bool = True,
        split: str | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        # reasoning-gym draws entry i from seed + i, so a split is a range of dataset seeds.
        seed = split_seed_start(split, seed=seed, size=size)
        rg = _reasoning_gym()
        known = rg.factory.DATASETS
        if dataset_name not in known:
            close = difflib.get_close_matches(dataset_name, list(known), n=5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            some = ", ".join(sorted(known)[:12])
            raise ValueError(
                f"unknown reasoning-gym dataset {dataset_name!r}{hint} "
                f"({len(known)} known, e.g. {some}; all: "
                "tooluse.envs.adapters.reasoning_gym.dataset_names())"
            )
        self.dataset = rg.create_dataset(dataset_name, size=size, seed=seed, **dict(config or {}))
        self.dataset_name = dataset_name
        self.name = f"reasoning_gym:{dataset_name}"
        tasks = []
        for index in range(size):
            entry = self.dataset[index]
            tasks.append(
                Task(
                    id=f"{dataset_name}-{seed}-{index}",
                    prompt=str(entry["question"]),
                    reference=entry,
                    metadata={"dataset": dataset_name, "seed": seed, "index": index},
                )
            )
        super().__init__(
            tasks,
            tool_types=tool_types,
            rewards=(ReasoningGymScoreReward(score=self.score),) if rewards is None else rewards,
            max_steps=max_steps,
            python_timeout=python_timeout,
            python_session=python_session,
        )

    def score(self, answer: Any, entry: Any) -> float:
        """The dataset's grade of ``answer`` for ``entry`` (0.0 for no answer or a grader error)."""
        if answer is None or (isinstance(answer, str) and not answer.strip()):
            return 0.0
        try:
            value = float(self.dataset.score_answer(str(answer), entry))
        except Exception:  # a grader that chokes on a malformed answer grades it wrong
            return 0.0
        return min(1.0, max(0.0, value))

    def check_answer(self, answer: Any, task: Task) -> bool:
        return self.score(answer, task.reference) >= 1.0


def build(
    name: str, *, tool_types: tuple[str, ...] = ("python",), **options: Any
) -> ToolEnvironment:
    """The adapter: ``environment_registry.get(name=..., adapter="reasoning_gym", ...)``.

    Options: ``size`` (default 100), ``seed`` (default 0), ``split`` (``"test"`` starts at the
    test seeds, ``"train"`` checks that ``seed..seed + size`` stays below them), ``config`` (the
    dataset's settings),
    ``max_steps``, ``python_timeout``, ``python_session``, ``rewards``.
    """
    return ReasoningGymEnvironment(name, tool_types=tool_types, **options)
