"""A real HTTP server on 127.0.0.1 that answers with scripted replies and records requests."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    sse: list[Any] | None = None  # dicts (sent as JSON) or raw strings; "[DONE]" appended
    sse_events: list[tuple[str, Any]] | None = None  # (event name, data) pairs, Anthropic style
    raw: bytes | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    sleep: float = 0.0
    done_marker: bool = True
    # Send only this many bytes of the body (announcing all of it), then close the connection.
    cut_after: int | None = None
    # Seconds to stall (connection open, nothing sent) after the first ``cut_after`` bytes.
    stall: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes = b""
    method: str = "POST"


class ScriptedHTTPServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                with outer._lock:
                    outer.requests.append(
                        Recorded(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            raw_body=raw,
                        )
                    )
                    reply = outer.replies.pop(0) if outer.replies else Reply(status=599)
                if reply.sleep:
                    time.sleep(reply.sleep)
                try:
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, reply: Reply) -> None:
                if reply.sse is not None or reply.sse_events is not None:
                    chunks = []
                    for item in reply.sse or []:
                        data = item if isinstance(item, str) else json.dumps(item)
                        chunks.append(f"data: {data}\n\n")
                    for name, item in reply.sse_events or []:
                        chunks.append(f"event: {name}\ndata: {json.dumps(item)}\n\n")
                    if reply.sse is not None and reply.done_marker:
                        chunks.append("data: [DONE]\n\n")
                    payload = "".join(chunks).encode()
                    content_type = "text/event-stream"
                elif reply.raw is not None:
                    payload, content_type = reply.raw, reply.content_type
                else:
                    payload = json.dumps(reply.json if reply.json is not None else {}).encode()
                    content_type = reply.content_type
                self.send_response(reply.status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if reply.cut_after is not None:
                    self.wfile.write(payload[: reply.cut_after])
                    self.wfile.flush()
                    if reply.stall:
                        time.sleep(reply.stall)
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = ScriptedHTTPServer()
    yield srv
    srv.close()


@pytest.fixture(autouse=True)
def fresh_sampling_reports(monkeypatch):
    """Dropped sampling parameters are logged once per process: each test starts afresh, so
    what it sees does not depend on the tests run before it."""
    from tooluse.providers import claude_models

    monkeypatch.setattr(claude_models, "_reported", set())
