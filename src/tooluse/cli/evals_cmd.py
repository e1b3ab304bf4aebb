"""`tooluse eval` commands.

- ``tooluse eval bfcl --model local --limit 3``: BFCL-style function-calling accuracy;
- ``tooluse eval env NAME --model local --out DIR``: play a tool environment's tasks on the
  run engine (see :mod:`tooluse.cli.env_cmd`);
- ``tooluse eval tau2 --domain telecom --solo --model local``: a τ²-bench domain (see
  :mod:`tooluse.cli.tau2_cmd`).
"""

from __future__ import annotations

import typer

from tooluse.cli.bfcl_cmd import register_bfcl_command
from tooluse.cli.env_cmd import register_env_command
from tooluse.cli.tau2_cmd import register_tau2_command


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the main app."""
    eval_app = typer.Typer(
        help="Evaluate models: `eval bfcl` (function-calling accuracy on BFCL data) and "
        "`eval env` (trajectories in tool environments, pass@k, pass^k and rewards), "
        "`eval tau2` (a τ²-bench domain)."
    )
    app.add_typer(eval_app, name="eval")

    register_bfcl_command(eval_app)  # real BFCL data, resumable runs, local or Ray engine
    register_env_command(eval_app)  # trajectories in the tool environments
    register_tau2_command(eval_app)  # τ²-bench: eval env tau2:DOMAIN with its options
