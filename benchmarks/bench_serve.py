"""``tooluse serve`` vs ``python -m llama_cpp.server`` on the same GGUF (the embedded SmolLM2),
same context and threads, one server at a time, through the same OpenAI-API HTTP requests:

1. generation tokens/s (plain text, no tools, fixed token count, temperature 0);
2. time to the first streamed content chunk;
3. tool calls on a fixed set of 12 questions with 3 tools (``tool_choice="auto"``): how many
   replies hold a call, how many of those calls are valid (JSON arguments that satisfy the
   tool's schema) and how many name the right tool;
4. 8 concurrent clients, each sending 3 requests in turn (text, forced and ``auto`` calls with
   the tools, some streamed): generated tokens/s of all of them together, for tooluse serve
   (its requests decoded together), tooluse serve ``--concurrency 1`` (one at a time) and
   llama_cpp.server (which answers one request at a time).

llama-cpp-python's server uses its ``chatml-function-calling`` format, the one it offers for
ChatML models such as SmolLM2.
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_batch's bound, beside it

from tooluse import ToolDefinition  # noqa: E402
from tooluse.errors import ToolArgumentError  # noqa: E402
from tooluse.local.model_files import default_model_path  # noqa: E402

N_CTX, THREADS = 4096, 2
TEXT_PROMPTS = (
    "Write a short paragraph about the sea.",
    "Explain what a compiler does.",
    "Describe a walk in the forest.",
)
GEN_TOKENS = 96


def _tool(name: str, description: str, prop: str, prop_description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {prop: {"type": "string", "description": prop_description}},
                "required": [prop],
            },
        },
    }


TOOLS = [
    _tool("get_weather", "Current weather for a city.", "city", "City name, e.g. Paris"),
    _tool(
        "get_time", "Current local time in a timezone.", "timezone", "IANA name, e.g. Asia/Tokyo"
    ),
    _tool("calculate", "Evaluate an arithmetic expression.", "expression", "e.g. 12 * 7"),
]
QUESTIONS = (
    ("What's the weather in Paris?", "get_weather"),
    ("Is it raining in London right now?", "get_weather"),
    ("How warm is it in Madrid today?", "get_weather"),
    ("Weather forecast for Tokyo?", "get_weather"),
    ("What time is it in Tokyo?", "get_time"),
    ("Current time in New York?", "get_time"),
    ("What's the local time in Berlin?", "get_time"),
    ("Tell me the time in Sydney.", "get_time"),
    ("What is 12 * 7?", "calculate"),
    ("Compute 345 + 678.", "calculate"),
    ("How much is 9 divided by 3?", "calculate"),
    ("What is 2 to the power of 10?", "calculate"),
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(command: list[str], health: str, log: Path) -> subprocess.Popen:
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-1500:]}")
        try:
            if httpx.get(health, timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError("server did not start")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def measure(base: str, model: str) -> dict[str, Any]:
    client = httpx.Client(base_url=base, timeout=300)
    client.post(  # warm-up: loads the model, fills caches
        "/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
    ).raise_for_status()
    rates, ttfts = [], []
    for prompt in TEXT_PROMPTS:
        body = {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": GEN_TOKENS,
            "temperature": 0.0,
        }
        started = time.perf_counter()
        reply = client.post("/chat/completions", json=body).json()
        elapsed = time.perf_counter() - started
        rates.append(reply["usage"]["completion_tokens"] / elapsed)
        started = time.perf_counter()
        with client.stream("POST", "/chat/completions", json={**body, "stream": True}) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    delta = json.loads(line[6:])["choices"]
                    if delta and delta[0]["delta"].get("content"):
                        ttfts.append(time.perf_counter() - started)
                        break
    definitions = {
        t["function"]["name"]: ToolDefinition.from_schema(
            t["function"]["name"], t["function"]["parameters"]
        )
        for t in TOOLS
    }
    called = valid = right = 0
    started = time.perf_counter()
    for question, expected in QUESTIONS:
        body = {
            "model": model,
            "messages": [{"role": "user", "content": question}],
            "tools": TOOLS,
            "tool_choice": "auto",
            "max_tokens": 64,
            "temperature": 0.0,
        }
        reply = client.post("/chat/completions", json=body)
        if reply.status_code != 200:
            continue
        calls = reply.json()["choices"][0]["message"].get("tool_calls") or []
        if not calls:
            continue
        called += 1
        function = calls[0]["function"]
        tool = definitions.get(function["name"])
        try:
            assert tool is not None
            tool.validate_arguments(json.loads(function["arguments"]))
            valid += 1
        except (AssertionError, ValueError, ToolArgumentError):
            pass
        right += function["name"] == expected
    return {
        "tokens_per_s": round(statistics.median(rates), 1),
        "ttft_s": round(statistics.median(ttfts), 3) if ttfts else None,
        "questions": len(QUESTIONS),
        "replies_with_call": called,
        "valid_calls": valid,
        "right_tool": right,
        "tool_seconds": round(time.perf_counter() - started, 1),
    }


CLIENTS = 8
# A forced call names its function: llama_cpp.server's chatml-function-calling format takes
# "auto", "none" or a named function, and fails on "required" (an assertion, a 500).
CONCURRENT_ASKS: tuple[tuple[str, Any], ...] = (
    ("Write a short paragraph about the sea.", None),
    ("What's the weather in Paris?", {"type": "function", "function": {"name": "get_weather"}}),
    ("What time is it in Tokyo?", "auto"),
    ("Describe a walk in the forest.", None),
    ("Is it raining in London right now?", "auto"),
    ("Compute 345 + 678.", {"type": "function", "function": {"name": "calculate"}}),
)


def _concurrent_body(model: str, index: int) -> dict[str, Any]:
    question, choice = CONCURRENT_ASKS[index % len(CONCURRENT_ASKS)]
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": question}],
        "max_tokens": 64,
        "temperature": 0.0,
    }
    if choice is not None:
        body.update(tools=TOOLS, tool_choice=choice)
    if index % 3 == 1:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


def _one_request(client: httpx.Client, body: dict[str, Any]) -> int:
    """Send ``body``; the completion tokens of its answer (streamed or not)."""
    if not body.get("stream"):
        reply = client.post("/chat/completions", json=body)
        reply.raise_for_status()
        return int(reply.json()["usage"]["completion_tokens"])
    tokens = 0
    with client.stream("POST", "/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                usage = json.loads(line[6:]).get("usage")
                if usage:
                    tokens = int(usage["completion_tokens"])
    return tokens


def engine_counters(base: str) -> dict[str, Any] | None:
    """The served local model's batch-engine counters, from tooluse serve's ``/health``
    (None for a server without them)."""
    response = httpx.get(base.removesuffix("/v1") + "/health", timeout=30)
    try:
        body = response.json() if response.status_code == 200 else None
    except ValueError:
        return None
    load = body.get("load") if isinstance(body, dict) else None
    if not isinstance(load, dict):
        return None
    return next((m["engines"]["main"] for m in load.values() if "engines" in m), None)


def measure_concurrent(base: str, model: str) -> dict[str, Any]:
    """``CLIENTS`` clients, each sending 3 requests in turn: tokens/s of all together (and,
    for tooluse serve, where its engine's time went)."""
    from concurrent.futures import ThreadPoolExecutor

    before = engine_counters(base)

    def client_run(number: int) -> int:
        with httpx.Client(base_url=base, timeout=600) as client:
            return sum(_one_request(client, _concurrent_body(model, number * 3 + i))
                       for i in range(3))  # fmt: skip

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        tokens = sum(pool.map(client_run, range(CLIENTS)))
    seconds = time.perf_counter() - started
    figures: dict[str, Any] = {
        "requests": CLIENTS * 3,
        "completion_tokens": tokens,
        "seconds": round(seconds, 1),
        "tokens_per_s": round(tokens / seconds, 1),
    }
    after = engine_counters(base) if before is not None else None
    if before is not None and after is not None:  # what the engine did between the readings
        from bench_batch import engine_time

        from tooluse.local.batching import EngineStats

        figures["engine"] = engine_time([EngineStats(**after)], [EngineStats(**before)])
    return figures


def _tooluse_serve(
    logs: Path, name: str, *extra: str, model: str = "local:base"
) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = start(
        [
            str(Path(sys.executable).with_name("tooluse")),
            "serve",
            "--model",
            model,
            "--port",
            str(port),
            *extra,
        ],  # fmt: skip
        f"http://127.0.0.1:{port}/health",
        logs / f"{name}.log",
    )
    return process, f"http://127.0.0.1:{port}/v1"


def main() -> dict[str, Any]:
    gguf = str(default_model_path())
    logs = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    figures: dict[str, Any] = {}
    # the same GGUF as llama_cpp.server serves, without the adapter
    ours, base = _tooluse_serve(logs, "tooluse")
    try:
        figures["tooluse_serve"] = measure(base, "local:base")
        figures["tooluse_serve_concurrent"] = measure_concurrent(base, "local:base")
    finally:
        stop(ours)
    one, base = _tooluse_serve(logs, "tooluse-one", "--concurrency", "1")
    try:
        figures["tooluse_serve_one_at_a_time"] = measure_concurrent(base, "local:base")
    finally:
        stop(one)
    port = free_port()
    theirs = start(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            gguf,
            "--port",
            str(port),
            "--n_ctx",
            str(N_CTX),
            "--n_threads",
            str(THREADS),
            "--n_threads_batch",
            str(THREADS),
            "--chat_format",
            "chatml-function-calling",
        ],
        f"http://127.0.0.1:{port}/v1/models",
        logs / "llama_cpp.log",
    )
    try:
        figures["llama_cpp_server"] = measure(f"http://127.0.0.1:{port}/v1", "local")
        figures["llama_cpp_server_concurrent"] = measure_concurrent(
            f"http://127.0.0.1:{port}/v1", "local"
        )
    finally:
        stop(theirs)
    a, b = figures["tooluse_serve"], figures["llama_cpp_server"]
    figures["tokens_per_s_ratio"] = round(a["tokens_per_s"] / b["tokens_per_s"], 3)
    if a["ttft_s"] and b["ttft_s"]:
        figures["ttft_ratio"] = round(a["ttft_s"] / b["ttft_s"], 3)
    print(f"{'':22}{'tooluse serve':>16}{'llama_cpp.server':>18}{'ratio':>8}")
    print(
        f"{'generation tok/s':22}{a['tokens_per_s']:>16}{b['tokens_per_s']:>18}{figures['tokens_per_s_ratio']:>8}"
    )
    print(
        f"{'time to first token s':22}{a['ttft_s']!s:>16}{b['ttft_s']!s:>18}{figures.get('ttft_ratio', '-')!s:>8}"
    )
    for key in ("replies_with_call", "valid_calls", "right_tool"):
        print(f"{key + ' /12':22}{a[key]:>16}{b[key]:>18}")
    together = figures["tooluse_serve_concurrent"]["tokens_per_s"]
    alone = figures["tooluse_serve_one_at_a_time"]["tokens_per_s"]
    theirs_together = figures["llama_cpp_server_concurrent"]["tokens_per_s"]
    figures["concurrent_over_one_at_a_time"] = round(together / alone, 2)
    figures["concurrent_over_llama_cpp_server"] = round(together / theirs_together, 2)
    print(f"{CLIENTS} concurrent clients, tokens/s of all: tooluse serve {together}, "
          f"--concurrency 1 {alone} ({figures['concurrent_over_one_at_a_time']}x), "
          f"llama_cpp.server {theirs_together} ({figures['concurrent_over_llama_cpp_server']}x)")  # fmt: skip
    batch = Path(__file__).with_name("results") / "batch.json"
    if batch.exists():  # the decode limit measured by bench_batch, for reading the ratios
        limit = json.loads(batch.read_text())["figures"]["limit_gain_at_8"]
        figures["bound_at_8"] = serving_bound(figures, limit)
        print(f"(the batched-decode limit at 8 sequences: {limit}x one sequence; with requests "
              f"read as they are, batching can give at most {figures['bound_at_8']}x)")  # fmt: skip
    return figures


