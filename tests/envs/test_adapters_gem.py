"""adapter="gem": GEM's offline games as tool environments, played for real."""

from __future__ import annotations

import importlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tooluse import SamplingParams, ScriptedBackend, ToolCall
from tooluse.envs import (
    Action,
    GSM8KEnvironment,
    RewardType,
    TrajectoryRunner,
    environment_registry,
)
from tooluse.envs.adapters.gem import GemEnvironment, environment_ids
from tooluse.errors import MissingDependencyError

GUESS = "game:GuessTheNumber-v0-easy"
HANOI = "game:TowerofHanoi-v0-easy"
GSM8K_SAMPLE = Path(__file__).parent / "data" / "gsm8k_sample.jsonl"


def gem_library():
    """The gem package, imported the adapter's way (importing gem configures the root logger;
    the adapter undoes that, and this test process must not keep it either)."""
    environment_ids()
    return importlib.import_module("gem")


def act(move, call_id="a"):
    return ToolCall(id=call_id, name="act", arguments={"action": move})


def secret_number(seed):
    """The number GEM hides for a seed, read from a GEM object of our own (the answer key)."""
    env = gem_library().make(GUESS)
    env.reset(seed=seed)
    return env.game_number


def hanoi_moves(disks, source="A", spare="B", target="C"):
    if disks == 0:
        return []
    return [
        *hanoi_moves(disks - 1, source, target, spare),
        f"{source} {target}",
        *hanoi_moves(disks - 1, spare, source, target),
    ]


@pytest.fixture()
def guess():
    env = environment_registry.get(name=GUESS, adapter="gem", tool_types=(), size=4, seed=10)
    yield env
    env.close()


def test_guessing_game_steps_hints_and_a_win(guess):
    state, info = guess.reset(options={"task_index": 2})
    assert info["gem_seed"] == 12
    assert "Guess The Number" in state.observation.prompt
    assert [t.name for t in state.observation.available_tools] == ["act"]
    target = secret_number(12)
    wrong = 1 if target != 1 else 2
    first = guess.step(state, Action(tool_calls=(act(f"\\boxed{{{wrong}}}"),)))
    assert not first.done
    hint = "higher" if target > wrong else "lower"
    assert f"you guessed {wrong}, and the target number is {hint}" in first.tool_results[0].output
    assert first.signals.get("gem_reward").value == 0.0
    assert first.signals.get("gem_reward").reward_type is RewardType.STEP
    win = guess.step(first.state, Action(tool_calls=(act(f"I say \\boxed{{{target}}}"),)))
    assert win.terminated and not win.truncated
    assert win.info["correct"] is True
    assert "Congratulations" in win.tool_results[0].output
    assert win.signals.get("gem_reward").value == 1.0
    assert win.signals.get("correctness").value == 1.0
    assert win.reward == 1.0  # GEM's reward counts; the correctness monitor has weight 0
    # The always-on monitors are there, with weight 0.
    monitors = {s.name: s for s in win.signals.by_type(RewardType.STEP)}
    assert monitors["tool_validity"].weight == 0.0 and monitors["tool_validity"].value == 1.0
    assert monitors["tool_efficiency"].weight == 0.0
    with pytest.raises(ValueError, match="episode is over"):
        guess.step(win.state, Action(tool_calls=(act("\\boxed{1}"),)))


def test_unreadable_move_is_graded_by_gem_and_wrong(guess):
    state, _ = guess.reset(options={"task_index": 0})
    result = guess.step(state, Action(tool_calls=(act("five"),)))
    assert result.terminated  # GEM ends the game on a move it cannot read
    assert result.info["correct"] is False
    assert result.signals.get("gem_reward").value == pytest.approx(-0.1)
    assert result.signals.get("correctness").value == 0.0


