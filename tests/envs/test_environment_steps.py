"""Tool environments: reset/step, one result per call, terminal submit, registry."""

from __future__ import annotations

import pytest

from tooluse import ToolCall
from tooluse.envs import (
    Action,
    ArithmeticEnvironment,
    RewardType,
    Task,
    ToolEfficiencyReward,
    ToolEnvironment,
    ToolValidityReward,
    environment_registry,
    parse_number,
)


@pytest.fixture(scope="module")
def env():
    environment = environment_registry.get(name="math:word_problems", tool_types=("python",))
    yield environment
    environment.close()


def python_call(code, call_id="1"):
    return ToolCall(id=call_id, name="python", arguments={"code": code})


def submit(answer, call_id="s"):
    return ToolCall(id=call_id, name="submit_answer", arguments={"answer": answer})


def test_reset_exposes_tools_and_prompt_but_not_the_answer(env):
    state, info = env.reset(options={"task_index": 0})
    assert [t.name for t in state.observation.available_tools] == ["python", "submit_answer"]
    assert state.observation.available_tools[-1].is_terminal
    assert state.observation.prompt == "What is 15% of 80?"
    assert info["task_index"] == 0 and info["task_id"] == "tip"
    # The reference answer is nowhere in what the model may see.
    assert "12" not in state.observation.prompt
    assert {f for f in vars(state.observation)} == {
        "prompt",
        "available_tools",
        "tool_results",
        "user_message",
        "system_prompt",
        "history",
    }
    assert "12" not in state.observation.system_prompt
    assert not state.done and state.step_count == 0


def test_python_step_returns_the_printed_output(env):
    state, _ = env.reset(options={"task_index": 0})
    result = env.step(state, Action(tool_calls=(python_call("print(0.15 * 80)"),)))
    assert result.info["tool_results"][0].output == "12.0"
    assert result.info["tool_results"][0].call_id == "1"
    assert not result.done
    assert result.state.step_count == 1
    assert result.observation.tool_results == result.tool_results
    # Monitoring signals are present but weigh nothing.
    step_signals = result.signals.by_type(RewardType.STEP)
    assert {s.name for s in step_signals} == {"tool_validity", "tool_efficiency"}
    assert all(s.weight == 0.0 for s in step_signals)
    assert result.reward == 0.0


def test_every_call_gets_one_result_in_order(env):
    state, _ = env.reset(options={"task_index": 1})
    calls = (
        python_call("print(23 - 7 + 3 * 12)", "a"),
        ToolCall(id="b", name="no_such_tool", arguments={}),
        ToolCall(id="c", name="python", arguments={"source": "x"}),
        python_call("1/0", "d"),
    )
    result = env.step(state, Action(tool_calls=calls))
    results = result.tool_results
    assert [r.call_id for r in results] == ["a", "b", "c", "d"]
    assert results[0].output == "52" and not results[0].is_error
    assert results[1].is_error and "unknown tool" in results[1].output
    assert results[2].is_error
    assert results[3].is_error and "ZeroDivisionError" in results[3].output
    validity = result.signals.get("tool_validity")
    assert validity is not None and validity.value == pytest.approx(0.25)


def test_correct_submission_ends_the_episode_with_reward_one(env):
    state, _ = env.reset(options={"task_index": 0})
    result = env.step(state, Action(tool_calls=(submit("12"),)))
    assert result.terminated and result.done and result.state.done
    assert result.info["correct"] is True
    assert result.info["answer"] == "12"
    assert result.reward == 1.0
    outcome = result.signals.by_type(RewardType.OUTCOME)
    assert [s.name for s in outcome] == ["correctness"]
    assert result.tool_results[0].output == "answer submitted"


@pytest.mark.parametrize("answer", ["11", "twelve", ""])
def test_wrong_submission_ends_the_episode_with_reward_zero(env, answer):
    state, _ = env.reset(options={"task_index": 0})
    result = env.step(state, Action(tool_calls=(submit(answer),)))
    assert result.terminated
    assert result.info["correct"] is False
    assert result.reward == 0.0


def test_submit_with_bad_arguments_does_not_end_the_episode(env):
    state, _ = env.reset(options={"task_index": 0})
    bad = ToolCall(id="s", name="submit_answer", arguments={"value": "12"})
    result = env.step(state, Action(tool_calls=(bad,)))
    assert not result.done
    assert result.tool_results[0].is_error
    assert result.signals.get("correctness") is None


def test_second_submission_in_one_turn_is_ignored(env):
    state, _ = env.reset(options={"task_index": 0})
    result = env.step(state, Action(tool_calls=(submit("12", "x"), submit("13", "y"))))
    assert result.info["answer"] == "12" and result.info["correct"] is True
    assert result.tool_results[1].is_error and "already submitted" in result.tool_results[1].output


def test_text_only_action_is_graded_as_the_final_answer(env):
    state, _ = env.reset(options={"task_index": 0})
    result = env.step(state, Action(text="The answer is 12."))
    assert result.terminated and result.info["correct"] is True
    assert result.info["answer_source"] == "text"


