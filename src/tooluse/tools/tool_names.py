"""Tool names per provider: dotted names (``Calendar.create_event``) and each provider's rule.

A :class:`~tooluse.tools.definition.ToolDefinition` may be named with dots, as MCP servers and
OpenAPI operations often are. Providers differ: OpenAI, Anthropic and Bedrock accept only
``[A-Za-z0-9_-]{1,64}``; Gemini also accepts dots and colons; MCP accepts dots up to 128
characters. :func:`provider_tool_name` gives the name a provider accepts (unchanged when it is
already valid there): each dot becomes ``__``, any other refused character ``_``, and a name
still too long is shortened with a digest of the original. :func:`original_tool_name` maps a
name coming back in a provider's tool call to the original, given the offered names. Both are
pure; the wire adapters call them when they encode tools and decode calls.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["PROVIDER_NAME_RULES", "original_tool_name", "provider_tool_name"]

_STRICT = re.compile(r"^[A-Za-z0-9_-]+$")
# provider -> (accepted name pattern, maximum length)
PROVIDER_NAME_RULES: dict[str, tuple[re.Pattern[str], int]] = {
    "openai": (_STRICT, 64),
    "openai_responses": (_STRICT, 64),
    "anthropic": (_STRICT, 64),
    "bedrock": (_STRICT, 64),
    "gemini": (re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$"), 64),
    "mcp": (re.compile(r"^[A-Za-z0-9_.-]+$"), 128),
}
_REFUSED = re.compile(r"[^A-Za-z0-9_-]")


def provider_tool_name(name: str, provider: str) -> str:
    """``name`` as ``provider`` accepts it; unknown providers get the strictest rule."""
    pattern, limit = PROVIDER_NAME_RULES.get(provider, (_STRICT, 64))
    if name and len(name) <= limit and pattern.match(name):
        return name
    candidate = _REFUSED.sub("_", name.replace(".", "__")) if pattern is _STRICT else name
    if not pattern.match(candidate):
        candidate = _REFUSED.sub("_", candidate)
    if candidate and len(candidate) <= limit:
        return candidate
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{candidate[: limit - len(digest) - 1]}_{digest}"


def original_tool_name(wire_name: str, provider: str, names: Iterable[str]) -> str:
    """The offered tool name whose ``provider`` form is ``wire_name`` (else ``wire_name``).

    An exact match wins, so a tool literally named ``a__b`` is never taken for ``a.b``.
    """
    candidates = list(names)
    if wire_name in candidates:
        return wire_name
    for name in candidates:
        if provider_tool_name(name, provider) == wire_name:
            return name
    return wire_name