def test_text_turn_is_the_action_and_the_answer_is_the_next_user_message(guess):
    state, _ = guess.reset(options={"task_index": 1})
    target = secret_number(11)
    wrong = 10 if target != 10 else 9
    result = guess.step(state, Action(text=f"My guess: \\boxed{{{wrong}}}"))
    assert not result.done
    assert f"you guessed {wrong}" in result.observation.user_message
    assert result.info["user_message"] == result.observation.user_message
    assert result.state.data["actions"] == [f"My guess: \\boxed{{{wrong}}}"]


def test_bad_calls_get_one_error_result_each_and_the_game_goes_on(guess):
    state, _ = guess.reset(options={"task_index": 0})
    calls = (
        ToolCall(id="u", name="submit_answer", arguments={"answer": "3"}),
        ToolCall(id="m", name="act", arguments={}),
        ToolCall(id="t", name="act", arguments={"action": 5}),
    )
    result = guess.step(state, Action(tool_calls=calls))
    by_id = {r.call_id: r for r in result.tool_results}
    assert [r.call_id for r in result.tool_results] == ["u", "m", "t"]
    assert by_id["u"].is_error and "unknown tool 'submit_answer'" in by_id["u"].output
    assert by_id["m"].is_error and "action" in by_id["m"].output
    assert by_id["t"].is_error
    assert not result.done
    assert result.state.data["actions"] == []  # nothing reached GEM
    assert result.signals.get("gem_reward") is None
    assert result.signals.get("tool_validity").value == 0.0
    # Acts after the one that ends the game are refused, not sent.
    target = secret_number(10)
    end = guess.step(
        result.state,
        Action(tool_calls=(act(f"\\boxed{{{target}}}", "w"), act("\\boxed{1}", "late"))),
    )
    assert end.terminated and end.info["correct"]
    assert end.tool_results[1].is_error and "ended" in end.tool_results[1].output
    assert end.state.data["actions"] == [f"\\boxed{{{target}}}"]


def test_state_saves_restores_and_branches_by_replay(guess):
    state, _ = guess.reset(options={"task_index": 3})
    target = secret_number(13)
    wrong = [n for n in range(1, 11) if n != target][:2]
    one = guess.step(state, Action(tool_calls=(act(f"\\boxed{{{wrong[0]}}}"),)))
    two = guess.step(one.state, Action(tool_calls=(act(f"\\boxed{{{wrong[1]}}}"),)))
    saved = json.loads(json.dumps(guess.save_state(two.state)))
    assert saved["data"]["actions"] == [f"\\boxed{{{wrong[0]}}}", f"\\boxed{{{wrong[1]}}}"]
    # A new environment object has no live game: it replays the actions from reset(seed).
    other = environment_registry.get(name=GUESS, adapter="gem", size=4, seed=10)
    restored = other.restore_state(saved)
    win = other.step(restored, Action(tool_calls=(act(f"\\boxed{{{target}}}"),)))
    assert win.info["correct"] and "in 3 turns" in win.tool_results[0].output
    other.close()
    # Branching: the first state stepped again (its live game moved on) is rebuilt too.
    branch = guess.step(one.state, Action(tool_calls=(act(f"\\boxed{{{target}}}"),)))
    assert branch.info["correct"] and "in 2 turns" in branch.tool_results[0].output


def test_gem_calls_leave_the_callers_random_generators_alone(guess):
    random.seed(1234)
    expected = random.Random(1234).random()
    state, _ = guess.reset(options={"task_index": 0})
    guess.step(state, Action(tool_calls=(act("\\boxed{3}"),)))
    assert random.random() == expected


def test_python_tool_runs_in_a_session_beside_act():
    env = environment_registry.get(name=GUESS, adapter="gem", tool_types=("python",), size=1)
    try:
        state, _ = env.reset()
        assert [t.name for t in state.observation.available_tools] == ["act", "python"]
        first = env.step(
            state,
            Action(tool_calls=(ToolCall(id="p", name="python", arguments={"code": "x = 6"}),)),
        )
        assert not first.tool_results[0].is_error
        assert first.signals.get("gem_reward") is None  # no action reached GEM
        second = env.step(
            first.state,
            Action(
                tool_calls=(
                    ToolCall(id="q", name="python", arguments={"code": "print(x + 1)"}),
                    act("\\boxed{2}", "g"),
                )
            ),
        )
        assert second.tool_results[0].output.strip() == "7"
        assert "you guessed 2" in second.tool_results[1].output or second.done
    finally:
        env.close()


