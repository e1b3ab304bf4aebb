"""A small Chrome DevTools Protocol client for the docs' browser test.

Headless Chromium is started with ``--remote-debugging-pipe``: commands go in on its file
descriptor 3 and replies come out on 4, as NUL-terminated JSON, so no driver, no port and no
websocket library is needed (the system ``chromium`` of ``make chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tooluse.evals.browser import find_chromium


class Browser:
    """One headless Chromium with one page, driven over the DevTools pipe."""

    def __init__(self, *, width: int = 1280, height: int = 900) -> None:
        # Chromium's helper processes may still write to the profile while it is removed
        self._profile = tempfile.TemporaryDirectory(
            prefix="tooluse-docs-chromium-", ignore_cleanup_errors=True
        )
        to_child_read, self._to_child = os.pipe()
        self._from_child, from_child_write = os.pipe()

        def wire_fds() -> None:  # in the child: its fd 3 reads commands, fd 4 writes replies
            os.dup2(to_child_read, 3)
            os.dup2(from_child_write, 4)

        self._process = subprocess.Popen(
            [
                find_chromium(),
                "--headless",
                "--no-sandbox",  # root in containers cannot use the setuid sandbox
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--hide-scrollbars",
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            preexec_fn=wire_fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_read)
        os.close(from_child_write)
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self._from_child, 65536)
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self._lock:
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self._events.append(message)
                    self._lock.notify_all()

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False
    ) -> dict[str, Any]:
        """Send one command and wait for its reply (an error reply raises)."""
        with self._lock:
            self._next_id += 1
            number = self._next_id
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        with self._lock:
            if not self._lock.wait_for(lambda: number in self._replies, timeout=60):
                raise TimeoutError(f"no reply to {method} within 60 s")
            reply = self._replies.pop(number)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        reply = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 30) -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"{expression} stayed falsy for {timeout} s")

    def goto(self, url: str) -> None:
        """Load ``url`` and wait until its document has loaded."""
        self.send("Page.navigate", {"url": url}, session=True)
        self.wait_for(f"location.href === {json.dumps(url)} && document.readyState === 'complete'")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the first element matching ``selector``."""
        box = self.wait_for(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()"
        )
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1},
                session=True,
            )

    def type_text(self, text: str) -> None:
        """Type into the focused element, one key at a time."""
        for character in text:
            self.send(
                "Input.dispatchKeyEvent",
                {"type": "keyDown", "key": character, "text": character},
                session=True,
            )
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": character}, session=True)

    def screenshot(self, path: Path) -> Path:
        """A PNG of the viewport."""
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=20)
        os.close(self._to_child)
        os.close(self._from_child)
        self._profile.cleanup()
