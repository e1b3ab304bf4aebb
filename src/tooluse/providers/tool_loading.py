"""Tool definitions on the wire beyond their schemas: deferred loading behind the provider's own
tool search, and a prompt-cache breakpoint after the tools. Pure helpers of the adapters, driven
by :class:`~tooluse.providers.base.SamplingParams` (``deferred_tools``, ``cache_tools``).

- Anthropic (Claude 4.5 and later): deferred tools carry ``defer_loading: true`` and the request
  adds the server-side BM25 tool search tool. Claude's searches come back in the response as a
  ``server_tool_use`` block and a ``tool_search_tool_result`` block (``tool_reference`` blocks
  naming the tools loaded); such server-tool blocks are kept as provider state and replayed in
  place, so the tools stay loaded. ``cache_tools`` puts ``cache_control`` on the last tool
  loaded up front (deferred tools are not part of the cached prefix).
- OpenAI Responses (gpt-5.4 and later): deferred functions carry ``defer_loading: true`` and the
  request adds the hosted ``tool_search`` tool; its ``tool_search_call`` and
  ``tool_search_output`` items are kept and replayed the same way. OpenAI caches prompts by
  itself, so ``cache_tools`` changes nothing there.
- Bedrock Converse: ``cache_tools`` appends a ``cachePoint`` to ``toolConfig.tools``. Converse
  has no tool search (Bedrock offers Claude's only through InvokeModel).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.providers.base import SamplingParams
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ANTHROPIC_TOOL_SEARCH",
    "RESPONSES_SEARCH_ITEMS",
    "RESPONSES_TOOL_SEARCH",
    "anthropic_tools",
    "bedrock_tools",
    "is_anthropic_server_block",
    "responses_tool_search_supported",
    "responses_tools",
]

#: Anthropic's tool search tool (natural-language queries, BM25 ranking).
ANTHROPIC_TOOL_SEARCH: Mapping[str, str] = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
#: The Responses API's hosted tool search (run by OpenAI's servers).
RESPONSES_TOOL_SEARCH: Mapping[str, str] = {"type": "tool_search"}
#: The Responses output items of a hosted tool search, replayed as they came.
RESPONSES_SEARCH_ITEMS = frozenset({"tool_search_call", "tool_search_output"})

_GPT_VERSION = re.compile(r"(?:^|/)gpt-(\d+)(?:\.(\d+))?")


def _deferred(tools: Sequence[ToolDefinition], params: SamplingParams | None) -> set[int]:
    """Positions of the tools to send deferred."""
    names = params.deferred_tools if params is not None else frozenset()
    return {i for i, tool in enumerate(tools) if tool.name in names}


def _marked(schemas: Sequence[dict[str, Any]], deferred: set[int]) -> list[dict[str, Any]]:
    return [
        {**schema, "defer_loading": True} if i in deferred else dict(schema)
        for i, schema in enumerate(schemas)
    ]


def anthropic_tools(
    schemas: Sequence[dict[str, Any]],
    tools: Sequence[ToolDefinition],
    params: SamplingParams | None,
) -> list[dict[str, Any]]:
    """The Messages ``tools``: ``schemas`` (one per tool of ``tools``) with the deferred ones
    marked and the tool search tool first, and the cache breakpoint when asked for."""
    deferred = _deferred(tools, params)
    out = _marked(schemas, deferred)
    if deferred:
        out.insert(0, dict(ANTHROPIC_TOOL_SEARCH))
    if params is not None and params.cache_tools:
        loaded = [i for i, schema in enumerate(out) if not schema.get("defer_loading")]
        if loaded:
            last = loaded[-1]
            out[last] = {**out[last], "cache_control": {"type": "ephemeral"}}
    return out


def is_anthropic_server_block(block: Mapping[str, Any]) -> bool:
    """Whether a response content block is a server tool's (``server_tool_use`` and the
    ``*_tool_result`` blocks such as ``tool_search_tool_result``): kept for replay, never run."""
    kind = str(block.get("type", ""))
    return kind == "server_tool_use" or (kind.endswith("_tool_result") and kind != "tool_result")


def responses_tools(
    schemas: Sequence[dict[str, Any]],
    tools: Sequence[ToolDefinition],
    params: SamplingParams | None,
) -> list[dict[str, Any]]:
    """The Responses ``tools``: ``schemas`` with the deferred functions marked and the hosted
    tool search first when any is deferred."""
    deferred = _deferred(tools, params)
    out = _marked(schemas, deferred)
    if deferred:
        out.insert(0, dict(RESPONSES_TOOL_SEARCH))
    return out


def responses_tool_search_supported(model: str) -> bool:
    """Whether an OpenAI model has the hosted tool search (gpt-5.4 and later)."""
    match = _GPT_VERSION.search(model.lower())
    if match is None:
        return False
    return (int(match.group(1)), int(match.group(2) or 0)) >= (5, 4)


def bedrock_tools(
    schemas: Sequence[dict[str, Any]], params: SamplingParams | None
) -> list[dict[str, Any]]:
    """Converse ``toolConfig.tools``: ``schemas``, then a cache point when asked for."""
    out = [dict(schema) for schema in schemas]
    if params is not None and params.cache_tools and out:
        out.append({"cachePoint": {"type": "default"}})
    return out
