"""Sandbox interpreters ready for a program: started with a channel, the runtime loaded.

A program does not wait for a sandbox to start when one is kept ready: :class:`Spares` starts
the next interpreter in a background thread as soon as one is taken (``CodeMode.prestart``),
so it starts while the model writes its next turn. The spares of one setting are shared by
every run of the process (:func:`spares_for`); an idle spare is one interpreter, killed with
its namespace when the process exits. Every program gets a fresh interpreter: nothing is
shared between programs.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tooluse.errors import ToolExecutionError
from tooluse.execution.code_mode.settings import CodeMode
from tooluse.execution.sandbox.session import SandboxSession

__all__ = ["RUNTIME_SOURCE", "Spares", "ready_session", "spares_for"]

#: The program's side of the channel, loaded into each interpreter before its program.
RUNTIME_SOURCE = Path(__file__).with_name("runtime.py").read_text(encoding="utf-8")


def ready_session(settings: CodeMode) -> SandboxSession:
    """A started sandbox session with a channel and the runtime loaded (what the kernel
    refused is in ``session.child.isolation_missing``; the program run warns about it)."""
    session = SandboxSession(settings.limits(), channel=True, warn_isolation=False)
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
        self._ready = threading.Condition()
        self._spare: SandboxSession | None = None
        self._making = False

    def take(self) -> SandboxSession:
        """A ready session: the spare (waiting for the one being started, if any), else a new
        one; the next spare starts meanwhile."""
        with self._ready:
            self._ready.wait_for(lambda: not self._making, timeout=60.0)
            spare, self._spare = self._spare, None
        if spare is None or not spare.alive:
            if spare is not None:
                spare.close()
            spare = ready_session(self.settings)
        self.refill()
        return spare

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Wait until a spare is ready (``False``: none is kept, or it did not come in time)."""
        with self._ready:
            self._ready.wait_for(lambda: not self._making, timeout=timeout)
            return self._spare is not None

    def refill(self) -> None:
        """Start making the next spare in the background (when kept, and none is there)."""
        with self._ready:
            if not self.settings.prestart or self._making or self._spare is not None:
                return
            self._making = True
        threading.Thread(target=self._make, name="tooluse-sandbox-spare", daemon=True).start()

    def _make(self) -> None:
        try:
            session: SandboxSession | None = ready_session(self.settings)
        except Exception:  # the next take() starts one itself and reports what fails
            session = None
        with self._ready:
            self._making = False
            self._spare = session
            self._ready.notify_all()

    def close(self) -> None:
        """Kill the spare (a new one starts at the next :meth:`refill`)."""
        with self._ready:
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()


_SHARED: dict[CodeMode, Spares] = {}
_SHARED_LOCK = threading.Lock()


def spares_for(settings: CodeMode) -> Spares:
    """The process's spares for ``settings`` (one pool per distinct setting)."""
    with _SHARED_LOCK:
        spares = _SHARED.get(settings)
        if spares is None:
            spares = _SHARED[settings] = Spares(settings)
        return spares