def serving_bound(figures: dict[str, Any], gain: float) -> float:
    """The best ratio over one request at a time that batching can give the concurrent run:
    as ``bench_batch.batching_bound`` from the two servers' engine counters (the concurrent
    run's prompt reading, the one-at-a-time run's decoding ``gain`` times faster, the rest as
    it was). Without counters: the one-at-a-time run's generated tokens at a lone request's
    rate decoded ``gain`` times faster, the rest (prompts, HTTP, parsing) as it was."""
    alone = figures["tooluse_serve_one_at_a_time"]
    together = figures["tooluse_serve_concurrent"]
    if "engine" in alone and "engine" in together:
        from bench_batch import batching_bound

        return batching_bound(alone, together, gain)
    seconds = alone["seconds"]
    decode = min(seconds, alone["completion_tokens"] / figures["tooluse_serve"]["tokens_per_s"])
    return round(seconds / (seconds - decode + decode / gain), 2)


def concurrent_only(model: str) -> dict[str, Any]:
    """Part 4 alone for another model string of tooluse serve (``local:base#weights=q8_0``):
    its clients batched and one at a time, with the engine's counters (nothing is written)."""
    logs = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    figures: dict[str, Any] = {"model": model}
    for key, extra in (("together", ()), ("one_at_a_time", ("--concurrency", "1"))):
        process, base = _tooluse_serve(logs, key, *extra, model=model)
        try:
            figures[key] = measure_concurrent(base, model)
        finally:
            stop(process)
    figures["ratio"] = round(
        figures["together"]["tokens_per_s"] / figures["one_at_a_time"]["tokens_per_s"], 2
    )
    return figures


if __name__ == "__main__":
    # `--concurrent-only MODEL`: the concurrent clients on another model string, printed only
    if len(sys.argv) == 3 and sys.argv[1] == "--concurrent-only":
        print(json.dumps(concurrent_only(sys.argv[2]), indent=2))
    else:
        print(json.dumps(main(), indent=2))