def test_stepping_a_finished_episode_is_an_error(env):
    state, _ = env.reset(options={"task_index": 0})
    done = env.step(state, Action(tool_calls=(submit("12"),)))
    with pytest.raises(ValueError, match="episode is over"):
        env.step(done.state, Action(text="again"))


def test_repeated_call_ids_in_one_action_are_rejected(env):
    state, _ = env.reset(options={"task_index": 0})
    with pytest.raises(ValueError, match="repeats tool call ids: 1"):
        env.step(state, Action(tool_calls=(python_call("print(1)"), python_call("print(2)"))))


def test_states_are_immutable_and_can_branch(env):
    state, _ = env.reset(options={"task_index": 0})
    left = env.step(state, Action(tool_calls=(submit("12"),)))
    right = env.step(state, Action(tool_calls=(submit("99"),)))
    assert left.info["correct"] is True and right.info["correct"] is False
    assert state.step_count == 0 and not state.done


def test_max_steps_truncates():
    env = ArithmeticEnvironment(tool_types=(), max_steps=2)
    state, _ = env.reset()
    first = env.step(state, Action(tool_calls=(ToolCall(id="a", name="nope"),)))
    assert not first.done
    second = env.step(first.state, Action(tool_calls=(ToolCall(id="b", name="nope"),)))
    assert second.truncated and not second.terminated and second.done
    assert "within 2 steps" in second.info["truncated_reason"]
    assert second.signals.get("correctness") is not None
    assert second.reward == 0.0


def test_efficiency_monitor_counts_duplicates_across_steps(env):
    state, _ = env.reset(options={"task_index": 0})
    first = env.step(state, Action(tool_calls=(python_call("print(1)", "a"),)))
    second = env.step(
        first.state,
        Action(tool_calls=(python_call("print(1)", "b"), python_call("print(1)", "c"))),
    )
    efficiency = second.signals.get("tool_efficiency")
    assert efficiency is not None
    assert efficiency.info["duplicates"] == 2
    assert efficiency.value == pytest.approx(0.6)


def test_user_given_rewards_replace_the_monitors_and_count():
    env = ArithmeticEnvironment(
        tool_types=(),
        rewards=(ToolValidityReward(_weight=0.5), ToolEfficiencyReward(_weight=0.0)),
    )
    state, _ = env.reset()
    result = env.step(state, Action(tool_calls=(ToolCall(id="a", name="nope"),)))
    assert [s.name for s in result.signals] == ["tool_validity", "tool_efficiency"]
    assert result.reward == 0.0  # validity 0 (the only call failed), weighted 0.5
    ok = env.step(state, Action(tool_calls=(submit("12"),)))
    assert ok.reward == pytest.approx(0.5)  # no correctness reward was asked for


def test_registry():
    assert {"math:arithmetic", "math:word_problems"} <= set(environment_registry.names())
    no_python = environment_registry.get(name="arithmetic", tool_types=())
    state, _ = no_python.reset(options={"task_index": 2})
    assert [t.name for t in state.observation.available_tools] == ["submit_answer"]
    with pytest.raises(KeyError, match="unknown environment 'math:nope'"):
        environment_registry.get(name="math:nope")
    with pytest.raises(ValueError, match="math:gsm8k needs data_path"):
        environment_registry.get(name="math:GSM8K")
    with pytest.raises(ValueError, match=r"unknown adapter 'gym'; known: .*gem.*reasoning_gym"):
        environment_registry.get(name="math:word_problems", adapter="gym")
    with pytest.raises(ValueError, match="unknown tool type 'browser'"):
        environment_registry.get(name="math:word_problems", tool_types=("browser",))
    with pytest.raises(ValueError, match="already registered"):
        environment_registry.register("arithmetic", ArithmeticEnvironment)


def test_task_index_out_of_range(env):
    with pytest.raises(IndexError, match="task_index 99 is out of range"):
        env.reset(options={"task_index": 99})


def test_custom_environment_with_exact_match_grading():
    env = ToolEnvironment([Task(prompt="Capital of France?", reference="Paris")])
    state, _ = env.reset()
    assert [t.name for t in state.observation.available_tools] == ["submit_answer"]
    assert env.step(state, Action(tool_calls=(submit(" Paris "),))).info["correct"] is True
    assert env.step(state, Action(tool_calls=(submit("Lyon"),))).info["correct"] is False
    with pytest.raises(ValueError, match="at least one task"):
        ToolEnvironment([])


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("12", 12.0),
        ("$1,419,857", 1419857.0),
        ("The answer is 82.", 82.0),
        ("so #### 104", 104.0),
        ("\\boxed{328} and 5", 328.0),
        ("-3.5", -3.5),
        ("none", None),
        (True, None),
        (7, 7.0),
    ],
)
def test_parse_number(text, number):
    assert parse_number(text) == number


async def test_async_step_matches_sync(env):
    state, _ = env.reset(options={"task_index": 4})
    action = Action(tool_calls=(python_call("print(17 ** 5)"),))
    result = await env.astep(state, action)
    assert result.tool_results[0].output == "1419857"
    final = await env.astep(result.state, Action(tool_calls=(submit("1419857"),)))
    assert final.info["correct"] is True
