"""``Usage.cost`` from the dated price table: filled by the HTTP backends for models the table
knows (a real server on 127.0.0.1 answers), summed over a run, shown by ``tooluse logs``, and
left ``None`` (never guessed) for models it does not know."""

from __future__ import annotations

import pytest

from tooluse import AnthropicBackend, ChatMessage, OpenAIBackend, Usage, run
from tooluse.providers import RetryPolicy
from tooluse.providers.prices import price_of, prices_as_of, register_price

from .conftest import Reply

FAST = RetryPolicy(max_retries=0)


def anthropic_text(text: str, tokens_in: int, tokens_out: int) -> Reply:
    return Reply(
        json={
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        }
    )


def test_a_known_model_gets_its_cost_and_a_run_sums_it(server):
    server.replies.append(anthropic_text("Hello.", 1000, 200))
    backend = AnthropicBackend("claude-haiku-4-5", base_url=server.url, api_key="k", retry=FAST)
    result = backend.generate([ChatMessage.user("hi")])
    assert result.usage.cost == pytest.approx((1000 * 1.0 + 200 * 5.0) / 1_000_000)
    server.replies.append(anthropic_text("Again.", 500, 100))
    ran = run(backend, "hi")
    assert ran.usage.cost == pytest.approx((500 * 1.0 + 100 * 5.0) / 1_000_000)


def test_dated_versions_match_their_family_and_unknown_models_have_no_cost(server):
    assert price_of("anthropic", "claude-haiku-4-5-20251001") == price_of(
        "anthropic", "claude-haiku-4-5"
    )
    assert price_of("openai", "gpt-4o-mini-2024-07-18").input == 0.15
    assert price_of("openai", "gpt-4o-2024-08-06").input == 2.5  # not gpt-4o-mini's
    assert price_of("anthropic", "some-new-model") is None
    assert len(prices_as_of()) == 7  # YYYY-MM
    # an OpenAI-compatible server's model is not OpenAI's, whatever it is called
    server.replies.append(
        Reply(
            json={
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
        )
    )
    local = OpenAIBackend("gpt-4o", base_url=server.url, api_key="k", retry=FAST)
    assert local.generate([ChatMessage.user("hi")]).usage.cost is None


def test_a_registered_price_wins(server):
    register_price("anthropic", "claude-house-model", input=2.0, output=4.0)
    server.replies.append(anthropic_text("ok", 1_000_000, 1_000_000))
    backend = AnthropicBackend("claude-house-model", base_url=server.url, api_key="k", retry=FAST)
    assert backend.generate([ChatMessage.user("hi")]).usage.cost == pytest.approx(6.0)


def test_costs_add_up_only_once_known():
    assert (Usage(input_tokens=1) + Usage(output_tokens=1)).cost is None
    assert (Usage(cost=0.5) + Usage()).cost == 0.5
    assert (Usage(cost=0.5) + Usage(cost=0.25)).cost == 0.75
