"""The one module that imports botocore: SigV4 signing, AWS credentials, event-stream frames.

botocore is the optional extra ``bedrock``; without it a :class:`MissingDependencyError` names
the extra. Bedrock API keys (bearer tokens) need no botocore for plain requests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tooluse.errors import BackendError, MissingDependencyError

__all__ = ["EventStreamDecoder", "SigV4Signer"]


def _botocore() -> Any:
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.eventstream
        import botocore.session
    except ImportError as exc:
        raise MissingDependencyError("botocore", "bedrock") from exc
    return botocore


class SigV4Signer:
    """Signs requests for ``service`` (``bedrock``) with the default AWS credential chain (or
    given keys). The signature covers the exact body bytes that are sent, empty or not."""

    def __init__(
        self,
        region: str,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        profile: str | None = None,
        service: str = "bedrock",
    ) -> None:
        botocore = _botocore()
        self._botocore = botocore
        self.region = region
        self.service = service
        if access_key and secret_key:
            from botocore.credentials import Credentials

            self._credentials = Credentials(access_key, secret_key, session_token)
        else:
            session = botocore.session.Session(profile=profile)
            self._credentials = session.get_credentials()
        if self._credentials is None:
            raise BackendError(
                "no AWS credentials found for Bedrock: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                "a profile, or AWS_BEARER_TOKEN_BEDROCK"
            )

    def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> dict[str, str]:
        request = self._botocore.awsrequest.AWSRequest(
            method=method, url=url, data=body, headers=dict(headers)
        )
        frozen = self._credentials.get_frozen_credentials()
        self._botocore.auth.SigV4Auth(frozen, self.service, self.region).add_auth(request)
        return dict(request.headers.items())


class EventStreamDecoder:
    """Bytes of an ``application/vnd.amazon.eventstream`` body to ``{eventType: payload}`` dicts."""

    def __init__(self) -> None:
        self._buffer = _botocore().eventstream.EventStreamBuffer()

    def feed(self, data: bytes) -> Iterator[dict[str, Any]]:
        self._buffer.add_data(data)
        for message in self._buffer:
            headers = message.headers
            payload = json.loads(message.payload or b"{}")
            if headers.get(":message-type") == "exception":
                name = headers.get(":exception-type", "exception")
                yield {name if name.endswith("Exception") else f"{name}Exception": payload}
            elif headers.get(":message-type") == "error":
                yield {"errorException": {"message": headers.get(":error-message", "")}}
            else:
                yield {headers.get(":event-type", "unknown"): payload}
