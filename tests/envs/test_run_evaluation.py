"""run_evaluation on the shared engine: JSONL as trajectories finish, resume, pass@k, summary."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from answer_key import AnswerKeyBackend
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.envs import ARITHMETIC_TASKS, ArithmeticEnvironment, TrajectoryRunner
from tooluse.evals.evaluation import pass_at_k, summarize
from tooluse.providers import register_model_prefix

HERE = Path(__file__).parent


def runner(backend):
    return TrajectoryRunner(environment=ArithmeticEnvironment(tool_types=()), backend=backend)


def read_keys(path):
    return [json.loads(line)["key"] for line in Path(path).read_text().splitlines()]


def test_pass_at_k_estimator():
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 4) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(2, 1, 2) == 1.0
    with pytest.raises(ValueError, match="pass@3 needs at least 3 samples"):
        pass_at_k(2, 1, 3)


def test_evaluation_writes_trajectories_and_summary(tmp_path):
    result = runner(AnswerKeyBackend(wrong_every=2)).run_evaluation(
        task_indices=[0, 1, 2], samples_per_task=2, out=tmp_path, progress=False
    )
    keys = read_keys(tmp_path / "trajectories.jsonl")
    assert sorted(keys) == sorted(f"{i}/{s}" for i in range(3) for s in range(2))
    assert [r["key"] for r in result.records] == ["0/0", "0/1", "1/0", "1/1", "2/0", "2/1"]
    # Sequential requests: every second one is wrong, so each task has one right sample.
    assert [r["success"] for r in result.records] == [True, False] * 3
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == result.summary
    assert summary["success_rate"] == 0.5
    assert summary["pass_at_k"] == {"1": 0.5, "2": 1.0}
    assert summary["reward_by_name"]["correctness"] == 0.5
    assert summary["reward_by_name"]["tool_validity"] == 1.0
    assert summary["reward_by_type"] == {"outcome": 0.5, "step": 1.0}
    assert summary["calls_per_trajectory"] == 1.0
    assert summary["ran"] == 6 and summary["skipped"] == 0
    record = result.records[0]
    assert record["rewards"] == {"correctness": 1.0, "tool_validity": 1.0, "tool_efficiency": 1.0}
    assert record["seconds"] >= 0 and record["messages"][0]["role"] == "user"
    # A second run resumes everything: nothing is played again.
    again = runner(AnswerKeyBackend()).run_evaluation(
        task_indices=[0, 1, 2], samples_per_task=2, out=tmp_path, progress=False
    )
    assert again.run.ran == 0 and again.run.skipped == 6
    assert len(read_keys(tmp_path / "trajectories.jsonl")) == 6


def test_resume_after_a_kill_loses_and_repeats_nothing(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from answer_key import AnswerKeyBackend
        from tooluse.envs import ArithmeticEnvironment, TrajectoryRunner
        runner = TrajectoryRunner(environment=ArithmeticEnvironment(tool_types=()),
                                  backend=AnswerKeyBackend(delay=0.3))
        runner.run_evaluation(samples_per_task=3, out={str(tmp_path)!r}, concurrency=2,
                              progress=False)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    path = tmp_path / "trajectories.jsonl"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if path.exists() and len(path.read_text().splitlines()) >= 5:
                break
            assert child.poll() is None, "the evaluation ended before it could be killed"
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    before = read_keys(path)
    total = 3 * len(ARITHMETIC_TASKS)
    assert 5 <= len(before) < total
    result = runner(AnswerKeyBackend()).run_evaluation(
        samples_per_task=3, out=tmp_path, progress=False
    )
    after = read_keys(path)
    assert len(after) == len(set(after)) == total  # 0 repeated
    tasks = range(len(ARITHMETIC_TASKS))
    assert set(after) == {f"{i}/{s}" for i in tasks for s in range(3)}  # 0 lost
    assert result.run.skipped == len(before) and result.run.ran == total - len(before)
    assert result.summary["success_rate"] == 1.0


def test_corrupt_lines_are_set_aside_and_rerun(tmp_path):
    first = runner(AnswerKeyBackend()).run_evaluation(
        task_indices=[0, 1, 2], out=tmp_path, progress=False
    )
    assert first.run.ran == 3
    path = tmp_path / "trajectories.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:40] + "#garbage"
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(RuntimeWarning, match=r"1 corrupt line\(s\) \(2\) moved"):
        result = runner(AnswerKeyBackend()).run_evaluation(
            task_indices=[0, 1, 2], out=tmp_path, progress=False
        )
    assert result.run.ran == 1 and result.run.skipped == 2
    assert sorted(read_keys(path)) == ["0/0", "1/0", "2/0"]
    assert (tmp_path / "trajectories.corrupt.jsonl").read_text().endswith("#garbage\n")


def test_a_failing_trajectory_is_recorded_and_the_run_goes_on(tmp_path):
    class Flaky(AnswerKeyBackend):
        def generate_with_tools(self, messages, tools=(), params=None, tool_choice="auto"):
            if "train" in messages[-1].content:
                raise ConnectionError("model server went away")
            return super().generate_with_tools(messages, tools, params, tool_choice)

    result = runner(Flaky()).run_evaluation(task_indices=[0, 2, 3], out=tmp_path, progress=False)
    errors = [r for r in result.records if r.get("error")]
    assert [r["key"] for r in errors] == ["2/0"]
    assert "ConnectionError: model server went away" in errors[0]["error"]
    assert result.summary["errors"] == 1 and result.summary["success_rate"] == 1.0


def test_summarize_counts_only_recorded_trajectories():
    assert summarize([])["success_rate"] is None


def test_ray_engine_needs_a_picklable_runner_factory(tmp_path):
    with pytest.raises(ValueError, match="make_runner="):
        runner(AnswerKeyBackend()).run_evaluation(out=tmp_path, engine="ray", progress=False)


def test_cli_eval_env_prints_the_summary_table_and_resumes(tmp_path):
    register_model_prefix(
        "answer-key-test", lambda rest, **options: AnswerKeyBackend(), replace=True
    )
    args = [
        "eval",
        "env",
        "math:word_problems",
        "--model",
        "answer-key-test:x",
        "--no-python",
        "--limit",
        "3",
        "--samples",
        "2",
        "--out",
        str(tmp_path),
        "--quiet",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "pass@2" in result.output and "reward correctness" in result.output
    assert "math:word_problems: solved 6/6 (100.0%)" in result.output
    again = CliRunner().invoke(app, args)
    assert re.search(r"ran / resumed\s+0 / 6", again.output), again.output
    bad = CliRunner().invoke(app, ["eval", "env", "math:gsm8k", "--model", "answer-key-test:x"])
    assert bad.exit_code == 2 and "math:gsm8k needs data_path" in bad.output
    unknown = CliRunner().invoke(app, ["eval", "env", "nope", "--model", "answer-key-test:x"])
    assert unknown.exit_code == 2 and "unknown environment 'nope'" in unknown.output


@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_ray_engine_gives_the_same_trajectories_as_the_local_engine(tmp_path):
    import answer_key
    import ray
    from ray import cloudpickle

    # Ray's workers cannot import this test helper by name: ship it by value.
    cloudpickle.register_pickle_by_value(answer_key)
    local = runner(AnswerKeyBackend()).run_evaluation(
        samples_per_task=2, out=tmp_path / "local", progress=False
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = runner(AnswerKeyBackend()).run_evaluation(
            samples_per_task=2,
            out=tmp_path / "ray",
            engine="ray",
            workers=2,
            make_runner=answer_key.make_runner,
            progress=False,
        )
    finally:
        ray.shutdown()

    def outcome(records):
        return [(r["key"], r["success"], r["answer"], r["total_reward"]) for r in records]

    assert outcome(remote.records) == outcome(local.records)
    assert (
        len(remote.records) == 2 * len(ARITHMETIC_TASKS) and remote.summary["success_rate"] == 1.0
    )
    assert remote.summary["engine"] == "ray"
