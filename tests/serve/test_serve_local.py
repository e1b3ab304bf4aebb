"""``tooluse serve`` on the embedded model, driven by real OpenAI-API clients: the official
``openai`` client, pydantic-ai and openai-agents, plus bad input and concurrency."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytestmark = pytest.mark.slow

import openai  # noqa: E402

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current local time in a timezone.",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
    },
}


@pytest.fixture(scope="module")
def client(local_server):
    return openai.OpenAI(base_url=f"{local_server}/v1", api_key="unused", max_retries=0)


def test_models_and_health(local_server):
    models = httpx.get(f"{local_server}/v1/models").json()
    assert models["object"] == "list"
    assert "local" in [m["id"] for m in models["data"]]


def test_health_reports_the_local_engines_counters_growing_with_a_request(local_server, client):
    def total(load: dict, key: str) -> float:
        return sum(engine[key] for engine in load["engines"].values())

    before = httpx.get(f"{local_server}/health").json()["load"]["local"]
    client.chat.completions.create(
        model="local", messages=[{"role": "user", "content": "Say hello."}], max_tokens=8
    )
    after = httpx.get(f"{local_server}/health").json()["load"]["local"]
    assert (after["running"], after["waiting"]) == (0, 0)
    # `local` writes its text answers on the untouched model's engine beside the adapter's
    assert set(after["engines"]) == {"main", "base"}
    assert total(after, "decoded") > total(before, "decoded")
    assert total(after, "decode_seconds") > total(before, "decode_seconds")
    assert total(after, "prompt_tokens") + total(after, "reused_tokens") > (
        total(before, "prompt_tokens") + total(before, "reused_tokens")
    )


def test_tool_loop_with_the_openai_client(client):
    question = {"role": "user", "content": "What's the weather in Paris?"}
    first = client.chat.completions.create(
        model="local", messages=[question], tools=[WEATHER], max_tokens=64
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments)["city"]  # valid JSON, required argument present
    history = [
        question,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 17, "unit": "C"}'},
    ]
    second = client.chat.completions.create(
        model="local", messages=history, tools=[WEATHER], max_tokens=48
    )
    assert second.choices[0].finish_reason in ("stop", "length")
    assert second.choices[0].message.tool_calls is None
    assert second.choices[0].message.content.strip()
    assert second.usage.prompt_tokens > 0 and second.usage.completion_tokens > 0


def test_streamed_call_is_reassembled_by_the_client_helper(client):
    with client.chat.completions.stream(
        model="local",
        messages=[{"role": "user", "content": "What's the weather in Rome?"}],
        tools=[WEATHER],
        tool_choice="required",
        max_tokens=64,
    ) as stream:
        kinds = {type(event).__name__ for event in stream}
        final = stream.get_final_completion()
    assert "ChunkEvent" in kinds
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments)["city"], str)


def test_raw_stream_has_openai_deltas_and_usage(local_server):
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [WEATHER],
        "tool_choice": "required",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 64,
    }
    with httpx.stream("POST", f"{local_server}/v1/chat/completions", json=body, timeout=120) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    call_deltas = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert call_deltas[0]["id"] and call_deltas[0]["function"]["name"] == "get_weather"
    assert all("id" not in d for d in call_deltas[1:])
    arguments = "".join(d["function"]["arguments"] for d in call_deltas)
    assert "city" in json.loads(arguments)
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["finish_reason"] for c in finals] == ["tool_calls"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("none", None),
        ("required", {"get_weather", "get_time"}),
        ({"type": "function", "function": {"name": "get_time"}}, {"get_time"}),
    ],
)
def test_tool_choice_variants(client, choice, expected):
    reply = client.chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=[WEATHER, TIME],
        tool_choice=choice,
        max_tokens=48,
    )
    calls = reply.choices[0].message.tool_calls
    if expected is None:
        assert not calls and reply.choices[0].message.content
    else:
        assert calls and calls[0].function.name in expected
        json.loads(calls[0].function.arguments)


def test_response_format_json_schema(client):
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"],
    }
    reply = client.chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": "Describe Paris: its name and population."}],
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema}},
        max_tokens=64,
    )
    record = json.loads(reply.choices[0].message.content)
    assert isinstance(record["name"], str) and isinstance(record["population"], int)
    assert reply.choices[0].message.tool_calls is None


def test_pydantic_ai_completes_a_tool_loop(local_server):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        "local", provider=OpenAIProvider(base_url=f"{local_server}/v1", api_key="unused")
    )
    agent = Agent(model, system_prompt="Use tools when they help.")
    seen = []

    @agent.tool_plain
    def get_weather(city: str) -> dict:
        """Current weather for a city."""
        seen.append(city)
        return {"city": city, "temperature": 17}

    result = agent.run_sync("What's the weather in Paris?")
    assert seen, "the tool was never called"
    assert isinstance(result.output, str) and result.output.strip()


def test_openai_agents_completes_a_tool_loop(local_server):
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    seen = []

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        seen.append(city)
        return f"17 C in {city}"

    model = OpenAIChatCompletionsModel(
        model="local",
        openai_client=openai.AsyncOpenAI(base_url=f"{local_server}/v1", api_key="unused"),
    )
    agent = Agent(name="weather", instructions="Use tools.", tools=[get_weather], model=model)
    result = Runner.run_sync(agent, "What's the weather in Paris?", max_turns=4)
    assert seen, "the tool was never called"
    assert str(result.final_output).strip()


# -- bad input ----------------------------------------------------------------------------------


def post(base: str, body, **kwargs) -> httpx.Response:
    kwargs.setdefault("timeout", 120)
    return httpx.post(
        f"{base}/v1/chat/completions",
        **kwargs,
        **({"json": body} if not isinstance(body, (bytes, str)) else {"content": body}),
    )


def test_malformed_json_is_a_400_in_openai_shape(local_server):
    reply = post(local_server, b"{not json", headers={"content-type": "application/json"})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and "JSON" in error["message"]


def test_unknown_model_is_a_404(local_server):
    reply = post(local_server, {"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "model_not_found"


def test_schema_the_grammar_cannot_express_is_a_400_naming_the_keyword(local_server):
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"x": {"type": "string", "not": {"const": "a"}}},
            },
        },
    }
    body = {"model": "local", "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}
    reply = post(local_server, body)
    assert reply.status_code == 400
    assert "'not'" in reply.json()["error"]["message"] or "not" in reply.json()["error"]["message"]


def test_oversize_prompt_is_a_400_context_length(local_server):
    body = {"model": "local", "messages": [{"role": "user", "content": "word " * 20000}]}
    reply = post(local_server, body)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "context_length_exceeded"


def test_client_that_disconnects_mid_stream_frees_the_model(local_server):
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": "Write a long story about a dragon."}],
        "stream": True,
        "max_tokens": 400,
    }
    with httpx.stream("POST", f"{local_server}/v1/chat/completions", json=body, timeout=60) as r:
        for line in r.iter_lines():
            if '"content"' in line and '"content": ""' not in line:
                break  # the first generated text: leave now
    # the next request is answered: the abandoned generation stopped and gave back the model
    follow = post(
        local_server,
        {"model": "local", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8},
    )
    assert follow.status_code == 200
    assert follow.json()["choices"][0]["message"]["content"]


# The work is bounded (20 requests of at most 24 tokens, answered one at a time), not the wall
# time: on a loaded machine the last request waits for the 19 before it, so the client waits
# as long as it takes and only the suite's own limit for a stuck test applies.
@pytest.mark.timeout(1800)
def test_twenty_concurrent_requests_are_all_answered_and_not_mixed_up(local_server):
    def ask(i: int) -> tuple[int, str]:
        tool = {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"Tool number {i}.",
                "parameters": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                },
            },
        }
        body = {
            "model": "local",
            "messages": [{"role": "user", "content": f"Call tool {i} with n={i}."}],
            "tools": [tool],
            "tool_choice": {"type": "function", "function": {"name": f"tool_{i}"}},
            "max_tokens": 24,
        }
        reply = post(local_server, body, timeout=None)
        reply.raise_for_status()
        message = reply.json()["choices"][0]["message"]
        assert message.get("tool_calls"), (i, reply.json(), reply.headers)
        return i, message["tool_calls"][0]["function"]["name"]

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(ask, range(20)))
    assert [name for _, name in answers] == [f"tool_{i}" for i, _ in answers]
    assert len(answers) == 20


def _answer(client: openai.OpenAI, request: dict) -> tuple:
    """What the server answered to ``request``: text, calls (name and arguments) and finish
    reason, read from the whole reply or reassembled from its stream."""
    if not request.get("stream"):
        choice = client.chat.completions.create(model="local", **request).choices[0]
        calls = [(c.function.name, json.loads(c.function.arguments))
                 for c in choice.message.tool_calls or ()]  # fmt: skip
        return choice.message.content or "", calls, choice.finish_reason
    text, pieces, finish = "", {}, None
    for chunk in client.chat.completions.create(model="local", **request):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for call in delta.tool_calls or ():
            name, arguments = pieces.get(call.index, ("", ""))
            pieces[call.index] = (
                name + (call.function.name or ""),
                arguments + (call.function.arguments or ""),
            )
        finish = chunk.choices[0].finish_reason or finish
    calls = [(name, json.loads(arguments)) for name, arguments in pieces.values()]
    return text, calls, finish


def _ask(text: str, **options) -> dict:
    return {"messages": [{"role": "user", "content": text}], "max_tokens": 40,
            "temperature": 0, **options}  # fmt: skip


MIXED = [
    _ask("Call tool get_time for Asia/Tokyo.", tools=[TIME],
         tool_choice={"type": "function", "function": {"name": "get_time"}}),
    _ask("What's the weather in Rome?", tools=[WEATHER, TIME], tool_choice="required",
         stream=True),
    _ask("Say hello to Bob.", tools=[WEATHER], tool_choice="none"),
    _ask("What time is it in Tokyo?", tools=[WEATHER, TIME], tool_choice="auto", stream=True),
    _ask("Count to three."),
    _ask("Weather in Oslo please.", tools=[WEATHER], tool_choice="auto"),
    _ask("What's the weather in Lima?", tools=[WEATHER], tool_choice="required"),
    _ask("Name a colour.", stream=True),
]  # fmt: skip


@pytest.mark.timeout(1800)
def test_eight_concurrent_clients_each_get_the_answer_they_get_alone(client):
    """Requests mixing tool_choice values and streaming, decoded together: each client gets
    what its request gets when it is sent alone (greedy), never another client's answer."""
    alone = [_answer(client, request) for request in MIXED]
    with ThreadPoolExecutor(max_workers=len(MIXED)) as pool:
        together = list(pool.map(lambda request: _answer(client, request), MIXED))
    assert together == alone
    assert alone[0][1][0][0] == "get_time" and alone[1][1][0][0] == "get_weather"
    assert alone[2][1] == [] and alone[2][0] and alone[4][1] == [] and alone[7][0]
