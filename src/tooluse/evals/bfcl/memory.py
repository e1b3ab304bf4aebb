"""BFCL v4's memory categories as tool environments: ``bfcl:memory_kv``, ``bfcl:memory_rec_sum``
and ``bfcl:memory_vector``.

::

    env = environment_registry.get(name="bfcl:memory_kv")
    runner = TrajectoryRunner(environment=env, backend=backend)
    env.prepare(runner)                  # the prerequisite conversations fill the memory
    trajectory = runner.run_trajectory(0)   # "What is my first name?", scored on the reply

BFCL's memory flow, followed step by step. Each of five scenarios (``customer``, ``student``...)
has prerequisite conversations: several user turns telling the assistant about themselves, with
BFCL's memory class of the category's backend as the tools (key-value, recursive summary or
vector store). The conversations run in order, each starting from the memory the previous one
left (its core memory shown in the system prompt), and each saves the memory when it ends
(BFCL's own snapshot files, in ``memory_dir``). Then every question of the scenario starts from
that saved memory, with the memory instructions and BFCL's answer-format prompt as the system
prompt, and only its final reply is scored (BFCL's ``agentic_checker``; see
:mod:`tooluse.evals.bfcl.agentic`). The prerequisite conversations are not scored.

The questions are the environment's tasks. :meth:`BFCLMemoryEnvironment.prepare` plays the
prerequisite conversations the chosen questions need, with the runner's model, and skips those
already played into ``memory_dir``; ``run_evaluation`` (``tooluse eval env``) calls it first,
with ``memory_dir`` in the output folder, so a rerun resumes. A question whose scenario was not
prepared is refused with an error saying so.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooluse.envs.splits import split_indices
from tooluse.evals.bfcl.agentic import (
    AgenticEntry,
    AgenticEnvironment,
    agentic_format_prompt,
    bfcl_prompts,
    load_bfcl_rows,
)
from tooluse.evals.bfcl.memory_backends import (
    MEMORY_BACKENDS,
    check_memory_backend,
    memory_class_name,
)
from tooluse.evals.bfcl.world import MultiTurnEntry, World, function_docs

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tooluse.envs.trajectory import TrajectoryRunner

__all__ = [
    "MEMORY_CATEGORIES",
    "BFCLMemoryEnvironment",
    "BFCLMemoryPrerequisites",
    "MemoryWorld",
    "load_memory_category",
    "memory_system_prompt",
]

MEMORY_CATEGORIES = tuple(f"memory_{backend}" for backend in MEMORY_BACKENDS)
#: Where played prerequisite conversations are recorded, in the folder given to ``prepare``.
PREREQUISITES_FILE = "prerequisites.jsonl"


def _backend_of(category: str) -> str:
    if category not in MEMORY_CATEGORIES:
        raise ValueError(
            f"unknown BFCL memory category {category!r}; known: {', '.join(MEMORY_CATEGORIES)}"
        )
    return category.removeprefix("memory_")


@lru_cache(maxsize=4)
def load_memory_category(
    category: str,
) -> tuple[tuple[AgenticEntry, ...], tuple[AgenticEntry, ...]]:
    """The questions and the prerequisite conversations of one memory category, with BFCL's
    ids (``memory_kv_0-customer-0``, ``memory_kv_prereq_0-customer-0``), in BFCL's order."""
    backend = _backend_of(category)
    docs = tuple(function_docs((memory_class_name(backend),)))
    rows = load_bfcl_rows("BFCL_v4_memory.json")
    answers = load_bfcl_rows("possible_answer/BFCL_v4_memory.json")
    truth = {row["id"]: tuple(str(a) for a in row["ground_truth"]) for row in answers}
    questions = []
    for row in rows:
        if row["id"] not in truth:
            raise ValueError(f"memory question {row['id']!r} has no answer in the answer file")
        questions.append(_entry(row, category, docs, truth[row["id"]]))
    scenarios = list(dict.fromkeys(row["scenario"] for row in rows))
    prerequisites = [
        _entry(row, category, docs, ())
        for scenario in scenarios
        for row in load_bfcl_rows(f"memory_prereq_conversation/memory_{scenario}.json")
    ]
    return tuple(questions), tuple(prerequisites)


