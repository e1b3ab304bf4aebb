"""pass^k and pass@k for every environment: a scripted model whose successes per task and
try are known gives the exact figures, in the summary, summary.json, the printed table and
the HTML report's chart; runs resume, and the Ray engine gives the same."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import pytest
import seeded_key
from seeded_key import RIGHT, TASKS, SeededBackend
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.envs import ArithmeticEnvironment, TrajectoryRunner, environment_registry
from tooluse.evals.evaluation import format_summary, pass_hat_k
from tooluse.evals.report import load_run, render_report
from tooluse.evals.report_passk import pass_k_curves
from tooluse.providers import register_model_prefix
from tooluse.providers.base import SamplingParams


def expected(k: int) -> tuple[float, float]:
    """(pass@k, pass^k) by hand: 4 tries per task, 4, 2 and 0 of them right."""
    rights = [len(RIGHT[i]) for i in range(3)]
    at = [1 - Fraction(math.comb(4 - c, k), math.comb(4, k)) for c in rights]
    hat = [Fraction(math.comb(c, k), math.comb(4, k)) for c in rights]
    return float(sum(at) / 3), float(sum(hat) / 3)


def runner(backend):
    return TrajectoryRunner(
        environment=ArithmeticEnvironment(tasks=TASKS, tool_types=()),
        backend=backend,
        sampling_params=SamplingParams(temperature=0.7),
    )


def test_pass_hat_k_estimator():
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)  # C(2,2)/C(4,2)
    with pytest.raises(ValueError, match=r"pass\^5 needs at least 5 samples"):
        pass_hat_k(4, 4, 5)


def test_summary_has_pass_at_k_and_pass_hat_k_for_every_k(tmp_path):
    backend = SeededBackend()
    runner(backend).run_evaluation(samples_per_task=4, out=tmp_path, progress=False)
    assert sorted(backend.seeds) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]  # each try its seed
    summary = json.loads((tmp_path / "summary.json").read_text())
    for k in range(1, 5):
        at, hat = expected(k)
        assert summary["pass_at_k"][str(k)] == pytest.approx(at)
        assert summary["pass_hat_k"][str(k)] == pytest.approx(hat)
    assert summary["pass_hat_k"]["1"] == pytest.approx(0.5) and summary["pass_hat_k"][
        "4"
    ] == pytest.approx(1 / 3)
    table = format_summary(summary)
    assert re.search(r"pass\^4\s+0\.333", table) and re.search(r"pass@2\s+", table)
    # Resumed: nothing runs again and the figures stay.
    again = runner(SeededBackend()).run_evaluation(samples_per_task=4, out=tmp_path, progress=False)
    assert again.run.ran == 0 and again.summary["pass_hat_k"] == summary["pass_hat_k"]


def test_the_report_charts_pass_hat_k_against_k(tmp_path):
    runner(SeededBackend()).run_evaluation(samples_per_task=4, out=tmp_path / "run", progress=False)
    run = load_run(tmp_path / "run")
    curve = pass_k_curves(run.records)
    assert curve == pytest.approx({k: expected(k)[1] for k in range(1, 5)})
    page = render_report([run])
    assert "Reliability: pass^k" in page and "pass^4 0.333" in page
    assert page.count("<circle") >= 4 and "<polyline" in page
    single = tmp_path / "single"
    runner(SeededBackend()).run_evaluation(samples_per_task=1, out=single, progress=False)
    assert "Reliability: pass^k" not in render_report([load_run(single)])  # one try: no chart


def test_the_cli_prints_pass_hat_k_with_k_samples(tmp_path):
    register_model_prefix("seeded-test", lambda rest, **kw: SeededBackend(), replace=True)
    environment_registry.register(
        "pass-k-test",
        lambda tool_types, **kw: ArithmeticEnvironment(tasks=TASKS, tool_types=()),
        replace=True,
    )
    args = ["eval", "env", "pass-k-test", "-m", "seeded-test:x", "--no-python"]
    args += ["-k", "4", "--temperature", "0.7", "--out", str(tmp_path), "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.search(r"pass\^1\s+0\.500", result.output) and "pass^4" in result.output


@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_the_ray_engine_gives_the_same_pass_hat_k(tmp_path):
    import ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(seeded_key)  # Ray's workers cannot import it by name
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = runner(SeededBackend()).run_evaluation(
            samples_per_task=4,
            out=tmp_path / "ray",
            engine="ray",
            workers=2,
            make_runner=seeded_key.make_runner,
            progress=False,
        )
    finally:
        ray.shutdown()
    assert remote.summary["engine"] == "ray"
    for k in range(1, 5):
        assert remote.summary["pass_hat_k"][str(k)] == pytest.approx(expected(k)[1])
