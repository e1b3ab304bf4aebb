"""A real ``tooluse serve`` process on 127.0.0.1, and loopback helpers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tooluse_command() -> list[str]:
    script = Path(sys.executable).with_name("tooluse")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tooluse.cli.app"]


def start_server(
    args: list[str], log_path: Path, timeout: float = 120
) -> tuple[subprocess.Popen, str]:
    """Start ``tooluse serve`` with ``args`` on a free port; return the process and base URL."""
    port = free_port()
    log = log_path.open("wb")
    process = subprocess.Popen(
        [*tooluse_command(), "serve", "--port", str(port), *args],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"tooluse serve exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("tooluse serve did not start in time")
        time.sleep(0.3)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def local_server(tmp_path_factory) -> Iterator[str]:
    """``tooluse serve --model local``; yields the base URL (``.../v1`` is the API)."""
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    process, base = start_server(["--model", "local", "--max-queue", "40"], log_path)
    try:
        yield base
    finally:
        stop(process)
