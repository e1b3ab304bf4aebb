"""The llenvs seed's import paths, with ``tooluse`` in place of ``llenvs``, and the paths that
were there before them."""

from __future__ import annotations

import json

from answer_key import AnswerKeyBackend


def test_seed_example_imports_and_runs(tmp_path):
    from tooluse.envs import ArithmeticEnvironment
    from tooluse.evals.evaluation import TrajectoryRunner
    from tooluse.evals.evaluation.runner import run_evaluation

    runner = TrajectoryRunner(
        environment=ArithmeticEnvironment(tool_types=()), backend=AnswerKeyBackend()
    )
    assert runner.run_trajectory(task_index=0).success
    result = run_evaluation(runner, out=tmp_path, task_indices=[0, 1], progress=False)
    assert result.summary["success_rate"] == 1.0
    assert json.loads((tmp_path / "summary.json").read_text()) == result.summary


def test_earlier_paths_name_the_same_objects():
    import tooluse.envs
    import tooluse.evals.evaluation
    import tooluse.evals.evaluation.runner

    assert tooluse.evals.evaluation.TrajectoryRunner is tooluse.envs.TrajectoryRunner
    assert tooluse.evals.evaluation.run_evaluation is tooluse.evals.evaluation.runner.run_evaluation
    for name in ("pass_at_k", "summarize", "format_summary", "EvaluationResult", "RunnerSpec"):
        assert getattr(tooluse.evals.evaluation, name) is getattr(
            tooluse.evals.evaluation.runner, name
        )
