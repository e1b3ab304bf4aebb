"""``OpenAIBackend``: OpenAI and any OpenAI-compatible server (vLLM, llama.cpp server, Ollama).

Speaks Chat Completions by default, or the Responses API with ``api="responses"``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import httpx

from tooluse.errors import BackendError
from tooluse.messages import ChatMessage
from tooluse.providers import openai_chat, openai_responses
from tooluse.providers.base import GenerationResult, ModelCapabilities, SamplingParams, ToolChoice
from tooluse.providers.call_ids import IdStyle
from tooluse.providers.http_backend import HTTPBackend, StreamAssembler
from tooluse.providers.http_transport import HTTPTransport, RetryPolicy
from tooluse.tools.definition import ToolDefinition

__all__ = ["OpenAIBackend"]

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIBackend(HTTPBackend):
    """A model behind an OpenAI-style HTTP API.

    ``base_url`` defaults to ``$OPENAI_BASE_URL`` or OpenAI itself; ``api_key`` to
    ``$OPENAI_API_KEY`` (required only for OpenAI itself; local servers need none).
    ``timeout`` is in seconds; ``max_retries`` retries 429/5xx/timeouts with backoff.
    ``id_style="mistral"`` maps call ids to Mistral's 9-character form.
    """

    provider = "openai"

    def __init__(
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
        self.strict_tools = strict_tools
        base = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and base.rstrip("/") == OPENAI_URL:
            raise BackendError(
                "OpenAIBackend needs an API key for api.openai.com: set OPENAI_API_KEY or pass api_key="
            )
        all_headers = dict(headers or {})
        if key:
            all_headers.setdefault("authorization", f"Bearer {key}")
        self.model = model
        self.api = api
        self.id_style = id_style
        self.stream_usage = stream_usage
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
        if self.api == "responses":
            body = openai_responses.encode_request(
                messages, tools, params, tool_choice, strict=self.strict_tools, model=self.model
            )
            if stream:
                body["stream"] = True
            return "responses", body
        body = openai_chat.encode_request(
            messages,
            tools,
            params,
            tool_choice,
            strict=self.strict_tools,
            model=self.model,
            id_style=self.id_style,
        )
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        return "chat/completions", body

    def decode(self, body: dict[str, Any]) -> GenerationResult:
        if self.api == "responses":
            return openai_responses.decode_response(body, model=self.model)
        return openai_chat.decode_response(body)

    def assembler(self) -> StreamAssembler:
        if self.api == "responses":
            return openai_responses.ResponsesStreamAssembler(model=self.model)
        return openai_chat.ChatStreamAssembler()
