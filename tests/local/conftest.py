"""Fixtures of the local-model tests: one real SmolLM2 backend per session."""

from __future__ import annotations

import pytest

from tooluse.local.demo_tools import demo_tools


@pytest.fixture(scope="session")
def backend():
    from tooluse.local import LlamaCppBackend

    instance = LlamaCppBackend.default(n_ctx=2048)
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def tools():
    return demo_tools()
