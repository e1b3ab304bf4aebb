"""`tooluse eval env` options checked before anything loads."""

from __future__ import annotations

from typer.testing import CliRunner

from tooluse.cli.app import app

runner = CliRunner()


def test_a_tool_choice_other_than_auto_or_required_is_refused_before_the_model_loads():
    args = ["eval", "env", "math:arithmetic", "-m", "no-such-provider:x", "--tool-choice"]
    result = runner.invoke(app, [*args, "sometimes"])
    assert result.exit_code == 2
    assert "--tool-choice is auto or required, not 'sometimes'" in result.output
