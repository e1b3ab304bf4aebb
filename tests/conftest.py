"""Suite-wide settings: runs logged by the code under test go to a temporary database, never to
the user's own run log, and caches (the training base model's conversion) to a temporary
directory shared by the session (both variables are inherited by the CLI subprocesses too)."""

from __future__ import annotations

import os

import pytest


def _set_for_session(name, value):
    previous = os.environ.get(name)
    os.environ[name] = value
    return previous


def _restore(name, previous):
    if previous is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = previous


@pytest.fixture(scope="session", autouse=True)
def private_run_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("runlog") / "logs.db"
    previous = _set_for_session("TOOLUSE_LOG_PATH", str(path))
    yield path
    _restore("TOOLUSE_LOG_PATH", previous)


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache")
    previous = _set_for_session("TOOLUSE_CACHE_DIR", str(path))
    yield path
    _restore("TOOLUSE_CACHE_DIR", previous)
