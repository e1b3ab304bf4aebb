"""BFCL multi-turn environments on the real bfcl-eval data and classes.

The ground-truth policy (every turn's expected calls, then a text reply) must get full reward
on every entry; verdicts must agree with BFCL's own ``multi_turn_checker``; bad calls come back
to the model as errors; states save to JSON and restore.
"""

from __future__ import annotations

import itertools
import json

import bfcl_eval  # noqa: F401  (installed by make install; absent is a failure)
import pytest

from tooluse import ScriptedBackend, ToolCall
from tooluse.envs import (
    Action,
    RewardType,
    TrajectoryRunner,
    environment_registry,
)
from tooluse.evals.bfcl import BFCLMultiTurnEnvironment
from tooluse.evals.bfcl.world import (
    ADDED_FUNCTIONS_MESSAGE,
    MULTI_TURN_CATEGORIES,
    ground_truth_calls,
)

_ids = itertools.count()


def tool_calls(pairs):
    return tuple(ToolCall(id=f"c{next(_ids)}", name=n, arguments=a) for n, a in pairs)


@pytest.fixture(scope="module")
def base():
    return environment_registry.get(name="bfcl:multi_turn_base")


def play_ground_truth(env, index):
    """Step the ground truth of one entry; returns the last step result."""
    state, _ = env.reset(options={"task_index": index})
    result = None
    for turn in ground_truth_calls(env.entries[index]):
        if turn:
            result = env.step(state, Action(tool_calls=tool_calls(turn)))
            state = result.state
        result = env.step(state, Action(text="Done."))
        state = result.state
    return result


def test_ground_truth_policy_scores_every_base_entry_through_the_runner(base):
    """All 200 base entries, played by a scripted backend through TrajectoryRunner."""
    assert len(base) == 200
    solved = 0
    for index in range(len(base)):
        script = []
        for turn in ground_truth_calls(base.entries[index]):
            if turn:
                script.append(list(tool_calls(turn)))
            script.append("Done.")
        backend = ScriptedBackend(script)
        trajectory = TrajectoryRunner(environment=base, backend=backend).run_trajectory(index)
        assert backend.remaining == 0, base.entries[index].id
        assert trajectory.terminated and trajectory.stop_reason == "final_text"
        assert trajectory.total_reward == 1.0, base.entries[index].id
        solved += trajectory.success
    print(f"\nground-truth policy on bfcl:multi_turn_base: {solved}/{len(base)}")
    assert solved == 200


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES[1:])
def test_ground_truth_policy_scores_every_entry_of_the_other_categories(category):
    env = environment_registry.get(name=f"bfcl:{category}")
    results = [play_ground_truth(env, i) for i in range(len(env))]
    assert len(results) == 200
    failed = [env.entries[i].id for i, r in enumerate(results) if not r.info["correct"]]
    assert failed == []
    assert all(r.terminated and r.reward == 1.0 for r in results)


def test_reset_gives_the_entry_tools_and_first_message(base):
    state, info = base.reset(options={"task_index": 0})
    names = [t.name for t in state.observation.available_tools]
    assert {"cd", "mkdir", "mv", "grep"} <= set(names)
    assert "submit_answer" not in names
    assert state.observation.prompt.startswith("Move 'final_report.pdf'")
    assert info["turns"] == 4 and "GorillaFileSystem" in info["involved_classes"]
    # The ground truth stays in the task, out of the observation.
    assert "cd(folder" not in json.dumps(base.save_state(state))


def test_turns_advance_and_a_wrong_state_fails_bfcls_check(base):
    state, _ = base.reset(options={"task_index": 0})
    moved = base.step(state, Action(tool_calls=tool_calls([("cd", {"folder": "document"})])))
    assert moved.tool_results[0].output == '{"current_working_directory": "document"}'
    ended = base.step(moved.state, Action(text="I only changed directory."))
    check = ended.info["turn_check"]
    assert not ended.done
    assert ended.observation.user_message.startswith("Perform a detailed search using grep")
    assert check["checked"] and not check["state_valid"] and not check["valid"]
    assert check["error_type"] == "multi_turn:instance_state_mismatch"
    signals = {s.name: s.value for s in ended.signals}
    assert signals["bfcl_state"] == 0.0 and signals["bfcl_response"] == 0.0
    state = ended.state
    while not state.done:  # the remaining turns without a single call
        last = base.step(state, Action(text="nothing more"))
        state = last.state
    assert last.terminated and last.info["correct"] is False
    assert last.signals.get("correctness").value == 0.0
    assert last.info["turn_check"]["error_type"] == "multi_turn:empty_turn_model_response"


def test_bad_calls_come_back_as_errors_and_the_episode_goes_on(base):
    state, _ = base.reset(options={"task_index": 0})
    calls = (
        ToolCall(id="u", name="format_disk", arguments={}),
        ToolCall(id="m", name="cd", arguments={}),
        ToolCall(id="x", name="cd", arguments={"folder": "no_such_folder"}),
        ToolCall(id="t", name="mkdir", arguments={"dir_name": 123}),
    )
    result = base.step(state, Action(tool_calls=calls))
    unknown, missing, raised, typed = result.tool_results
    assert [r.call_id for r in result.tool_results] == ["u", "m", "x", "t"]
    assert unknown.is_error and "unknown function 'format_disk'" in unknown.output
    assert "cd" in unknown.output  # the available functions are named
    assert missing.is_error and "folder: missing required argument" in missing.output
    assert raised.is_error and "no_such_folder" in raised.output
    # Right names, wrong type: run as BFCL runs it; the class fails, and the model is told why.
    assert typed.is_error and "schema_mismatch" in typed.metadata
    assert "Error during execution" in typed.output
    assert "dir_name: expected string, got integer 123" in typed.output
    assert result.signals.get("tool_validity").value == 0.0
    assert not result.done
    executed = [c["executed"] for c in result.state.data["calls"][0]]
    assert executed == [False, False, True, True]


