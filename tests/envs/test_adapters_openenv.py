"""adapter="openenv": a real OpenEnv server (openenv-core, uvicorn) in a subprocess on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import httpx
import pytest
from openenv_guess_server import target_for

from tooluse import SamplingParams, ScriptedBackend, ToolCall
from tooluse.envs import Action, RewardType, TrajectoryRunner, environment_registry
from tooluse.envs.adapters.openenv import OpenEnvEnvironment, OpenEnvServer, observation_text
from tooluse.errors import MissingDependencyError

HERE = Path(__file__).parent
APP = "openenv_guess_server:app"


def guess(number, call_id="g"):
    return ToolCall(id=call_id, name="act", arguments={"guess": number})


def wrong_for(seed, skip=()):
    target = target_for(seed)
    return next(n for n in range(1, 101) if n != target and n not in skip)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server():
    started = OpenEnvServer(APP, app_dir=HERE)
    yield started
    started.close()


@pytest.fixture()
def env(server):
    built = environment_registry.get(
        name="guess", adapter="openenv", base_url=server.base_url, size=4, seed=20
    )
    yield built
    built.close()


def test_action_model_becomes_the_tool(env):
    assert isinstance(env, OpenEnvEnvironment)
    assert env.name == "openenv:guess"
    assert [t.name for t in env.tools] == ["act"]
    schema = env.action.parameters_schema
    assert list(schema["properties"]) == ["guess"]  # OpenEnv's metadata field is left out
    assert schema["properties"]["guess"]["type"] == "integer"
    assert schema["required"] == ["guess"]
    assert env.action.description.startswith("Guess the hidden number.")


def test_a_websocket_url_works_too(server):
    url = server.base_url.replace("http://", "ws://")
    with environment_registry.get(name="guess", adapter="openenv", base_url=url) as env:
        state, _ = env.reset()
        assert env.step(state, Action(tool_calls=(guess(target_for(0)),))).info["correct"]


def test_reset_step_hint_and_win_with_the_servers_reward(env):
    state, info = env.reset(options={"task_index": 1})
    assert info["openenv_seed"] == 21
    assert state.observation.prompt.startswith("I picked a whole number from 1 to 100")
    assert env.task(1).prompt == state.observation.prompt
    target = target_for(21)
    wrong = wrong_for(21)
    first = env.step(state, Action(tool_calls=(guess(wrong),)))
    assert not first.done
    hint = "higher" if wrong < target else "lower"
    assert first.tool_results[0].output == f"{wrong} is wrong; go {hint}."
    assert first.tool_results[0].metadata["openenv_reward"] == 0.0
    assert first.signals.get("openenv_reward").value == 0.0
    win = env.step(first.state, Action(tool_calls=(guess(target, "w"),)))
    assert win.terminated and not win.truncated
    assert win.tool_results[0].output == f"Correct: {target} after 2 guesses."
    assert win.info["correct"] is True and win.info["ended_by"] == "server"
    assert win.signals.get("openenv_reward").value == 1.0
    assert win.signals.get("openenv_reward").reward_type is RewardType.STEP
    assert win.signals.get("correctness").value == 1.0
    assert win.reward == 1.0  # the server's reward counts; the correctness monitor has weight 0
    monitors = {s.name: s for s in win.signals.by_type(RewardType.STEP)}
    assert monitors["tool_validity"].weight == 0.0 and monitors["tool_validity"].value == 1.0
    assert monitors["tool_efficiency"].weight == 0.0
    assert win.state.data["actions"] == [{"guess": wrong}, {"guess": target}]
    with pytest.raises(ValueError, match="episode is over"):
        env.step(win.state, Action(tool_calls=(guess(1),)))


def test_bad_calls_get_one_error_result_each_and_the_episode_goes_on(env):
    state, _ = env.reset(options={"task_index": 0})
    calls = (
        ToolCall(id="u", name="submit_answer", arguments={"answer": "3"}),
        ToolCall(id="t", name="act", arguments={"guess": "fifty"}),
        ToolCall(id="r", name="act", arguments={"guess": 500}),
        ToolCall(id="m", name="act", arguments={}),
    )
    result = env.step(state, Action(tool_calls=calls))
    assert [r.call_id for r in result.tool_results] == ["u", "t", "r", "m"]
    assert all(r.is_error for r in result.tool_results)
    assert "unknown tool 'submit_answer'" in result.tool_results[0].output
    assert "guess" in result.tool_results[1].output
    assert not result.done
    assert result.state.data["actions"] == []  # nothing reached the server
    assert result.signals.get("openenv_reward") is None
    assert result.signals.get("tool_validity").value == 0.0
    # An exception inside the environment reaches the model; the calls after it are not sent.
    broken = env.step(result.state, Action(tool_calls=(guess(0, "z"), guess(50, "after"))))
    assert broken.tool_results[0].is_error
    assert "the guess 0 breaks this environment" in broken.tool_results[0].output
    assert "ignored: the environment failed" in broken.tool_results[1].output
    assert broken.info["openenv_error"]
    assert not broken.done
    # The next step gets a new session (the episode is replayed) and plays on.
    target = target_for(20)
    end = env.step(broken.state, Action(tool_calls=(guess(target, "w"), guess(1, "late"))))
    assert end.terminated and end.info["correct"]
    assert end.tool_results[0].output == f"Correct: {target} after 1 guesses."
    assert "ignored: the episode ended" in end.tool_results[1].output


def test_text_reply_ends_the_episode_and_max_steps_truncates(server):
    with environment_registry.get(
        name="guess", adapter="openenv", base_url=server.base_url, size=2, max_steps=2
    ) as env:
        state, _ = env.reset(options={"task_index": 0})
        quit_ = env.step(state, Action(text="I give up."))
        assert quit_.terminated and quit_.info["ended_by"] == "model"
        assert quit_.info["correct"] is False and quit_.signals.get("correctness").value == 0.0
        one = env.step(state, Action(tool_calls=(guess(wrong_for(0), "a"),)))
        two = env.step(one.state, Action(tool_calls=(guess(wrong_for(0, {wrong_for(0)}), "b"),)))
        assert two.truncated and not two.terminated
        assert "did not end within 2 steps" in two.info["truncated_reason"]


def test_state_saves_restores_and_branches_by_replay(env):
    state, _ = env.reset(options={"task_index": 3})
    target = target_for(23)
    wrong = wrong_for(23)
    one = env.step(state, Action(tool_calls=(guess(wrong),)))
    saved = json.loads(json.dumps(env.save_state(one.state)))
    assert saved["data"]["actions"] == [{"guess": wrong}]
    # Two branches from the same state: each plays on its own session.
    left = env.step(one.state, Action(tool_calls=(guess(target, "l"),)))
    right = env.step(one.state, Action(tool_calls=(guess(wrong_for(23, {wrong}), "r"),)))
    assert left.info["correct"] is True and not right.done
    restored = env.restore_state(saved)
    again = env.step(restored, Action(tool_calls=(guess(target, "x"),)))
    assert again.tool_results[0].output == f"Correct: {target} after 2 guesses."


def test_a_trajectory_runs_in_the_runner(env):
    target = target_for(22)
    wrong = wrong_for(22)
    backend = ScriptedBackend([[guess(wrong, "c1")], [guess(target, "c2")], "unused"])
    runner = TrajectoryRunner(
        environment=env, backend=backend, sampling_params=SamplingParams(temperature=0.0)
    )
    trajectory = runner.run_trajectory(task_index=2)
    assert trajectory.success and trajectory.terminated
    assert trajectory.environment == "openenv:guess"
    assert trajectory.total_reward == 1.0
    assert [len(s.calls) for s in trajectory.steps] == [1, 1]
    assert [m.role for m in trajectory.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert trajectory.messages[-1].content == f"Correct: {target} after 2 guesses."
    assert trajectory.stop_reason == "episode_done"
    data = json.loads(trajectory.to_json())
    assert data["tools"][0]["function"]["name"] == "act"


async def test_async_trajectory(env):
    target = target_for(20)
    backend = ScriptedBackend([[guess(target, "c1")]])
    trajectory = await TrajectoryRunner(environment=env, backend=backend).arun_trajectory(0)
    assert trajectory.success
    assert trajectory.steps[-1].result.signals.get("openenv_reward").value == 1.0


def test_server_option_starts_a_local_server_and_close_stops_it():
    env = environment_registry.get(name="guess", adapter="openenv", server=APP, app_dir=str(HERE))
    assert env.server is not None
    assert env.base_url.startswith("http://127.0.0.1:")
    assert httpx.get(f"{env.base_url}/health").json() == {"status": "healthy"}
    state, _ = env.reset()
    result = env.step(state, Action(tool_calls=(guess(target_for(0)),)))
    assert result.info["correct"] is True
    env.close()
    assert env.server.process.poll() is not None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{env.base_url}/health")


def test_a_server_that_is_down_gives_a_clear_error():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConnectionError, match=f"no OpenEnv server answers at {url}"):
        environment_registry.get(name="guess", adapter="openenv", base_url=url)


def test_a_server_that_dies_mid_episode_is_reported_not_waited_for():
    server = OpenEnvServer(APP, app_dir=HERE)
    env = environment_registry.get(name="guess", adapter="openenv", base_url=server.base_url)
    try:
        state, _ = env.reset()
        server.close()  # the server process is gone
        result = env.step(state, Action(tool_calls=(guess(10),)))
        assert result.tool_results[0].is_error
        assert "OpenEnv server" in result.tool_results[0].output
        assert not result.done
        with pytest.raises(ConnectionError, match=server.base_url):
            env.reset()
    finally:
        env.close()


def test_a_server_that_cannot_start_says_why():
    with pytest.raises(RuntimeError, match="exited with code") as caught:
        OpenEnvServer("no_such_module_here:app", app_dir=HERE)
    assert "no_such_module_here" in str(caught.value)


def test_base_url_or_server_is_required():
    with pytest.raises(ValueError, match="base_url="):
        environment_registry.get(name="guess", adapter="openenv")


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "openenv.core.generic_client", None)
    with pytest.raises(MissingDependencyError) as caught:
        environment_registry.get(name="guess", adapter="openenv", base_url="http://127.0.0.1:9")
    assert "--no-deps 'openenv-core==0.3.0'" in str(caught.value)


@pytest.mark.slow
def test_local_model_plays_an_episode(env):
    from tooluse.local import LlamaCppBackend

    runner = TrajectoryRunner(
        environment=env,
        backend=LlamaCppBackend.default(max_tokens=48),
        sampling_params=SamplingParams(temperature=0.0, max_tokens=48),
        system_prompt="Guess the number with the act tool.",
        max_turns=3,
    )
    trajectory = runner.run_trajectory(task_index=0)
    print(
        f"\nlocal model on openenv:guess: success={trajectory.success} "
        f"steps={len(trajectory.steps)} stop={trajectory.stop_reason}"
    )
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(answered)
    assert 1 <= len(trajectory.steps) <= 3
    # Every accepted act call reached the server, in order; nothing else did.
    sent = trajectory.steps[-1].result.state.data["actions"]
    accepted = [
        r
        for step in trajectory.steps
        for r in step.results
        if r.tool_name == "act" and not r.is_error
    ]
    assert len(sent) == len(accepted)
    for step in trajectory.steps:
        assert {"tool_validity", "tool_efficiency"} <= {s.name for s in step.result.signals}
    assert trajectory.success == bool(
        trajectory.terminated and trajectory.steps[-1].result.info.get("correct")
    )


def test_a_one_session_server_still_branches():
    """OpenEnv's template serves one session at a time: kept sessions give way to new ones."""
    server = OpenEnvServer(APP, app_dir=HERE, environ={"GUESS_MAX_SESSIONS": "1"})
    env = environment_registry.get(name="guess", adapter="openenv", base_url=server.base_url)
    try:
        target = target_for(0)
        state, _ = env.reset()
        one = env.step(state, Action(tool_calls=(guess(wrong_for(0)),)))
        left = env.step(one.state, Action(tool_calls=(guess(wrong_for(0, {wrong_for(0)}), "l"),)))
        right = env.step(one.state, Action(tool_calls=(guess(target, "r"),)))
        assert right.info["correct"] is True
        assert not left.done and not left.tool_results[0].is_error
        end = env.step(left.state, Action(tool_calls=(guess(target, "w"),)))
        assert end.tool_results[0].output == f"Correct: {target} after 3 guesses."
    finally:
        env.close()
        server.close()


def test_instructions_and_observation_text(server):
    with environment_registry.get(
        name="guess",
        adapter="openenv",
        base_url=server.base_url,
        instructions="Play well.",
        tool_name="guess_number",
        observation_field="message",
    ) as env:
        state, _ = env.reset()
        assert state.observation.prompt.startswith("Play well.\n\nI picked a whole number")
        assert [t.name for t in env.tools] == ["guess_number"]
        call = ToolCall(id="g", name="guess_number", arguments={"guess": target_for(0)})
        assert env.step(state, Action(tool_calls=(call,))).info["correct"] is True
    # Several fields (or none of them text) are shown as JSON; one text field as it is.
    assert observation_text({"message": "hi"}) == "hi"
    assert json.loads(observation_text({"board": [1, 2], "note": "x"})) == {
        "board": [1, 2],
        "note": "x",
    }
    assert observation_text({"board": [1, 2], "note": "x"}, "board") == "[1, 2]"
