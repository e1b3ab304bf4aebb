"""``AnthropicBackend``: Claude models over the Anthropic Messages HTTP API."""

from __future__ import annotations

import os
from typing import Any

import httpx

from tooluse.providers import anthropic
from tooluse.providers.base import ModelCapabilities
from tooluse.providers.claude_models import claude_capabilities
from tooluse.providers.http_backend import HTTPBackend, StreamAssembler, api_key_from_env
from tooluse.providers.http_transport import RetryPolicy

__all__ = ["AnthropicBackend"]

ANTHROPIC_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicBackend(HTTPBackend):
    """A Claude model. ``api_key`` defaults to ``$ANTHROPIC_API_KEY``, ``base_url`` to
    ``$ANTHROPIC_BASE_URL`` or the Anthropic API.

    ``forced_choice_supported=False`` downgrades ``tool_choice="required"``/a tool name to
    ``auto`` (logged) for models that reject forced tool choice. Claude 4.5 and later models
    ``supports_tool_search`` (a ``ToolSearch`` then uses Claude's own tool search); Claude 4.6
    and later ``supports_code_execution`` (``code_mode=CodeMode(provider=True)`` then has
    Claude run the programs: programmatic tool calling).
    """

    provider = anthropic.PROVIDER
    wire = anthropic

    def __init__(  # noqa: PLR0913 - the backend's settings, keyword-only after the model
        self,
        model: str = "claude-sonnet-4-5",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = 120.0,
        max_retries: int = 2,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        forced_choice_supported: bool = True,
        capabilities: ModelCapabilities | None = None,
        strict_tools: bool = False,
    ) -> None:
        base = base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
        key = api_key_from_env(
            api_key,
            ["ANTHROPIC_API_KEY"],
            backend="AnthropicBackend",
            base_url=base,
            home_url=ANTHROPIC_URL,
        )
        all_headers = {"anthropic-version": API_VERSION, **(headers or {})}
        if key:
            all_headers["x-api-key"] = key
        self.forced_choice_supported = forced_choice_supported
        self._setup(
            model,
            base,
            all_headers,
            timeout=timeout,
            retry=retry,
            max_retries=max_retries,
            capabilities=capabilities,
            default_capabilities=ModelCapabilities(
                supports_tool_choice_required=forced_choice_supported,
                supports_named_tool_choice=forced_choice_supported,
                supports_tool_search=claude_capabilities(model).tool_search,
                supports_code_execution=claude_capabilities(model).code_execution,
            ),
            strict_tools=strict_tools,
        )

    def request_path(self, *, stream: bool) -> str:
        return "v1/messages"

    def encode_options(self) -> dict[str, Any]:
        return {"forced_choice_supported": self.forced_choice_supported}

    def assembler(self) -> StreamAssembler:
        return anthropic.AnthropicStreamAssembler(model=self.model)