def test_an_exception_inside_a_class_is_reported(base):
    index = next(i for i, e in enumerate(base.entries) if "MathAPI" in e.involved_classes)
    state, _ = base.reset(options={"task_index": index})
    call = ToolCall(id="d", name="divide", arguments={"a": 1, "b": 0})
    result = base.step(state, Action(tool_calls=(call,)))
    assert result.tool_results[0].is_error
    assert "zero" in result.tool_results[0].output.lower()


def test_step_limit_per_turn_fails_the_episode():
    env = BFCLMultiTurnEnvironment("multi_turn_base", max_steps=3, limit=2)
    state, _ = env.reset(options={"task_index": 0})
    for step in range(3):
        result = env.step(state, Action(tool_calls=tool_calls([("pwd", {})])))
        state = result.state
    assert step == 2 and result.truncated and not result.terminated
    assert result.info["correct"] is False
    assert "cap: 3" in result.info["truncated_reason"]
    assert result.signals.get("correctness").value == 0.0
    with pytest.raises(ValueError, match="episode is over"):
        env.step(state, Action(text="more"))


def test_state_saves_to_json_and_restores_for_replay_and_branching(base):
    turns = ground_truth_calls(base.entries[3])
    state, _ = base.reset(options={"task_index": 3})
    state = base.step(state, Action(tool_calls=tool_calls(turns[0]))).state
    saved = json.loads(json.dumps(base.save_state(state)))
    restored = base.restore_state(saved)
    assert restored.data == state.data
    assert [t.name for t in restored.observation.available_tools] == [
        t.name for t in state.observation.available_tools
    ]

    def finish(s):
        s = base.step(s, Action(text="ok")).state
        for turn in turns[1:]:
            if turn:
                s = base.step(s, Action(tool_calls=tool_calls(turn))).state
            last = base.step(s, Action(text="ok"))
            s = last.state
        return last

    # A fresh environment (empty world cache) replays the saved calls to rebuild the world.
    fresh = environment_registry.get(name="bfcl:multi_turn_base")
    assert fresh.restore_state(saved).data == state.data
    assert finish(restored).info["correct"] is True
    # The same state stepped twice (branching) gives the same outcome both times.
    assert finish(state).info["correct"] is True
    assert finish(state).info["correct"] is True
    with pytest.raises(ValueError, match="belongs to environment"):
        environment_registry.get(name="math:arithmetic").restore_state(saved)


def test_interleaved_episodes_do_not_share_a_world(base):
    first, _ = base.reset(options={"task_index": 0})
    second, _ = base.reset(options={"task_index": 0})
    mkdir = tool_calls([("mkdir", {"dir_name": "only_in_first"})])
    first = base.step(first, Action(tool_calls=mkdir)).state
    listing = base.step(second, Action(tool_calls=tool_calls([("ls", {})])))
    assert "only_in_first" not in listing.tool_results[0].output
    again = base.step(first, Action(tool_calls=tool_calls([("ls", {})])))
    assert "only_in_first" in again.tool_results[0].output


def test_miss_func_adds_the_held_back_function_at_its_turn():
    env = environment_registry.get(name="bfcl:multi_turn_miss_func", limit=3)
    entry = env.entries[0]
    ((turn, names),) = entry.missed_functions.items()
    state, _ = env.reset(options={"task_index": 0})
    offered = {t.name for t in state.observation.available_tools}
    assert not set(names) & offered
    for index, calls in enumerate(ground_truth_calls(entry)[:turn]):
        if calls:
            state = env.step(state, Action(tool_calls=tool_calls(calls))).state
        state = env.step(state, Action(text="ok")).state
        assert state.data["turn"] == index + 1
    assert state.observation.user_message == ADDED_FUNCTIONS_MESSAGE
    assert set(names) <= {t.name for t in state.observation.available_tools}


def test_verdicts_agree_with_bfcls_own_multi_turn_checker(base):
    """Right, incomplete and wrong trajectories: our verdict equals multi_turn_checker's."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    def as_strings(turn):
        return [f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in turn]

    agreements = 0
    for index in range(0, 200, 10):
        entry = base.entries[index]
        truth = ground_truth_calls(entry)
        variants = {
            "right": truth,
            "drop_last": [t[:-1] if t else t for t in truth],
            "first_turn_only": [truth[0]] + [[] for _ in truth[1:]],
        }
        for label, turns in variants.items():
            state, _ = base.reset(options={"task_index": index})
            for turn in turns:
                if turn:
                    state = base.step(state, Action(tool_calls=tool_calls(turn))).state
                last = base.step(state, Action(text="ok"))
                state = last.state
            raw = {
                "id": entry.id,
                "initial_config": entry.initial_config,
                "involved_classes": list(entry.involved_classes),
            }
            decoded = [[as_strings(t)] if t else [] for t in turns]
            verdict = multi_turn_checker(
                decoded,
                [list(t) for t in entry.ground_truth],
                raw,
                "multi_turn_base",
                f"tooluse_parity_{label}_{index}",
            )
            assert last.info["correct"] == verdict["valid"], (entry.id, label, verdict)
            agreements += 1
    assert agreements == 60


def test_monitoring_rewards_are_attached(base):
    state, _ = base.reset(options={"task_index": 1})
    result = base.step(state, Action(tool_calls=tool_calls([("pwd", {})])))
    step = {s.name for s in result.signals.by_type(RewardType.STEP)}
    assert step == {"tool_validity", "tool_efficiency"}
    assert all(s.weight == 0.0 for s in result.signals)