def test_scripted_policy_solves_tower_of_hanoi_in_the_runner():
    env = environment_registry.get(name=HANOI, adapter="gem", size=1)
    moves = hanoi_moves(3)
    assert len(moves) == 7
    backend = ScriptedBackend([[act(f"\\boxed{{{m}}}", f"m{i}")] for i, m in enumerate(moves)])
    runner = TrajectoryRunner(
        environment=env,
        backend=backend,
        sampling_params=SamplingParams(temperature=0.0),
        system_prompt="Solve the puzzle with the act tool.",
    )
    trajectory = runner.run_trajectory(task_index=0)
    env.close()
    assert "Tower of Hanoi with 3 disks" in trajectory.prompt
    assert "Enter your move" in trajectory.prompt  # GEM's board and suffix are in the prompt
    assert trajectory.success and trajectory.terminated
    assert trajectory.stop_reason == "episode_done"
    assert len(trajectory.steps) == 7
    assert trajectory.total_reward == pytest.approx(1.0)  # GEM: 0 per move, 1 for the win
    assert backend.remaining == 0


def test_sudoku_is_offline_and_answers_a_move():
    env = environment_registry.get(name="game:Sudoku-v0-easy", adapter="gem", size=2)
    state, _ = env.reset(options={"task_index": 1})
    assert "Sudoku" in state.observation.prompt
    result = env.step(state, Action(tool_calls=(act("\\boxed{1 1 9}"),)))
    assert result.tool_results[0].output  # GEM's answer to an impossible move
    assert result.signals.get("gem_reward") is not None
    env.close()


def test_reasoning_gym_tasks_through_gem():
    env = environment_registry.get(name="rg:chain_sum", adapter="gem", size=1)
    state, _ = env.reset()
    result = env.step(state, Action(text="\\boxed{0}"))
    assert result.terminated  # a single-turn GEM environment
    assert result.info["correct"] == (result.signals.get("gem_reward").value == 1.0)
    env.close()


def test_an_exception_inside_gem_is_reported_and_the_game_goes_on():
    gem = gem_library()

    class FragileGame(gem.Env):
        """A user's own GEM environment: counts to 3, and fails on the action 'boom'."""

        def reset(self, seed=None):
            super().reset(seed)
            self.count = 0
            return "Say \\boxed{next} three times.", {}

        def step(self, action):
            if "boom" in action:
                raise RuntimeError("the game broke")
            self.count += 1
            return f"count {self.count}", float(self.count == 3), self.count == 3, False, {}

    if "test:Fragile-v0" not in gem.envs.registration.ENV_REGISTRY:
        gem.register("test:Fragile-v0", FragileGame)
    env = environment_registry.get(name="test:Fragile-v0", adapter="gem", size=1)
    state, _ = env.reset()
    one = env.step(state, Action(tool_calls=(act("\\boxed{next}", "1"),)))
    broken = env.step(one.state, Action(tool_calls=(act("boom", "2"), act("\\boxed{next}", "3"))))
    assert [r.is_error for r in broken.tool_results] == [True, True]
    assert "RuntimeError('the game broke')" in broken.tool_results[0].output
    assert "ignored: the environment failed" in broken.tool_results[1].output
    assert broken.state.data["actions"] == ["\\boxed{next}"]  # the failed action is not kept
    assert not broken.done
    # The half-changed GEM object was dropped; the next step replays the recorded actions.
    two = env.step(broken.state, Action(tool_calls=(act("\\boxed{next}", "4"),)))
    assert two.tool_results[0].output == "count 2"
    three = env.step(two.state, Action(tool_calls=(act("\\boxed{next}", "5"),)))
    assert three.terminated and three.info["correct"] and three.reward == 1.0
    env.close()