def _entry(
    row: Mapping[str, Any],
    category: str,
    docs: tuple[dict[str, Any], ...],
    answers: tuple[str, ...],
) -> AgenticEntry:
    turns = tuple(
        "\n".join(str(m.get("content", "")) for m in turn if m.get("role") == "user")
        for turn in row["question"]
    )
    return AgenticEntry(
        id=str(row["id"]).replace("memory", category),
        category=category,
        turns=turns,
        possible_answers=answers,
        functions=docs,
        scenario=str(row["scenario"]),
    )


def memory_system_prompt(category: str, scenario: str, memory_content: str) -> str:
    """BFCL's memory instructions for ``scenario`` with the memory shown to the model (the
    recursive-summary backend has one memory, the others a core and an archival memory)."""
    prompts = bfcl_prompts()
    template = (
        prompts.MEMORY_BACKEND_INSTRUCTION_UNIFIED
        if category == "memory_rec_sum"
        else prompts.MEMORY_BACKEND_INSTRUCTION_CORE_ARCHIVAL
    )
    return str(
        template.format(
            scenario_setting=prompts.MEMORY_AGENT_SETTINGS[scenario],
            memory_content=memory_content,
        )
    )


class MemoryWorld:
    """One BFCL memory instance for one entry, loaded from the snapshots in ``memory_dir``
    (BFCL's own loading: a first conversation starts empty, anything else from the memory the
    last finished conversation saved)."""

    stateful = True

    def __init__(self, entry: AgenticEntry, memory_dir: Path) -> None:
        self.class_name = memory_class_name(_backend_of(entry.category))
        config = {
            "model_result_dir": memory_dir,
            "scenario": entry.scenario,
            "test_id": entry.id,
            "test_category": entry.category,
        }
        self._world = World(
            MultiTurnEntry(
                id=entry.id,
                category=entry.category,
                turns=entry.turns,
                ground_truth=(),
                initial_config={self.class_name: config},
                involved_classes=(self.class_name,),
            )
        )

    @property
    def instance(self) -> Any:
        """BFCL's memory object."""
        return self._world.instances[self.class_name]

    def call(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
        return self._world.call(name, arguments)

    def memory_content(self) -> str:
        """The memory as BFCL shows it in the system prompt."""
        return str(self.instance._dump_core_memory_to_context())

    def save(self) -> None:
        """Write the memory to BFCL's snapshot files (this entry's and the scenario's latest)."""
        self.instance._flush_memory_to_local_file()


class _MemoryEnvironmentBase(AgenticEnvironment):
    """The parts the questions and the prerequisite conversations share."""

    def __init__(
        self,
        category: str,
        entries: Sequence[AgenticEntry],
        *,
        name: str,
        memory_dir: str | Path | None,
        rewards: Sequence[Any] | None,
        max_steps: int,
    ) -> None:
        check_memory_backend(_backend_of(category))
        super().__init__(entries, name=name, rewards=rewards, max_steps=max_steps)
        self.category = category
        self._owned_dir: Path | None = None
        self._memory_dir = Path(memory_dir) if memory_dir is not None else None
        self.memory_dir_given = memory_dir is not None

    @property
    def memory_dir(self) -> Path:
        """Where the memory snapshots live (a temporary folder unless one was given)."""
        if self._memory_dir is None:
            self._owned_dir = Path(tempfile.mkdtemp(prefix="tooluse-bfcl-memory-"))
            self._memory_dir = self._owned_dir
        return self._memory_dir

    def new_world(self, entry: AgenticEntry) -> MemoryWorld:
        return MemoryWorld(entry, self.memory_dir)

    def system_prompt(self, entry: AgenticEntry, world: Any) -> str:
        prompt = memory_system_prompt(self.category, entry.scenario, world.memory_content())
        return f"{prompt}\n\n{agentic_format_prompt()}" if entry.scored else prompt

    def snapshot_folder(self, entry_id: str) -> Path:
        """BFCL's snapshot folder of the category (the same for every entry of it)."""
        from bfcl_eval.utils import get_directory_structure_by_id

        return self.memory_dir / get_directory_structure_by_id(entry_id) / "memory_snapshot"

    def use_memory_dir(self, folder: Path) -> None:
        """Keep the snapshots in ``folder`` from now on (a temporary folder is removed)."""
        self._remove_owned_dir()
        self._memory_dir = folder
        self.forget_worlds()  # they were loaded from the other folder

    def _remove_owned_dir(self) -> None:
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            if self._memory_dir == self._owned_dir:
                self._memory_dir = None
            self._owned_dir = None

    def close(self) -> None:
        super().close()
        self._remove_owned_dir()


class BFCLMemoryPrerequisites(_MemoryEnvironmentBase):
    """The prerequisite conversations of a memory category, in order (unscored); each saves
    the memory when it ends, as BFCL does, also when it was cut short."""

    def __init__(
        self,
        category: str = "memory_kv",
        *,
        memory_dir: str | Path | None = None,
        max_steps: int = 20,
    ) -> None:
        _, prerequisites = load_memory_category(category)
        super().__init__(
            category,
            prerequisites,
            name=f"bfcl:{category}_prereq",
            memory_dir=memory_dir,
            rewards=None,
            max_steps=max_steps,
        )

    def episode_ended(self, entry: AgenticEntry, world: Any) -> None:
        world.save()

    def _checkpoint(self, entry: AgenticEntry, suffix: str) -> Path:
        return self.snapshot_folder(entry.id) / "prereq_checkpoints" / f"{entry.id}{suffix}"

    def played(self, entry: AgenticEntry) -> bool:
        """Whether ``entry`` was played into this memory folder (its memory saved)."""
        return self._checkpoint(entry, ".json").is_file()

    def failed(self, entry: AgenticEntry) -> str | None:
        """Why ``entry`` failed, when it did."""
        marker = self._checkpoint(entry, ".failed")
        return marker.read_text(encoding="utf-8") if marker.is_file() else None

    def mark_failed(self, entry: AgenticEntry, error: str) -> None:
        """Record that the model failed in ``entry``: the memory is saved as the conversation
        found it (as in BFCL, where a failed entry changes nothing), so the next ones go on."""
        self.new_world(entry).save()
        self._checkpoint(entry, ".failed").write_text(error, encoding="utf-8")


class BFCLMemoryEnvironment(_MemoryEnvironmentBase):
    """The questions of one memory category (``bfcl:memory_kv`` ... in the registry).

    ``memory_dir`` holds BFCL's memory snapshots (default: a temporary folder, or the one
    :meth:`prepare` is given); ``scenarios`` keeps only those scenarios' questions; ``split``
    the questions of that split (see :mod:`tooluse.envs.splits`), then ``limit`` the first.
    ``max_steps`` caps the steps of one user turn (BFCL's cap is 20). ``tool_types`` is
    accepted for the registry's sake; the tools are always the backend's functions.
    """

    def __init__(  # noqa: PLR0913 - the environment's options, keyword-only
        self,
        category: str = "memory_kv",
        *,
        memory_dir: str | Path | None = None,
        scenarios: Sequence[str] | None = None,
        limit: int | None = None,
        split: str | None = None,
        rewards: Sequence[Any] | None = None,
        max_steps: int = 20,
        tool_types: Sequence[str] = (),
    ) -> None:
        _backend_of(category)
        questions, _ = load_memory_category(category)
        if scenarios is not None:
            known = sorted({q.scenario for q in questions})
            unknown = sorted(set(scenarios) - set(known))
            if unknown:
                raise ValueError(
                    f"unknown memory scenario(s) {', '.join(unknown)}; known: {', '.join(known)}"
                )
            questions = tuple(q for q in questions if q.scenario in scenarios)
        keep = split_indices([q.id for q in questions], split, salt=f"bfcl:{category}")
        questions = tuple(questions[i] for i in keep)
        if limit is not None:
            questions = questions[:limit]
        super().__init__(
            category,
            questions,
            name=f"bfcl:{category}",
            memory_dir=memory_dir,
            rewards=rewards,
            max_steps=max_steps,
        )
        self._prerequisites: BFCLMemoryPrerequisites | None = None

    @property
    def prerequisites(self) -> BFCLMemoryPrerequisites:
        """The prerequisite conversations, on this environment's memory folder."""
        if self._prerequisites is None or self._prerequisites.memory_dir != self.memory_dir:
            if self._prerequisites is not None:
                self._prerequisites.close()
            self._prerequisites = BFCLMemoryPrerequisites(
                self.category, memory_dir=self.memory_dir, max_steps=self.max_steps
            )
        return self._prerequisites

    def close(self) -> None:
        if self._prerequisites is not None:
            self._prerequisites.close()
            self._prerequisites = None
        super().close()

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start a question on the memory its scenario's conversations left (``RuntimeError``
        when they were not played: see :meth:`prepare`)."""
        index = int((options or {}).get("task_index", 0))
        self.task(index)  # IndexError for an index out of range
        entry = self.entries[index]
        missing = self._unplayed(entry.scenario)
        if missing:
            raise RuntimeError(
                f"{entry.id}: the memory of scenario {entry.scenario!r} is not ready "
                f"({len(missing)} prerequisite conversation(s) not played into "
                f"{self.memory_dir}); call prepare(runner) first (with engine='ray', give the "
                "workers the prepared folder as memory_dir=)"
            )
        return super().reset(seed=seed, options=options)

    def _unplayed(self, scenario: str) -> list[AgenticEntry]:
        prerequisites = self.prerequisites
        return [
            e
            for e in prerequisites.entries
            if e.scenario == scenario and not prerequisites.played(e)
        ]

    def prepare(
        self,
        runner: TrajectoryRunner,
        *,
        out: str | Path | None = None,
        task_indices: Iterable[int] | None = None,
    ) -> list[dict[str, Any]]:
        """Play, with ``runner``'s model and settings, the prerequisite conversations that the
        questions ``task_indices`` (default: all) depend on, in order; those already played
        into ``memory_dir`` are skipped. With ``out`` (and no ``memory_dir`` given), the memory
        lives in ``out/memory`` and each conversation's trajectory is appended to
        ``out/prerequisites.jsonl``. Returns the records of the conversations played now."""
        if out is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            if not self.memory_dir_given:
                self.use_memory_dir(Path(out) / "memory")
        indices = range(len(self)) if task_indices is None else task_indices
        scenarios = {self.entries[i].scenario for i in indices}
        prerequisites = self.prerequisites
        player = copy.copy(runner)
        player.environment = prerequisites
        records = []
        for index, entry in enumerate(prerequisites.entries):
            if entry.scenario not in scenarios or prerequisites.played(entry):
                continue
            record = _play(player, index, entry)
            records.append(record)
            if out is not None:
                with (Path(out) / PREREQUISITES_FILE).open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        return records


def _play(player: TrajectoryRunner, index: int, entry: AgenticEntry) -> dict[str, Any]:
    """One prerequisite conversation's record; a failure (the model's backend raised) is
    recorded and marked, and the next conversations go on from the memory saved before."""
    try:
        return player.run_trajectory(index).to_dict()
    except Exception as exc:  # one conversation's failure must not stop the others
        error = f"{type(exc).__name__}: {exc}"
        environment = player.environment
        assert isinstance(environment, BFCLMemoryPrerequisites)
        environment.mark_failed(entry, error)
        return {
            "environment": environment.name,
            "task_index": index,
            "task_id": entry.id,
            "error": error,
        }
