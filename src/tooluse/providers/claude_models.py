"""What Claude models accept, read from the model id: a small capability table.

Anthropic removed sampling parameters from its newest models, and the API answers 400 when they
are sent anyway:

- Opus 4.7 and later, every model of generation 5 and later (Sonnet 5, Opus 5, Haiku 5.5,
  Fable 5, Mythos 5) and every Fable or Mythos model, Mythos Preview included (no version in its
  id; released after Opus 4.6, like every model that refuses them): ``temperature``, ``top_p``
  and ``top_k`` are refused ("`temperature` is deprecated for this model").
- Claude 4 models after 4.0 (Opus 4.1, Sonnet/Haiku/Opus 4.5, Sonnet/Opus 4.6): ``temperature``
  and ``top_p`` may not both be set ("cannot both be specified for this model").
- Older models (Claude 3.x, Claude 4.0) take both.

Claude 4.5 and later (Sonnet, Opus and Haiku 4.5, every 4.6+ and generation-5 model) have the
server-side tool search tool (``tool_search``; Bedrock offers it only outside Converse).

The same models behave the same on Bedrock and Vertex; their ids are read wherever the Claude
name appears in them (``global.anthropic.claude-opus-5``, ``claude-opus-4-7@20260416``, an
inference profile's ARN naming the model). :func:`apply_sampling_rules` removes what a model
refuses from a request body, with a logged warning naming what was dropped and why, once per
model and parameter in a process (not at every request), as the adapters do for a
``tool_choice`` a model cannot honour. Unknown model ids (an application inference profile's
ARN names no model) are left alone.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Literal

from tooluse.providers.wire_common import log

__all__ = ["ClaudeCapabilities", "apply_sampling_rules", "claude_capabilities", "claude_version"]

SamplingRule = Literal["any", "one_of", "none"]

# claude-opus-4-7, claude-sonnet-4-5-20250929, anthropic.claude-opus-4-1-20250805-v1:0,
# claude-opus-4-7@20260416 (Vertex), anthropic/claude-opus-4.7; the minor version is one or two
# digits, so the date in claude-opus-4-20250514 is not read as one.
_FAMILY_FIRST = re.compile(r"claude-([a-z]+)-(\d+)(?:[-.](\d{1,2}))?(?!\d)")
# claude-3-5-sonnet-20241022, claude-3-opus-20240229, anthropic/claude-4.7-opus
_VERSION_FIRST = re.compile(r"claude-(\d+)(?:[-.](\d{1,2}))?-([a-z]+)")
# Families that began after Opus 4.6: every model of theirs refuses sampling parameters, even
# one whose id has no version (claude-mythos-preview).
_LATE_FAMILY = re.compile(r"claude-(?:fable|mythos)(?![a-z])")
# (model, parameter) pairs already reported as dropped: each is logged once per process.
_reported: set[tuple[str, str]] = set()
_reported_lock = threading.Lock()


@dataclass(frozen=True, kw_only=True)
class ClaudeCapabilities:
    """What one Claude model accepts.

    ``sampling``: ``any`` (temperature, top_p, top_k as given), ``one_of`` (temperature or
    top_p, not both) or ``none`` (no sampling parameters at all). ``tool_search``: whether the
    model takes the tool search tool and deferred tools. ``code_execution``: whether it runs
    programs that call the tools (``code_execution_20260120``: Claude 4.6 and later).
    """

    sampling: SamplingRule = "any"
    tool_search: bool = False
    code_execution: bool = False


def claude_version(model: str) -> tuple[str, int, int] | None:
    """``(family, major, minor)`` of a Claude model id, or ``None`` when it is not one."""
    lowered = model.lower()
    match = _FAMILY_FIRST.search(lowered)
    if match:
        return match.group(1), int(match.group(2)), int(match.group(3) or 0)
    match = _VERSION_FIRST.search(lowered)
    if match:
        return match.group(3), int(match.group(1)), int(match.group(2) or 0)
    return None


def claude_capabilities(model: str) -> ClaudeCapabilities:
    """The capabilities of ``model`` (all sampling allowed, no tool search, for ids that are
    not Claude's)."""
    version = claude_version(model)
    if _LATE_FAMILY.search(model.lower()):
        return ClaudeCapabilities(sampling="none", tool_search=True)
    if version is None:
        return ClaudeCapabilities()
    family, major, minor = version
    tool_search = major >= 5 or (major == 4 and minor >= 5)
    programs = major >= 5 or (major == 4 and minor >= 6)
    if major >= 5 or (major == 4 and minor >= 7 and family == "opus"):
        return ClaudeCapabilities(sampling="none", tool_search=tool_search, code_execution=programs)
    if major == 4 and minor >= 1:
        return ClaudeCapabilities(
            sampling="one_of", tool_search=tool_search, code_execution=programs
        )
    return ClaudeCapabilities()


def apply_sampling_rules(
    body: dict[str, object],
    model: str,
    *,
    keys: tuple[str, str, str] = ("temperature", "top_p", "top_k"),
) -> None:
    """Remove from ``body`` the sampling fields ``model`` refuses, logging each downgrade once.

    ``keys`` names the temperature, top-p and top-k fields (Bedrock nests its own names in
    ``inferenceConfig``; pass that dict as ``body``). With ``one_of``, temperature wins.
    """
    rule = claude_capabilities(model).sampling
    temperature, top_p, top_k = keys
    if rule == "none":
        dropped = [key for key in keys if key in body]
        for key in dropped:
            del body[key]
        fresh = _first_reports(model, dropped)
        if fresh:
            log.warning(
                "%s not sent: model %r accepts no sampling parameters", ", ".join(fresh), model
            )
    elif rule == "one_of" and temperature in body and top_p in body:
        del body[top_p]
        if _first_reports(model, [top_p]):
            log.warning(
                "%s not sent: model %r accepts %s or %s, not both (%s kept)",
                top_p,
                model,
                temperature,
                top_p,
                temperature,
            )


def _first_reports(model: str, dropped: list[str]) -> list[str]:
    """The parameters of ``dropped`` not yet reported for ``model`` (now marked reported)."""
    with _reported_lock:
        fresh = [key for key in dropped if (model, key) not in _reported]
        _reported.update((model, key) for key in fresh)
    return fresh
