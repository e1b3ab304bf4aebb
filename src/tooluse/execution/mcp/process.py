"""The process of a stdio MCP server: found by a launch token, killed at once when needed.

The SDK starts a stdio server itself (in a new session, so its group id is its pid) and stops
it politely: close stdin, wait 2 s, SIGTERM, wait 2 s, SIGKILL. That is right for a server
that worked; for one that hung in its handshake, or when the user pressed Ctrl-C, tooluse
kills the server's process group at once instead. The server is found among this process's
children by a random token put in its environment (``TOOLUSE_MCP_LAUNCH``), so concurrent
servers are never confused. Linux only (``/proc``); elsewhere the SDK's own shutdown applies.
"""

from __future__ import annotations

import os
import secrets
import signal

__all__ = ["LAUNCH_VARIABLE", "ServerProcess"]

LAUNCH_VARIABLE = "TOOLUSE_MCP_LAUNCH"


def _children() -> list[int]:
    """The pids of this process's children (every thread's), from /proc."""
    found: list[int] = []
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/self/task/{thread}/children") as handle:
                found.extend(int(pid) for pid in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


class ServerProcess:
    """The launch token of one server start, and the pid it leads to once found."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(12)
        self.pid: int | None = None

    def environment(self, env: dict[str, str] | None) -> dict[str, str]:
        """``env`` plus the launch token (the SDK adds its safe defaults to this)."""
        return {**(env or {}), LAUNCH_VARIABLE: self.token}

    def find(self) -> int | None:
        """The server's pid (searched once, then remembered)."""
        if self.pid is not None:
            return self.pid
        for pid in _children():
            if self._still_ours(pid):
                self.pid = pid
                return pid
        return None

    def _still_ours(self, pid: int) -> bool:
        marker = f"{LAUNCH_VARIABLE}={self.token}".encode()
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                return marker in handle.read().split(b"\0")
        except OSError:
            return False

    def kill(self) -> bool:
        """SIGKILL the server's process group now; True when there was one to kill."""
        pid = self.find()
        if pid is None or not self._still_ours(pid):  # gone (its pid may be reused by now)
            return False
        try:
            os.killpg(pid, signal.SIGKILL)  # the SDK starts it as a session (and group) leader
        except (ProcessLookupError, PermissionError):
            return False
        return True
