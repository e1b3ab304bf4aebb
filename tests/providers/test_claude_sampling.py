"""Sampling parameters and Claude models: every current model id, on every platform's id form.

Claude models from Opus 4.7 on (and Mythos Preview) answer ``temperature``, ``top_p`` or
``top_k`` with a 400, and the official SDK's request types (``anthropic`` 2.17) no longer have
those fields; Claude 4.5 and 4.6 models take temperature or top_p, not both; older ones take
all three. The table below classifies every model id the SDK names, so an SDK that names a new
model fails here until it is classified.
"""

from __future__ import annotations

import logging
import typing

import pytest

from tooluse.messages import ChatMessage
from tooluse.providers import anthropic, bedrock
from tooluse.providers.base import SamplingParams
from tooluse.providers.claude_models import claude_capabilities

from .test_tool_loading import anthropic_request_adapter, known_keys

#: Every model id of the SDK's ``ModelParam`` (anthropic 2.17) and what it takes.
CURRENT_MODELS = {
    "claude-fable-5-2": "none",
    "claude-mythos-5-2": "none",
    "claude-haiku-5-5": "none",
    "claude-sonnet-5-5": "none",
    "claude-fable-5-1": "none",
    "claude-opus-5-5": "none",
    "claude-mythos-5-1": "none",
    "claude-sonnet-5": "none",
    "claude-fable-5": "none",
    "claude-mythos-5": "none",
    "claude-opus-5": "none",
    "claude-opus-4-8": "none",
    "claude-opus-4-7": "none",
    "claude-mythos-preview": "none",
    "claude-opus-4-6": "one_of",
    "claude-sonnet-4-6": "one_of",
    "claude-haiku-4-5": "one_of",
    "claude-haiku-4-5-20251001": "one_of",
    "claude-opus-4-5": "one_of",
    "claude-opus-4-5-20251101": "one_of",
}
OLDER_MODELS = ["claude-opus-4-20250514", "claude-sonnet-4-20250514", "claude-3-7-sonnet-20250219"]
ALL_SAMPLERS = SamplingParams(temperature=0.2, top_p=0.9, extra={"top_k": 5}, max_tokens=64)


def platform_ids(model: str) -> list[str]:
    """The same model as Bedrock (model, cross-region and global profiles, a profile's ARN) and
    Vertex name it."""
    return [
        model,
        f"anthropic.{model}-v1:0",
        f"us.anthropic.{model}-v1:0",
        f"global.anthropic.{model}",
        f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.{model}-v1:0",
        f"{model}@20260416",
    ]


def test_the_table_names_every_model_the_sdk_knows():
    from anthropic.types.model_param import ModelParam

    literal = typing.get_args(ModelParam)[0]
    assert set(typing.get_args(literal)) == set(CURRENT_MODELS)


def test_the_sdk_request_has_no_sampling_fields():
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as Params

    assert not {"temperature", "top_p", "top_k"} & (
        Params.__required_keys__ | Params.__optional_keys__
    )


@pytest.mark.parametrize("model", sorted(CURRENT_MODELS))
def test_every_current_model_id_gets_its_rule_on_every_platform(model):
    for name in platform_ids(model):
        assert claude_capabilities(name).sampling == CURRENT_MODELS[model], name


@pytest.mark.parametrize("model", sorted(m for m, rule in CURRENT_MODELS.items() if rule == "none"))
def test_models_refusing_sampling_get_a_request_the_sdk_types_accept(model):
    body = anthropic.encode_request([ChatMessage.user("x")], params=ALL_SAMPLERS, model=model)
    assert not {"temperature", "top_p", "top_k"} & set(body)
    known_keys(body, _sdk_params())
    anthropic_request_adapter().validate_python(body)
    for name in platform_ids(model)[1:5]:
        converse = bedrock.encode_request(
            [ChatMessage.user("x")],
            params=SamplingParams(
                temperature=0.2,
                top_p=0.9,
                max_tokens=64,
                extra={
                    "additionalModelRequestFields": {"top_k": 5, "thinking": {"type": "adaptive"}}
                },
            ),
            model=name,
        )
        assert converse["inferenceConfig"] == {"maxTokens": 64}, name
        assert converse["additionalModelRequestFields"] == {"thinking": {"type": "adaptive"}}


def _sdk_params():
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    return MessageCreateParamsNonStreaming


@pytest.mark.parametrize(
    "model", sorted(m for m, rule in CURRENT_MODELS.items() if rule == "one_of")
)
def test_claude_45_and_46_keep_temperature_and_top_k(model):
    body = anthropic.encode_request([ChatMessage.user("x")], params=ALL_SAMPLERS, model=model)
    assert (body["temperature"], body["top_k"]) == (0.2, 5) and "top_p" not in body


@pytest.mark.parametrize("model", OLDER_MODELS)
def test_older_models_still_get_every_sampling_parameter(model, caplog):
    for name in platform_ids(model):
        with caplog.at_level(logging.WARNING, logger="tooluse"):
            body = anthropic.encode_request(
                [ChatMessage.user("x")], params=ALL_SAMPLERS, model=name
            )
        assert (body["temperature"], body["top_p"], body["top_k"]) == (0.2, 0.9, 5), name
    converse = bedrock.encode_request(
        [ChatMessage.user("x")],
        params=SamplingParams(
            temperature=0.2, top_p=0.9, extra={"additionalModelRequestFields": {"top_k": 5}}
        ),
        model=f"anthropic.{model}-v1:0",
    )
    assert converse["inferenceConfig"] == {"temperature": 0.2, "topP": 0.9}
    assert converse["additionalModelRequestFields"] == {"top_k": 5}
    assert "not sent" not in caplog.text


def test_a_dropped_parameter_is_reported_once_not_at_every_request(caplog):
    params = SamplingParams(temperature=0.2)
    with caplog.at_level(logging.WARNING, logger="tooluse"):
        for _ in range(3):
            anthropic.encode_request(
                [ChatMessage.user("x")], params=params, model="claude-opus-4-7"
            )
    reports = [r.getMessage() for r in caplog.records if "not sent" in r.getMessage()]
    assert reports == [
        "temperature not sent: model 'claude-opus-4-7' accepts no sampling parameters"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tooluse"):
        for _ in range(2):  # a parameter not dropped before is reported, once, on its own
            anthropic.encode_request(
                [ChatMessage.user("x")], params=ALL_SAMPLERS, model="claude-opus-4-7"
            )
        for _ in range(2):  # another model is another report
            anthropic.encode_request(
                [ChatMessage.user("x")], params=params, model="claude-sonnet-5"
            )
        for _ in range(2):  # and so is the one-of rule's
            anthropic.encode_request(
                [ChatMessage.user("x")], params=ALL_SAMPLERS, model="claude-opus-4-6"
            )
    reports = [r.getMessage() for r in caplog.records if "not sent" in r.getMessage()]
    assert reports == [
        "top_p, top_k not sent: model 'claude-opus-4-7' accepts no sampling parameters",
        "temperature not sent: model 'claude-sonnet-5' accepts no sampling parameters",
        "top_p not sent: model 'claude-opus-4-6' accepts temperature or top_p, not both "
        "(temperature kept)",
    ]
