"""Sandbox interpreters ready for a program: started with a channel, the runtime loaded.

A program does not wait for a sandbox to start when one is kept ready: :class:`Spares` starts
the next interpreter in a background thread as soon as one is taken (``CodeMode.prestart``).
Every program gets a fresh interpreter; nothing is shared between programs.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tooluse.errors import ToolExecutionError
from tooluse.execution.code_mode.settings import CodeMode
from tooluse.execution.sandbox.session import SandboxSession

__all__ = ["RUNTIME_SOURCE", "Spares", "ready_session"]

#: The program's side of the channel, loaded into each interpreter before its program.
RUNTIME_SOURCE = Path(__file__).with_name("runtime.py").read_text(encoding="utf-8")


def ready_session(settings: CodeMode) -> SandboxSession:
    """A started sandbox session with a channel and the runtime loaded."""
    session = SandboxSession(settings.limits(), channel=True)
    try:
        loaded = session.run(RUNTIME_SOURCE)
    except BaseException:
        session.close()
        raise
    if not loaded.ok:
        session.close()
        raise ToolExecutionError(
            f"the program sandbox could not start: {loaded.output or loaded.error}",
            tool_name=settings.tool_name,
        )
    return session


class Spares:
    """At most one ready session kept ahead (none when ``settings.prestart`` is off)."""

    def __init__(self, settings: CodeMode) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._spare: SandboxSession | None = None
        self._making = False
        self._closed = False

    def take(self) -> SandboxSession:
        """A ready session (the spare, else a new one); the next spare starts meanwhile."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is None or not spare.alive:
            if spare is not None:
                spare.close()
            spare = ready_session(self.settings)
        self.refill()
        return spare

    def refill(self) -> None:
        """Start making the next spare in the background (when kept, and none is coming)."""
        with self._lock:
            if not self.settings.prestart or self._closed or self._making or self._spare:
                return
            self._making = True
        threading.Thread(target=self._make, name="tooluse-sandbox-spare", daemon=True).start()

    def _make(self) -> None:
        try:
            session: SandboxSession | None = ready_session(self.settings)
        except Exception:  # the next take() starts one itself and reports what fails
            session = None
        with self._lock:
            self._making = False
            if session is not None and not self._closed and self._spare is None:
                self._spare, session = session, None
        if session is not None:
            session.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()
