"""``BedrockBackend``: models on AWS Bedrock over the Converse API.

Authentication: a Bedrock API key (``api_key=`` or ``$AWS_BEARER_TOKEN_BEDROCK``) as a bearer
token, else SigV4 with the default AWS credential chain (needs the ``bedrock`` extra).
Streaming reads the AWS event-stream framing (also from the ``bedrock`` extra).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import httpx

from tooluse.providers import bedrock
from tooluse.providers.base import ModelCapabilities
from tooluse.providers.http_backend import HTTPBackend, StreamAssembler
from tooluse.providers.http_transport import RetryPolicy

__all__ = ["BedrockBackend"]


class BedrockBackend(HTTPBackend):
    """A Bedrock model id such as ``anthropic.claude-3-5-haiku-20241022-v1:0``.

    ``region`` defaults to ``$AWS_REGION``/``$AWS_DEFAULT_REGION`` or ``us-east-1``.
    """

    provider = bedrock.PROVIDER
    wire = bedrock

    def __init__(  # noqa: PLR0913 - the backend's settings, keyword-only after the model
        self,
        model: str = "anthropic.claude-3-5-haiku-20241022-v1:0",
        *,
        region: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        profile: str | None = None,
        timeout: float | httpx.Timeout = 120.0,
        max_retries: int = 2,
        retry: RetryPolicy | None = None,
        capabilities: ModelCapabilities | None = None,
        strict_tools: bool = False,
    ) -> None:
        self.region = (
            region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        base = base_url or f"https://bedrock-runtime.{self.region}.amazonaws.com"
        token = api_key if api_key is not None else os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
        headers: dict[str, str] = {}
        signer = None
        if token:
            headers["authorization"] = f"Bearer {token}"
        else:
            from tooluse.providers.bedrock_aws import SigV4Signer

            signer = SigV4Signer(
                self.region,
                access_key=aws_access_key_id,
                secret_key=aws_secret_access_key,
                session_token=aws_session_token,
                profile=profile,
            )
        claude_or_nova = bedrock.supports_named_choice(model)
        self._setup(
            model,
            base,
            headers,
            timeout=timeout,
            retry=retry,
            max_retries=max_retries,
            capabilities=capabilities,
            default_capabilities=ModelCapabilities(
                supports_tool_choice_none=False,
                supports_named_tool_choice=claude_or_nova,
                supports_error_results=claude_or_nova,
            ),
            strict_tools=strict_tools,
            signer=signer,
        )

    def request_path(self, *, stream: bool) -> str:
        action = "converse-stream" if stream else "converse"
        return f"model/{quote(self.model, safe='')}/{action}"

    def stream_fields(self) -> dict[str, Any]:
        return {}  # streaming is chosen by the URL

    def assembler(self) -> StreamAssembler:
        return bedrock.BedrockStreamAssembler(model=self.model)

    def wire_events(self, response: httpx.Response) -> Iterator[dict[str, Any]]:
        from tooluse.providers.bedrock_aws import EventStreamDecoder

        decoder = EventStreamDecoder()
        for data in response.iter_bytes():
            yield from decoder.feed(data)

    async def awire_events(self, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        from tooluse.providers.bedrock_aws import EventStreamDecoder

        decoder = EventStreamDecoder()
        async for data in response.aiter_bytes():
            for event in decoder.feed(data):
                yield event
