"""``AnthropicBackend``: Claude models over the Anthropic Messages HTTP API."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import httpx

from tooluse.errors import BackendError
from tooluse.messages import ChatMessage
from tooluse.providers import anthropic
from tooluse.providers.base import GenerationResult, ModelCapabilities, SamplingParams, ToolChoice
from tooluse.providers.http_backend import HTTPBackend, StreamAssembler
from tooluse.providers.http_transport import HTTPTransport, RetryPolicy
from tooluse.tools.definition import ToolDefinition

__all__ = ["AnthropicBackend"]

ANTHROPIC_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicBackend(HTTPBackend):
    """A Claude model. ``api_key`` defaults to ``$ANTHROPIC_API_KEY``, ``base_url`` to
    ``$ANTHROPIC_BASE_URL`` or the Anthropic API.

    ``forced_choice_supported=False`` downgrades ``tool_choice="required"``/a tool name to
    ``auto`` (logged) for models that reject forced tool choice.
    """

    provider = anthropic.PROVIDER

    def __init__(
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
        self.strict_tools = strict_tools
        base = base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if not key and base.rstrip("/") == ANTHROPIC_URL:
            raise BackendError(
                "AnthropicBackend needs an API key: set ANTHROPIC_API_KEY or pass api_key="
            )
        all_headers = {"anthropic-version": API_VERSION, **(headers or {})}
        if key:
            all_headers["x-api-key"] = key
        self.model = model
        self.forced_choice_supported = forced_choice_supported
        self._capabilities = capabilities or ModelCapabilities(
            supports_tool_choice_required=forced_choice_supported,
            supports_named_tool_choice=forced_choice_supported,
        )
        self.transport = HTTPTransport(
            base,
            headers=all_headers,
            timeout=timeout,
            retry=retry or RetryPolicy(max_retries=max_retries),
        )

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    def build_request(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        params: SamplingParams | None,
        tool_choice: ToolChoice,
        *,
        stream: bool,
    ) -> tuple[str, dict[str, Any]]:
        body = anthropic.encode_request(
            messages,
            tools,
            params,
            tool_choice,
            model=self.model,
            forced_choice_supported=self.forced_choice_supported,
            strict=self.strict_tools,
        )
        if stream:
            body["stream"] = True
        return "v1/messages", body

    def decode(self, body: dict[str, Any]) -> GenerationResult:
        return anthropic.decode_response(body, model=self.model)

    def assembler(self) -> StreamAssembler:
        return anthropic.AnthropicStreamAssembler(model=self.model)
