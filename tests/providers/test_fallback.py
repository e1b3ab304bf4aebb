"""``FallbackBackend`` over real HTTP servers on 127.0.0.1: a failing primary hands the request
to the next backend (plain, async and streamed), errors that do not count are raised at once,
and when every backend fails one error lists each cause."""

from __future__ import annotations

import asyncio

import pytest

from tooluse import ChatMessage, OpenAIBackend, ScriptedBackend, run
from tooluse.errors import BackendHTTPError, ToolDefinitionError
from tooluse.providers import RetryPolicy
from tooluse.providers.fallback import FallbackBackend, FallbackError

from .conftest import Reply, ScriptedHTTPServer

FAST = RetryPolicy(max_retries=0)
USER = [ChatMessage.user("hi")]


def answer(text: str) -> Reply:
    return Reply(
        json={
            "id": "c",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
    )


def chunk(delta, finish=None):
    return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@pytest.fixture
def two_servers():
    first, second = ScriptedHTTPServer(), ScriptedHTTPServer()
    yield first, second
    first.close()
    second.close()


def backends(two_servers):
    first, second = two_servers
    return FallbackBackend(
        [
            OpenAIBackend("primary", base_url=first.url, api_key="k", retry=FAST),
            OpenAIBackend("secondary", base_url=second.url, api_key="k", retry=FAST),
        ]
    )


def test_a_failing_primary_hands_the_request_to_the_next_backend(two_servers):
    first, second = two_servers
    first.replies += [Reply(status=500, json={"error": {"message": "down"}})] * 3
    second.replies += [answer("from the second"), answer("async too")]
    backend = backends(two_servers)
    assert backend.generate(USER).text == "from the second"
    assert asyncio.run(backend.agenerate(USER)).text == "async too"
    assert len(first.requests) == 2 and len(second.requests) == 2


def test_a_stream_falls_back_before_it_sent_anything(two_servers):
    first, second = two_servers
    first.replies.append(Reply(status=503, json={"error": {"message": "busy"}}))
    second.replies.append(Reply(sse=[chunk({"content": "streamed"}, finish="stop")]))
    events = list(backends(two_servers).stream(USER))
    assert events[-1].result.text == "streamed"


def test_when_every_backend_fails_one_error_lists_each_cause(two_servers):
    first, second = two_servers
    first.replies.append(Reply(status=500, json={"error": {"message": "first is down"}}))
    second.replies.append(Reply(status=502, json={"error": {"message": "second is down"}}))
    with pytest.raises(FallbackError) as info:
        backends(two_servers).generate(USER)
    labels = [label for label, _ in info.value.causes]
    assert labels[0].endswith("#primary") and labels[1].endswith("#secondary")
    assert all(isinstance(exc, BackendHTTPError) for _, exc in info.value.causes)
    assert "first is down" in str(info.value) and "second is down" in str(info.value)


def test_errors_that_do_not_count_are_raised_at_once():
    class Broken(ScriptedBackend):
        def generate(self, *args, **kwargs):
            raise ToolDefinitionError("a bug, not an outage")

    spare = ScriptedBackend(["never asked"])
    with pytest.raises(ToolDefinitionError):
        FallbackBackend([Broken([]), spare]).generate(USER)
    assert spare.requests == []
    chosen = FallbackBackend(
        [Broken([]), spare], should_fall_back=lambda exc: isinstance(exc, ToolDefinitionError)
    )
    assert run(chosen, "hi").final_text == "never asked"
