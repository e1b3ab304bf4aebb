"""``GeminiBackend``: Gemini models over the Gemini API (``generateContent``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from tooluse.errors import BackendError
from tooluse.messages import ChatMessage
from tooluse.providers import gemini
from tooluse.providers.base import GenerationResult, ModelCapabilities, SamplingParams, ToolChoice
from tooluse.providers.http_backend import HTTPBackend, StreamAssembler
from tooluse.providers.http_transport import HTTPTransport, RetryPolicy
from tooluse.tools.definition import ToolDefinition

__all__ = ["GeminiBackend"]

GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta"


class GeminiBackend(HTTPBackend):
    """A Gemini model. ``api_key`` defaults to ``$GEMINI_API_KEY`` or ``$GOOGLE_API_KEY``."""

    provider = gemini.PROVIDER

    def __init__(
        self,
        model: str = "gemini-2.5-flash",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = 120.0,
        max_retries: int = 2,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        capabilities: ModelCapabilities | None = None,
        strict_tools: bool = False,
    ) -> None:
        self.strict_tools = strict_tools
        base = base_url or os.environ.get("GEMINI_BASE_URL") or GEMINI_URL
        key = api_key
        if key is None:
            key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key and base.rstrip("/") == GEMINI_URL:
            raise BackendError(
                "GeminiBackend needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY) or pass api_key="
            )
        all_headers = dict(headers or {})
        if key:
            all_headers["x-goog-api-key"] = key
        self.model = model
        # Gemini makes parallel calls but has no switch to turn them off; errors go as
        # {"error": ...} responses, a convention rather than a flag.
        self._capabilities = capabilities or ModelCapabilities(supports_error_results=False)
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
        body = gemini.encode_request(
            messages, tools, params, tool_choice, strict=self.strict_tools, model=self.model
        )
        name = self.model if self.model.startswith("models/") else f"models/{self.model}"
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{quote(name, safe='/')}:{method}", body

    def decode(self, body: dict[str, Any]) -> GenerationResult:
        return gemini.decode_response(body, model=self.model)

    def assembler(self) -> StreamAssembler:
        return gemini.GeminiStreamAssembler(model=self.model)
