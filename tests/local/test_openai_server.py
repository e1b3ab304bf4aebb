"""End to end over HTTP: llama-cpp-python's OpenAI-compatible server on 127.0.0.1 serving the
embedded model, driven by the tool loop through ``OpenAIBackend``."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time

import httpx
import pytest

import tooluse
from tooluse import SamplingParams
from tooluse.local.demo_tools import demo_tools
from tooluse.local.model_files import default_model_path
from tooluse.local.threads import default_threads

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    # llama_cpp.server's dependencies are in the dev extra (make install): a missing one is a
    # broken install, so it fails here instead of skipping.
    assert importlib.util.find_spec("fastapi"), "fastapi missing: pip install 'tooluse[dev]'"
    port = free_port()
    # a file, not a pipe: llama.cpp logs a lot while loading and a full pipe would block it
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            # both counts: the server's own defaults take half and all of the host's CPUs
            "--n_threads",
            str(default_threads()),
            "--n_threads_batch",
            str(default_threads()),
            # llama-cpp-python's function-calling prompt and grammar for ChatML models
            "--chat_format",
            "chatml-function-calling",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start within 120 s")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_tool_loop_through_openai_backend(server_url):
    from tooluse.providers.openai_backend import OpenAIBackend

    backend = OpenAIBackend(model="smollm2", base_url=server_url, api_key="none", timeout=120)
    result = tooluse.run(
        backend,
        "What's the weather in Paris?",
        tools=demo_tools(),
        tool_choice="get_weather",  # forced on the first round, then auto
        params=SamplingParams(max_tokens=96, temperature=0.0),
        max_tool_iters=2,
    )
    assert result.trail, "the server's model made no tool call"
    first = result.trail[0]
    assert first.name == "get_weather"
    assert isinstance(first.arguments.get("city"), str) and first.arguments["city"]
    assert not first.is_error and "temperature is" in first.output
    # every call id in the history is answered exactly once
    calls = [c.id for m in result.messages for c in m.tool_calls]
    answers = [m.tool_call_id for m in result.messages if m.role == "tool"]
    assert sorted(calls) == sorted(answers)
    assert result.usage.requests >= 2
