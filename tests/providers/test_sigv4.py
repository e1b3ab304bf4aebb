"""AWS SigV4 signing for Bedrock, checked against AWS's published test vectors and an
independent implementation of the signing steps written from the SigV4 specification.

The vectors ``get-vanilla`` and ``post-vanilla`` of the AWS SigV4 test suite are requests with
an empty body, so a signer that hashes an empty body wrongly (or signs other bytes than it
sends) gives a different signature.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
from urllib.parse import parse_qsl, quote, urlsplit

import botocore  # noqa: F401  (installed by make install; absent is a failure)
import pytest

from tooluse import BedrockBackend, ChatMessage
from tooluse.providers.bedrock_aws import SigV4Signer  # noqa: E402

from .conftest import Reply

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_DATE = "20150830T123600Z"
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# AWS SigV4 test suite: get-vanilla and post-vanilla (region us-east-1, service "service").
VECTORS = {
    "GET": "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    "POST": "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
}


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def reference_authorization(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    region: str,
    service: str,
    amz_date: str,
    access_key: str = ACCESS_KEY,
    secret_key: str = SECRET_KEY,
) -> str:
    """The Authorization header by the SigV4 steps: canonical request, string to sign, key."""
    parts = urlsplit(url)
    # Services other than S3 encode the (already encoded) path once more.
    canonical_uri = quote(parts.path or "/", safe="/~")
    query = sorted(parse_qsl(parts.query, keep_blank_values=True))
    canonical_query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in query)
    values = {k.lower(): " ".join(v.split()) for k, v in headers.items()}
    names = sorted(values)
    canonical_headers = "".join(f"{name}:{values[name]}\n" for name in names)
    signed_headers = ";".join(names)
    canonical_request = "\n".join(
        [
            method,
            canonical_uri,
            canonical_query,
            canonical_headers,
            signed_headers,
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            amz_date,
            scope,
            hashlib.sha256(canonical_request.encode("utf-8")).hexdigest(),
        ]
    )
    key = _hmac(f"AWS4{secret_key}".encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
        f"SignedHeaders={signed_headers}, Signature={signature}"
    )


def vector_authorization(method: str) -> str:
    return (
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20150830/us-east-1/service/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={VECTORS[method]}"
    )


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_reference_implementation_reproduces_the_aws_vectors(method):
    headers = {"host": "example.amazonaws.com", "x-amz-date": SUITE_DATE}
    got = reference_authorization(
        method,
        "https://example.amazonaws.com/",
        headers,
        b"",
        region="us-east-1",
        service="service",
        amz_date=SUITE_DATE,
    )
    assert got == vector_authorization(method)
    assert hashlib.sha256(b"").hexdigest() == EMPTY_SHA256


@pytest.fixture
def suite_clock(monkeypatch):
    import botocore.auth

    fixed = datetime.datetime(2015, 8, 30, 12, 36, 0)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: fixed)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_signer_matches_the_aws_vectors_for_an_empty_body(method, suite_clock):
    signer = SigV4Signer(
        "us-east-1", access_key=ACCESS_KEY, secret_key=SECRET_KEY, service="service"
    )
    headers = signer(method, "https://example.amazonaws.com/", {}, b"")
    assert headers["Authorization"] == vector_authorization(method)
    assert headers["X-Amz-Date"] == SUITE_DATE


def test_signer_signs_the_body_it_is_given(suite_clock):
    signer = SigV4Signer(
        "us-east-1", access_key=ACCESS_KEY, secret_key=SECRET_KEY, service="service"
    )
    url = "https://example.amazonaws.com/"
    empty = signer("POST", url, {}, b"")["Authorization"]
    body = b'{"messages":[]}'
    full = signer("POST", url, {}, body)["Authorization"]
    assert empty != full
    expected = reference_authorization(
        "POST",
        url,
        {"host": "example.amazonaws.com", "x-amz-date": SUITE_DATE},
        body,
        region="us-east-1",
        service="service",
        amz_date=SUITE_DATE,
    )
    assert full == expected


@pytest.mark.parametrize("token", [None, "session-token-xyz"])
def test_bedrock_request_signature_verifies_over_what_the_server_received(server, token):
    """The server side of SigV4: recompute the signature from the received request."""
    server.replies.append(
        Reply(
            json={
                "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
                "stopReason": "end_turn",
            }
        )
    )
    backend = BedrockBackend(
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        base_url=server.url,
        api_key="",
        region="eu-west-3",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        aws_session_token=token,
    )
    assert backend.generate([ChatMessage.user("hi")]).text == "ok"
    received = server.requests[0]
    authorization = received.headers["authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    expected_signed = {"content-type", "host", "x-amz-date"}
    if token:
        expected_signed.add("x-amz-security-token")
        assert received.headers["x-amz-security-token"] == token
    assert set(signed) == expected_signed
    assert received.raw_body  # a Converse body is never empty
    expected = reference_authorization(
        "POST",
        server.url + received.path,
        {name: received.headers[name] for name in signed},
        received.raw_body,
        region="eu-west-3",
        service="bedrock",
        amz_date=received.headers["x-amz-date"],
    )
    assert authorization == expected
