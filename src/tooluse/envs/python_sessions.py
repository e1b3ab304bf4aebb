"""Stateful ``python`` for environments: one sandbox session per episode, rebuilt from the state.

An episode's state keeps its ``python`` code in ``state.data["python"]`` (with an episode token
in ``state.data["episode"]``); the live session for that state is kept here between steps. A
step takes the session out (so no other step mutates it), runs its calls, and puts it back under
the next state's key; a state stepped a second time (branching) or restored from JSON gets a
fresh session that replays the state's code first. Sessions end when their episode ends, when
the pool is full (oldest first), or at :meth:`SessionPool.close`. Variables never cross
episodes: each episode has its own interpreter.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.execution.local import ToolExecutor as AsyncToolExecutor
from tooluse.execution.sandbox import PythonSandbox
from tooluse.messages import ToolCall, ToolResult

__all__ = ["SessionPool", "new_episode_data"]


def new_episode_data() -> dict[str, Any]:
    """The ``data`` of a fresh episode: its token and no code yet."""
    return {"episode": secrets.token_hex(8), "python": []}


class _Live:
    """A session and the executor running the ``python`` tool in it (calls one at a time)."""

    def __init__(self, sandbox: PythonSandbox, timeout: float) -> None:
        self.session = sandbox.session()
        self.executor = AsyncToolExecutor(
            [self.session.as_tool("python")], timeout=timeout + 5.0, max_concurrency=1
        )

    def close(self) -> None:
        self.executor.close()
        self.session.close()


class SessionPool:
    """Live sandbox sessions of the episodes in progress, keyed by their state (see module)."""

    def __init__(self, sandbox: PythonSandbox, *, timeout: float, size: int = 16) -> None:
        self.sandbox = sandbox
        self.timeout = timeout
        self.size = size
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(data: Mapping[str, Any]) -> str:
        text = json.dumps([data.get("episode"), data.get("python", [])])
        return hashlib.sha256(text.encode()).hexdigest()

    def _take(self, data: Mapping[str, Any]) -> _Live:
        with self._lock:
            live = self._live.pop(self._key(data), None)
        if live is not None:
            return live
        live = _Live(self.sandbox, self.timeout)
        for code in data.get("python", []):  # rebuild the variables of a restored state
            live.session.run(code)
        return live

    def _keep(self, data: Mapping[str, Any], live: _Live) -> None:
        evicted: list[_Live] = []
        with self._lock:
            self._live[self._key(data)] = live
            while len(self._live) > self.size:
                evicted.append(self._live.popitem(last=False)[1])
        for old in evicted:
            old.close()

    def run(
        self, data: Mapping[str, Any], calls: Sequence[ToolCall]
    ) -> tuple[tuple[ToolResult, ...], dict[str, Any]]:
        """Run ``python`` calls in the episode's session: results and the next ``data``."""
        live = self._take(data)
        results = live.executor.execute_batch(calls)
        return results, self._advance(data, calls, live)

    async def arun(
        self, data: Mapping[str, Any], calls: Sequence[ToolCall]
    ) -> tuple[tuple[ToolResult, ...], dict[str, Any]]:
        live = self._take(data)
        results = await live.executor.execute_batch_async(calls)
        return results, self._advance(data, calls, live)

    def _advance(
        self, data: Mapping[str, Any], calls: Sequence[ToolCall], live: _Live
    ) -> dict[str, Any]:
        code = [
            c.arguments["code"]
            for c in calls
            if c.name == "python" and isinstance(c.arguments.get("code"), str)
        ]
        new = {**data, "python": [*data.get("python", []), *code]}
        self._keep(new, live)
        return new

    def end(self, data: Mapping[str, Any]) -> None:
        """Close the session of an episode that is over."""
        with self._lock:
            live = self._live.pop(self._key(data), None)
        if live is not None:
            live.close()

    def close(self) -> None:
        """Close every session."""
        with self._lock:
            live, self._live = list(self._live.values()), OrderedDict()
        for one in live:
            one.close()

    def __len__(self) -> int:
        return len(self._live)
