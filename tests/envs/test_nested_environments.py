"""nestful and complexfuncbench on nestful-wrapper's data: every gold sequence replays to a
perfect score, wrong calls get readable errors, and the papers' figures come out right."""

from __future__ import annotations

import functools
import json

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.envs import Action, TrajectoryRunner, environment_registry
from tooluse.envs.nested.environment import NO_MATCH
from tooluse.envs.nested.replay import memory_of, references, resolve
from tooluse.envs.nested.scoring import f1, nestful_metrics
from tooluse.messages import ToolCall
from tooluse.providers import register_model_prefix
from tooluse.providers.scripted import ScriptedBackend


@functools.cache
def env(name: str, **options):
    return environment_registry.get(name=name, **options)


def play(environment, index, turns):
    return TrajectoryRunner(environment=environment, backend=ScriptedBackend(turns)).run_trajectory(
        task_index=index
    )


def test_the_data_is_the_wrappers():
    assert len(env("nestful")) == 300 and len(env("complexfuncbench")) == 1000
    sources = {s.source for s in env("nestful").samples}
    assert sources == {"executable", "glaive", "sgd"}
    for name in ("nestful", "complexfuncbench"):
        train = {t.id for t in env(name, split="train").tasks}
        test = {t.id for t in env(name, split="test").tasks}
        assert not train & test and len(train | test) == len(env(name))


@pytest.mark.parametrize("name", ["nestful", "complexfuncbench"])
def test_every_gold_sequence_replays_to_a_perfect_score(name):
    environment = env(name)
    failed = []
    for index in range(len(environment)):
        trajectory = play(environment, index, environment.gold_script(index))
        metrics = trajectory.steps[-1].result.info["metrics"]
        calls = [c.id for m in trajectory.messages for c in m.tool_calls]
        results = [m.result.call_id for m in trajectory.messages if m.result is not None]
        assert sorted(calls) == sorted(results)  # one result per call id
        if not trajectory.success or min(metrics.values()) < 1.0:
            failed.append((environment.samples[index].id, metrics))
    assert not failed, failed[:5]


def test_nestful_outputs_are_made_up_so_that_nesting_means_copying_a_value():
    environment = env("nestful")
    index = next(i for i, s in enumerate(environment.samples) if s.id == "executable-0")
    sample = environment.samples[index]
    _, outputs, arguments = environment.replay(index)
    search = sample.calls[2]  # SkyScrapperFlightSearch(originSkyId="$var1.skyId$", ...)
    assert search.arguments["originSkyId"] == "$var1.skyId$"
    assert arguments[2]["originSkyId"] == outputs[0]["skyId"]  # the first call's output value
    assert outputs[0]["skyId"] != outputs[1]["skyId"]  # each value its own
    assert resolve("$var1.skyId$", {"var1": memory_of(outputs[0])}) == outputs[0]["skyId"]


def test_complexfuncbench_calls_give_their_recorded_responses():
    environment = env("complexfuncbench")
    sample = environment.samples[0]
    state, _ = environment.reset(options={"task_index": 0})
    _, outputs, arguments = environment.replay(0)
    call = ToolCall(id="1", name=sample.calls[0].name, arguments=arguments[0])
    result = environment.step(state, Action(tool_calls=(call,)))
    assert json.loads(result.tool_results[0].output) == sample.calls[0].response
    assert references(sample.calls[1].arguments)  # the next call takes values from it


def test_wrong_calls_get_errors_the_model_can_read():
    environment = env("nestful")
    state, _ = environment.reset(options={"task_index": 0})
    tool = state.observation.available_tools[0]
    wrong = ToolCall(id="w", name=tool.name, arguments={"query": "Atlantis"})
    unknown = ToolCall(id="u", name="teleport", arguments={})
    result = environment.step(state, Action(tool_calls=(wrong, unknown)))
    outputs = {r.call_id: r for r in result.tool_results}
    assert outputs["w"].is_error and outputs["w"].output == NO_MATCH
    assert outputs["u"].is_error and "unknown function" in outputs["u"].output
    assert not result.done  # NESTFUL lets the model try again


def test_complexfuncbench_ends_at_a_turn_whose_calls_all_miss():
    environment = env("complexfuncbench")
    state, _ = environment.reset(options={"task_index": 0})
    name = environment.samples[0].calls[0].name
    miss = ToolCall(id="m", name=name, arguments={"query": "Nowhere at all"})
    result = environment.step(state, Action(tool_calls=(miss,)))
    assert result.done and result.info["end"] == "no_call_matched"
    assert result.info["metrics"]["call_accuracy"] == 0.0 and result.info["correct"] is False


def test_a_dependent_call_before_its_input_does_not_match():
    environment = env("nestful")
    index = next(i for i, s in enumerate(environment.samples) if s.id == "executable-0")
    _, _, arguments = environment.replay(index)
    script = environment.gold_script(index)
    early = [script[2], *script[:2], *script[3:]]  # the flight search before the airports
    trajectory = play(environment, index, early)
    assert trajectory.steps[0].results[0].output == NO_MATCH
    metrics = trajectory.steps[-1].result.info["metrics"]
    assert metrics["full_sequence"] == 0.0 and metrics["partial_sequence"] < 1.0


def test_nestful_metrics_by_hand():
    gold = [("a", {"x": 1}), ("b", {"y": "$var1.z$"}), ("c", {})]
    # b and c in the other order, an extra wrong call of a: made calls 0, 2, 1
    predicted = [("a", {"x": 1}), ("c", {}), ("b", {"y": 5}), ("a", {"x": 2})]
    metrics = nestful_metrics(predicted, gold, [0, 2, 1, None])
    assert metrics["full_sequence"] == 0.0 and metrics["partial_sequence"] == 1.0
    assert metrics["name_f1"] == pytest.approx(2 * 0.75 * 1.0 / 1.75)
    assert metrics["call_f1"] == pytest.approx(2 * 0.75 * 1.0 / 1.75)
    assert nestful_metrics(gold, gold, [0, 1, 2])["full_sequence"] == 1.0
    assert f1([], []) == 1.0 and f1(["a"], ["b"]) == 0.0


def test_tools_are_the_gold_sequences_unless_all_are_asked_for():
    few = env("complexfuncbench").available_tools(0, {})
    names = {c.name for c in env("complexfuncbench").samples[0].calls}
    assert {t.name for t in few} == names
    every = env("complexfuncbench", all_tools=True).available_tools(0, {})
    assert len(every) == 40
    assert any(t.name == "Get_Hotel_Reviews_Tips" for t in every)  # "(Tips)" made a tool name


def test_eval_env_nestful_runs_and_reports_the_papers_figures(tmp_path):
    register_model_prefix(
        "nested-test", lambda rest, **kw: ScriptedBackend(["I do not know."] * 9), replace=True
    )
    args = ["eval", "env", "nestful", "-m", "nested-test:x", "--split", "test", "-n", "3"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    assert "reward full_sequence" in result.output and "reward name_f1" in result.output
    assert "nestful: solved 0/3" in result.output


def test_complexfuncbench_ends_a_sample_that_calls_on_after_its_gold_calls():
    environment = env("complexfuncbench")
    script = environment.gold_script(0)
    extra = [*script[:-1], script[0], script[-1]]  # the first call again, after all of them
    trajectory = play(environment, 0, extra)
    last = trajectory.steps[-1].result
    assert last.info["end"] == "called_after_done" and not trajectory.success
    assert last.info["metrics"]["call_accuracy"] == 1.0
