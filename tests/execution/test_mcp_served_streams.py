"""The event streams of ``tooluse mcp serve --http`` can be resumed: each opens with a priming
event (an id, no data, the reconnection delay) and a client that lost one gets what it missed
by reconnecting with ``Last-Event-ID``. Raw HTTP against the real server subprocess; the store's
bounds as logic."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tooluse.execution.mcp.event_store import MemoryEventStore

TOOLUSE = [sys.executable, "-c", "from tooluse.cli.app import main; main()"]
TASK_TOOLS = str(Path(__file__).parent / "mcp_servers" / "task_tools.py")
PROTOCOL = "2025-11-25"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served_url():
    port = free_port()
    process = subprocess.Popen(
        [*TOOLUSE, "mcp", "serve", TASK_TOOLS, "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):
            if process.poll() is not None:
                raise RuntimeError(process.stderr.read())
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=15)
        process.stderr.close()


def events(body: str) -> list[dict[str, str]]:
    """The events of an event stream, each as its fields."""
    found = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        if fields:
            found.append(fields)
    return found


def post(http: httpx2.Client, url: str, message: dict, session: str | None = None):
    headers = {"Accept": "application/json, text/event-stream", "mcp-protocol-version": PROTOCOL}
    if session:
        headers["mcp-session-id"] = session
    return http.post(url, json=message, headers=headers)


@pytest.mark.slow
def test_an_event_stream_is_primed_and_resumed_after_a_break(served_url):
    with httpx2.Client(timeout=30) as http:
        hello = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        opened = post(
            http, served_url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        )
        session = opened.headers["mcp-session-id"]
        post(http, served_url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {"name": "wait_then_echo", "arguments": {"text": "resumed", "seconds": 0.2}}
        answered = post(
            http,
            served_url,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
            session,
        )
        stream = events(answered.text)
        # The client "lost" the stream right after its priming event: it reconnects from there
        # (the reconnected stream stays open: read until the missed reply came).
        headers = {
            "Accept": "text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": PROTOCOL,
            "Last-Event-ID": stream[0]["id"],
        }
        replayed = []
        with http.stream("GET", served_url, headers=headers) as again:
            for line in again.iter_lines():
                if line.startswith("data:") and line[5:].strip():
                    replayed.append(json.loads(line[5:]))
                    break
    priming, result = stream[0], stream[1]
    assert priming["id"] and priming.get("data", "") == "" and priming["retry"] == "1000"
    assert json.loads(result["data"])["result"]["content"][0]["text"] == "resumed"
    assert replayed and replayed[0]["id"] == 2
    assert replayed[0]["result"]["content"][0]["text"] == "resumed"


async def test_the_store_replays_one_streams_later_events_in_order():
    store = MemoryEventStore()
    first = await store.store_event("a", None)
    await store.store_event("b", "other stream")
    second = await store.store_event("a", "one")
    await store.store_event("a", "two")
    sent = []

    async def send(event) -> None:
        sent.append((event.message, event.event_id))

    assert await store.replay_events_after(first, send) == "a"
    assert [message for message, _ in sent] == ["one", "two"]
    assert sent[0][1] == second
    assert await store.replay_events_after("unknown", send) is None


async def test_the_store_keeps_only_the_latest_events():
    store = MemoryEventStore(max_events=3, max_bytes=10_000)
    ids = [await store.store_event("s", f"message {i}") for i in range(5)]
    assert await store.replay_events_after(ids[0], lambda e: asyncio.sleep(0)) is None  # dropped
    kept = []

    async def send(event) -> None:
        kept.append(event.message)

    assert await store.replay_events_after(ids[2], send) == "s"
    assert kept == ["message 3", "message 4"]
    small = MemoryEventStore(max_events=100, max_bytes=30)
    big = await small.store_event("s", "x" * 25)
    await small.store_event("s", "y" * 25)  # over the byte budget: the oldest goes
    assert await small.replay_events_after(big, send) is None
