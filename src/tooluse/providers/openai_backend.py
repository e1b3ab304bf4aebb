"""``OpenAIBackend``: OpenAI and any OpenAI-compatible server (vLLM, llama.cpp server, Ollama).

Speaks Chat Completions by default, or the Responses API with ``api="responses"``.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import httpx

from tooluse.providers import openai_chat, openai_responses
from tooluse.providers.base import GenerationResult, ModelCapabilities
from tooluse.providers.call_ids import IdStyle
from tooluse.providers.http_backend import HTTPBackend, StreamAssembler, api_key_from_env
from tooluse.providers.http_transport import RetryPolicy
from tooluse.providers.tool_loading import responses_tool_search_supported

__all__ = ["OpenAIBackend"]

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIBackend(HTTPBackend):
    """A model behind an OpenAI-style HTTP API.

    ``base_url`` defaults to ``$OPENAI_BASE_URL`` or OpenAI itself; ``api_key`` to
    ``$OPENAI_API_KEY`` (required only for OpenAI itself; local servers need none).
    ``timeout`` is in seconds; ``max_retries`` retries 429/5xx/timeouts with backoff.
    ``id_style="mistral"`` maps call ids to Mistral's 9-character form.
    Assistant turns without text send ``"content": null`` to OpenAI itself and ``""`` to any
    other server (several compatible servers reject null). On the Responses API, OpenAI's
    gpt-5.4 and later ``supports_tool_search`` (a ``ToolSearch`` then uses the hosted search)
    and, on the Responses API, ``supports_code_execution`` (programmatic tool calling).
    """

    provider = "openai"

    def __init__(  # noqa: PLR0913 - the backend's settings, keyword-only after the model
        self,
        model: str = "gpt-4o",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api: Literal["chat", "responses"] = "chat",
        timeout: float | httpx.Timeout = 60.0,
        max_retries: int = 2,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        id_style: IdStyle = "openai",
        stream_usage: bool = True,
        capabilities: ModelCapabilities | None = None,
        strict_tools: bool = False,
    ) -> None:
        base = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        key = api_key_from_env(
            api_key,
            ["OPENAI_API_KEY"],
            backend="OpenAIBackend",
            base_url=base,
            home_url=OPENAI_URL,
        )
        all_headers = dict(headers or {})
        if key:
            all_headers.setdefault("authorization", f"Bearer {key}")
        self.api = api
        self.wire = openai_responses if api == "responses" else openai_chat
        self.id_style = id_style
        self.stream_usage = stream_usage
        self._setup(
            model,
            base,
            all_headers,
            timeout=timeout,
            retry=retry,
            max_retries=max_retries,
            capabilities=capabilities,
            default_capabilities=ModelCapabilities(
                supports_error_results=False,
                supports_tool_search=api == "responses"
                and base.rstrip("/") == OPENAI_URL
                and responses_tool_search_supported(model),
                # programmatic tool calling: offered on the same models as the hosted search
                supports_code_execution=api == "responses"
                and base.rstrip("/") == OPENAI_URL
                and responses_tool_search_supported(model),
            ),
            strict_tools=strict_tools,
        )

    @property
    def model_spec(self) -> str:
        if self.transport.base_url.rstrip("/") != OPENAI_URL:
            return f"openai-compatible:{self.transport.base_url}#{self.model}"
        return f"{'openai-responses' if self.api == 'responses' else 'openai'}:{self.model}"

    def request_path(self, *, stream: bool) -> str:
        return "responses" if self.api == "responses" else "chat/completions"

    def encode_options(self) -> dict[str, Any]:
        if self.api == "responses":
            return {}
        empty = None if self.transport.base_url == OPENAI_URL else ""
        return {"id_style": self.id_style, "empty_content": empty}

    def stream_fields(self) -> dict[str, Any]:
        if self.api == "chat" and self.stream_usage:
            return {"stream": True, "stream_options": {"include_usage": True}}
        return {"stream": True}

    def decode(self, body: dict[str, Any]) -> GenerationResult:
        if self.api == "responses":
            return openai_responses.decode_response(body, model=self.model)
        return openai_chat.decode_response(body)

    def assembler(self) -> StreamAssembler:
        if self.api == "responses":
            return openai_responses.ResponsesStreamAssembler(model=self.model)
        return openai_chat.ChatStreamAssembler(expect_usage=self.stream_usage)
