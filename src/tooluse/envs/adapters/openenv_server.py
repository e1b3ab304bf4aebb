"""Run an OpenEnv environment server here, as a uvicorn subprocess on a local port.

::

    server = OpenEnvServer("guess_server:app", app_dir="envs/guess")
    server.base_url                           # 'http://127.0.0.1:<free port>'
    server.close()

Used by ``adapter="openenv"`` (:mod:`tooluse.envs.adapters.openenv`) for ``server=...``. It
needs no OpenEnv import here: the server process imports its own environment; what it speaks
is plain HTTP (``GET /health``, ``GET /schema``) and the WebSocket session protocol.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import httpx

__all__ = ["OpenEnvServer", "fetch_schema"]


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class OpenEnvServer:
    """An OpenEnv server run here: ``python -m uvicorn APP`` on ``host`` and a free port.

    ``app`` is the ASGI app as uvicorn names it (``"package.server.app:app"``); ``app_dir`` is
    put first on its import path; ``environ`` adds environment variables for the server. The
    constructor returns once ``GET /health`` answers; a server that exits first raises
    ``RuntimeError`` with the end of its output, one that is not up within ``startup_timeout``
    seconds raises ``TimeoutError``. :meth:`close` stops it.
    """

    def __init__(
        self,
        app: str,
        *,
        app_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 60.0,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.app = app
        self.port = port or _free_port(host)
        self.base_url = f"http://{host}:{self.port}"
        command = [sys.executable, "-m", "uvicorn", app, "--host", host, "--port", str(self.port)]
        command += ["--log-level", "warning"]
        if app_dir is not None:
            command += ["--app-dir", str(app_dir)]
        # The output goes to a file: a pipe nobody reads would block a chatty server.
        self._log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **dict(environ or {})},
        )
        try:
            self._wait_ready(startup_timeout)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise RuntimeError(
                    f"the OpenEnv server {self.app!r} exited with code {code} before it was "
                    f"ready; its output ends with:\n{self.output()[-2000:]}"
                )
            try:
                if httpx.get(f"{self.base_url}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the OpenEnv server {self.app!r} did not answer GET /health on "
                    f"{self.base_url} within {timeout:g} s"
                )
            time.sleep(0.1)

    def output(self) -> str:
        """What the server printed so far."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def fetch_schema(base_url: str, *, timeout: float) -> dict[str, Any]:
    """The server's ``GET /schema`` (``ConnectionError`` when no server answers)."""
    http = base_url.replace("wss://", "https://", 1).replace("ws://", "http://", 1)
    url = f"{http.rstrip('/')}/schema"
    try:
        response = httpx.get(url, timeout=timeout)
    except httpx.HTTPError as exc:
        raise ConnectionError(
            f"no OpenEnv server answers at {base_url} ({type(exc).__name__}: {exc}); start it, "
            "or pass server='module:app' to start one here"
        ) from exc
    if response.status_code != 200:
        raise ConnectionError(
            f"{base_url} is not an OpenEnv server: GET /schema answered {response.status_code}"
        )
    body = response.json()
    if not isinstance(body, dict) or not isinstance(body.get("action"), dict):
        raise ConnectionError(f"{base_url} is not an OpenEnv server: /schema has no action schema")
    return body
