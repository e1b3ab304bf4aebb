"""The npm packages the MCP tests run, installed by ``make npm-tools`` under tests/npm (see its
package.json): the reference server ``@modelcontextprotocol/server-everything``, the official
conformance suite ``@modelcontextprotocol/conformance`` and the Node 22 they run on (the npm
``node`` package)."""

from __future__ import annotations

from pathlib import Path

import pytest

NPM = Path(__file__).parent / "npm" / "node_modules"


def npm_path(relative: str) -> str:
    """A file of an installed npm package; the test is skipped, saying how to install them,
    when they are not (``make test`` always installs them first)."""
    path = NPM / relative
    if not path.exists():
        pytest.skip(f"{relative} is not installed under tests/npm: run `make npm-tools`")
    return str(path)


def node() -> str:
    """The Node 22 binary of the npm ``node`` package."""
    return npm_path("node/bin/node")


def everything_server(transport: str = "stdio") -> list[str]:
    """The command starting server-everything (``stdio`` or ``streamableHttp``)."""
    script = npm_path("@modelcontextprotocol/server-everything/dist/index.js")
    return [node(), script, transport]


def conformance() -> list[str]:
    """The command running the conformance suite's CLI."""
    return [node(), npm_path("@modelcontextprotocol/conformance/dist/index.js")]
