"""Suite-wide settings: runs logged by the code under test go to a temporary database, never to
the user's own run log, and caches (the training base model's conversion) to a temporary
directory shared by the session (both variables are inherited by the CLI subprocesses too)."""

from __future__ import annotations

import os
import shutil
import signal

import pytest


def pytest_configure(config):
    """Under pytest-xdist each worker gets an equal share of the CPUs as ``OMP_NUM_THREADS``,
    which torch and the local model's default thread count read (CLI subprocesses inherit it).
    Two workers each spinning llama.cpp or torch on every core oversubscribe them: on a busy
    2-core machine a 3-second generation took over 300 seconds."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if workers.isdigit() and int(workers) > 1 and "OMP_NUM_THREADS" not in os.environ:
        from tooluse.local.threads import usable_cpus

        os.environ["OMP_NUM_THREADS"] = str(max(1, usable_cpus() // int(workers)))
    # A shell that starts the run in the background (`make test &`) hands it SIGINT ignored,
    # and an ignored signal stays ignored in every process a test starts: the Ctrl-C tests'
    # `tooluse` processes would never see their Ctrl-C. Caught signals are reset at exec.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def private_run_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("runlog") / "logs.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLUSE_LOG_PATH", str(path))
        yield path


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLUSE_CACHE_DIR", str(path))
        yield path
    # pytest keeps the last three sessions' temporary folders: not half a GB of weights each
    shutil.rmtree(path, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``--dist loadgroup``) the training tests share one worker: each worker
    is a session with its own cache, so spreading them would convert the base model twice."""
    for item in items:
        if item.path.parent.name == "train":
            item.add_marker(pytest.mark.xdist_group("train"))
