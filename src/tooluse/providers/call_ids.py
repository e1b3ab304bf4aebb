"""Per-provider tool call id mapping: deterministic, identical for calls and their results.

Providers disagree on what an id may look like (Anthropic ``^[a-zA-Z0-9_-]+$``, OpenAI at most
40 characters, Bedrock at most 64, Mistral exactly 9 alphanumerics). An id that already fits is
sent unchanged; any other id is rewritten to a readable prefix plus a hash of the whole original,
so the same original always gives the same wire id and two originals never share one.
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass, field
from typing import Literal

from tooluse.errors import HistoryError

__all__ = ["CallIdMapper", "IdStyle", "wire_call_id", "wire_tool_name"]

IdStyle = Literal["openai", "anthropic", "bedrock", "gemini", "mistral"]

_SAFE = re.compile(r"^[A-Za-z0-9_-]+$")
_UNSAFE_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_MAX_LEN: dict[str, int] = {"openai": 40, "anthropic": 64, "bedrock": 64, "gemini": 128}
_ALNUM = string.ascii_letters + string.digits


def _digest(call_id: str) -> bytes:
    return hashlib.sha256(call_id.encode("utf-8")).digest()


def wire_call_id(call_id: str, style: IdStyle) -> str:
    """The id to send for ``call_id`` to a provider with the given id rules."""
    if style == "mistral":
        if len(call_id) == 9 and call_id.isascii() and call_id.isalnum():
            return call_id
        number = int.from_bytes(_digest(call_id)[:8], "big")
        chars = []
        for _ in range(9):
            number, rest = divmod(number, len(_ALNUM))
            chars.append(_ALNUM[rest])
        return "".join(chars)
    limit = _MAX_LEN[style]
    if call_id and len(call_id) <= limit and _SAFE.match(call_id):
        return call_id
    suffix = _digest(call_id).hex()[:12]
    prefix = _UNSAFE_CHAR.sub("_", call_id)[: limit - len(suffix) - 1] or "call"
    return f"{prefix}_{suffix}"


@dataclass
class CallIdMapper:
    """Maps ids for one request and refuses two different originals sharing a wire id."""

    style: IdStyle
    _seen: dict[str, str] = field(default_factory=dict)

    def __call__(self, call_id: str) -> str:
        wire = wire_call_id(call_id, self.style)
        previous = self._seen.setdefault(wire, call_id)
        if previous != call_id:
            raise HistoryError(
                f"tool call ids {previous!r} and {call_id!r} map to the same {self.style} id {wire!r}",
                call_ids=(previous, call_id),
            )
        return wire


def wire_tool_name(name: str) -> str:
    """A called tool's name as every provider accepts it in history (``^[a-zA-Z0-9_-]{1,64}$``).

    Valid names pass unchanged. A name a model made up (``"get weather"``) is rewritten the same
    way ids are, so replaying that failed call does not get the whole request refused.
    """
    if name and len(name) <= 64 and _SAFE.match(name):
        return name
    suffix = _digest(name).hex()[:8]
    prefix = _UNSAFE_CHAR.sub("_", name)[: 64 - len(suffix) - 1] or "tool"
    return f"{prefix}_{suffix}"
