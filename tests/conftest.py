"""Suite-wide settings: runs logged by the code under test go to a temporary database, never to
the user's own run log (``TOOLUSE_LOG_PATH`` is inherited by the CLI subprocesses too)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_run_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("runlog") / "logs.db"
    previous = os.environ.get("TOOLUSE_LOG_PATH")
    os.environ["TOOLUSE_LOG_PATH"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("TOOLUSE_LOG_PATH", None)
    else:
        os.environ["TOOLUSE_LOG_PATH"] = previous