def test_environment_that_needs_a_download_names_the_data_set():
    with pytest.raises(ValueError, match=r"data set 'axon-rl/GSM-8k'.*data_path="):
        environment_registry.get(name="math:GSM8K", adapter="gem", tool_types=("python",))
    with pytest.raises(ValueError, match="NLTK's 'words' corpus"):
        environment_registry.get(name="game:Wordle-v0-easy", adapter="gem")
    with pytest.raises(ValueError, match="takes no local data"):
        environment_registry.get(name=GUESS, adapter="gem", data_path=str(GSM8K_SAMPLE))
    with pytest.raises(ValueError, match=r"unknown GEM environment 'game:GuessTheNumbr'.*did you"):
        environment_registry.get(name="game:GuessTheNumbr", adapter="gem")
    with pytest.raises(ValueError, match="unknown tool type 'browser'"):
        environment_registry.get(name=GUESS, adapter="gem", tool_types=("browser",))
    # A GEM environment that GEM itself cannot build (0.1.0's random 15-puzzle) says so.
    with pytest.raises(ValueError, match="GEM could not make 'game:FifteenPuzzle-v0-random'"):
        environment_registry.get(name="game:FifteenPuzzle-v0-random", adapter="gem")


def test_the_llenvs_gsm8k_line_works_on_local_data():
    env = environment_registry.get(
        name="math:GSM8K", adapter="gem", tool_types=("python",), data_path=str(GSM8K_SAMPLE)
    )
    try:
        assert isinstance(env, GSM8KEnvironment)
        state, _ = env.reset(options={"task_index": 0})
        reference = env.task(0).reference
        call = ToolCall(id="s", name="submit_answer", arguments={"answer": str(reference)})
        result = env.step(state, Action(tool_calls=(call,)))
        assert result.info["correct"] and result.reward == 1.0
    finally:
        env.close()


def test_importing_gem_through_the_adapter_keeps_the_root_logger_as_it_was():
    code = (
        "import logging\n"
        "from tooluse.envs.adapters.gem import environment_ids\n"
        "assert 'game:Sudoku-v0-easy' in environment_ids()\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), root.level)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["0", str(30)]  # no handler, WARNING: Python's defaults


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "gem", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'tooluse\[gem\]'"):
        environment_registry.get(name=GUESS, adapter="gem")


@pytest.mark.slow
def test_local_model_plays_a_guessing_game():
    from tooluse.local import LlamaCppBackend

    env = GemEnvironment(GUESS, size=1, max_steps=3)
    runner = TrajectoryRunner(
        environment=env,
        backend=LlamaCppBackend.default(max_tokens=64),
        sampling_params=SamplingParams(temperature=0.0, max_tokens=64),
        system_prompt="Play the game. Send each guess with the act tool.",
        max_turns=3,
    )
    trajectory = runner.run_trajectory(task_index=0)
    env.close()
    print(
        f"\nlocal model on {GUESS}: success={trajectory.success} steps={len(trajectory.steps)} "
        f"stop={trajectory.stop_reason} reward={trajectory.total_reward}"
    )
    calls = [c.id for m in trajectory.messages for c in m.tool_calls]
    answered = [m.result.call_id for m in trajectory.messages if m.result is not None]
    assert sorted(calls) == sorted(answered)
    assert 1 <= len(trajectory.steps) <= 3
    # Every text turn and every accepted act call reached GEM, in order; nothing else did.
    sent = trajectory.steps[-1].result.state.data["actions"]
    expected = sum(
        sum(1 for r in step.results if r.tool_name == "act" and not r.is_error) if step.calls else 1
        for step in trajectory.steps
    )
    assert len(sent) == expected
    for step in trajectory.steps:
        names = {s.name for s in step.result.signals}
        assert {"tool_validity", "tool_efficiency"} <= names
    assert trajectory.success == bool(
        trajectory.terminated and trajectory.steps[-1].result.info.get("correct")
    )
