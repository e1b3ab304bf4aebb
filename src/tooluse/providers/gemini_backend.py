"""``GeminiBackend``: Gemini models over the Gemini API (``generateContent``)."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import httpx

from tooluse.providers import gemini
from tooluse.providers.base import ModelCapabilities
from tooluse.providers.http_backend import HTTPBackend, StreamAssembler, api_key_from_env
from tooluse.providers.http_transport import RetryPolicy

__all__ = ["GeminiBackend"]

GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta"


class GeminiBackend(HTTPBackend):
    """A Gemini model. ``api_key`` defaults to ``$GEMINI_API_KEY`` or ``$GOOGLE_API_KEY``."""

    provider = gemini.PROVIDER
    wire = gemini

    def __init__(  # noqa: PLR0913 - the backend's settings, keyword-only after the model
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
        base = base_url or os.environ.get("GEMINI_BASE_URL") or GEMINI_URL
        key = api_key_from_env(
            api_key,
            ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            backend="GeminiBackend",
            base_url=base,
            home_url=GEMINI_URL,
        )
        all_headers = dict(headers or {})
        if key:
            all_headers["x-goog-api-key"] = key
        self._setup(
            model,
            base,
            all_headers,
            timeout=timeout,
            retry=retry,
            max_retries=max_retries,
            capabilities=capabilities,
            # Gemini makes parallel calls but has no switch to turn them off; errors go as
            # {"error": ...} responses, a convention rather than a flag.
            default_capabilities=ModelCapabilities(supports_error_results=False),
            strict_tools=strict_tools,
        )

    def request_path(self, *, stream: bool) -> str:
        name = self.model if self.model.startswith("models/") else f"models/{self.model}"
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{quote(name, safe='/')}:{method}"

    def stream_fields(self) -> dict[str, Any]:
        return {}  # streaming is chosen by the URL

    def assembler(self) -> StreamAssembler:
        return gemini.GeminiStreamAssembler(model=self.model)
