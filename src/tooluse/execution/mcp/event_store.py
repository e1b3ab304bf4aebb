"""The recent events of a served HTTP server's event streams, so that a client whose stream broke
resumes it (it reconnects with ``Last-Event-ID`` and gets what it missed): :class:`MemoryEventStore`.

With it the SDK's streamable HTTP transport opens each event stream with a priming event (an id,
no data) and the reconnection delay to use. Only the last :data:`MAX_EVENTS` events, and no more
than :data:`MAX_BYTES` of them, are kept: a client that was away longer starts afresh. Event ids
are random, so one client cannot ask for another's events. No ``mcp`` import here: the store is
duck-typed to the SDK's ``EventStore`` and its replay messages are made through
:mod:`~tooluse.execution.mcp.sdk`.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["MAX_BYTES", "MAX_EVENTS", "MemoryEventStore"]

MAX_EVENTS = 1000
MAX_BYTES = 64 * 1024 * 1024


def _size(message: Any) -> int:
    if message is None:
        return 0
    dump = getattr(message, "model_dump_json", None)
    return len(dump()) if callable(dump) else len(repr(message))


class MemoryEventStore:
    """The SDK's ``EventStore`` in memory, bounded (see the module docs)."""

    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._events: OrderedDict[str, tuple[str, Any, int]] = OrderedDict()
        self._bytes = 0

    async def store_event(self, stream_id: str, message: Any) -> str:
        """Keep one event (``message`` is ``None`` for a stream's priming event); its id."""
        event_id = secrets.token_hex(12)
        size = _size(message)
        self._events[event_id] = (stream_id, message, size)
        self._bytes += size
        while len(self._events) > self.max_events or self._bytes > self.max_bytes:
            _, (_, _, dropped) = self._events.popitem(last=False)
            self._bytes -= dropped
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: Callable[[Any], Awaitable[None]]
    ) -> str | None:
        """Send the events of ``last_event_id``'s stream that came after it; that stream's id
        (``None`` when the event is not kept any more)."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        later = False
        for event_id, (stream, message, _) in list(self._events.items()):
            if event_id == last_event_id:
                later = True
            elif later and stream == stream_id and message is not None:
                await send_callback(mcp_sdk.EventMessage(message, event_id))
        return stream_id
