"""The providers' own code modes on the wire, checked against the official SDKs' types:
Claude's programmatic tool calling (``allowed_callers``, ``caller`` on ``tool_use``, the code
execution tool's blocks, the container) and OpenAI Responses' (``programmatic_tool_calling``,
``program`` / ``program_output`` items, ``caller`` on ``function_call``), encoded, decoded,
streamed, replayed, and run through the loop against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest
from pydantic import TypeAdapter

import tooluse
from tooluse import AnthropicBackend, ChatMessage, OpenAIBackend, SamplingParams, ToolResult
from tooluse.execution.code_mode import CodeMode
from tooluse.loop.message_data import message_from_data, message_to_data
from tooluse.loop.types import ProgramFinished, ProgramStarted, ToolExecutionStarted
from tooluse.providers import RetryPolicy, anthropic, openai_responses
from tooluse.providers.base import ProviderProgram
from tooluse.tools.definition import ToolDefinition

from .conftest import Reply
from .test_tool_loading import known_keys

FAST = RetryPolicy(max_retries=1, backoff=0.01, max_backoff=0.02)
CODE = "rs = await asyncio.gather(*[get_expenses(e) for e in ['a', 'b']])\nprint(len(rs))"


def expenses(employee: str) -> list:
    """An employee's expenses.

    Args:
        employee: The employee.
    """
    return [{"amount": 10}] * (3 if employee == "a" else 5)


EXPENSES = ToolDefinition.from_callable(expenses, name="get_expenses")
SUBMIT = dataclasses.replace(
    ToolDefinition.from_callable(lambda text: text, name="submit", description="Submit."),
    callers=("direct", "code"),
)
ON = SamplingParams(code_execution=True)

# -- Anthropic --------------------------------------------------------------------------------

CALLER = {"type": "code_execution_20260120", "tool_id": "srvtoolu_01"}
PROGRAM_TURN: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-6",
    "content": [
        {"type": "text", "text": "I'll total them in code."},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01",
            "name": "code_execution",
            "input": {"code": CODE},
        },
        {
            "type": "tool_use",
            "id": "toolu_a",
            "name": "get_expenses",
            "input": {"employee": "a"},
            "caller": CALLER,
        },
        {
            "type": "tool_use",
            "id": "toolu_b",
            "name": "get_expenses",
            "input": {"employee": "b"},
            "caller": CALLER,
        },
    ],
    "container": {"id": "container_01", "expires_at": "2026-12-04T19:00:00Z"},
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 900, "output_tokens": 80},
}
END_TURN: dict[str, Any] = {
    "id": "msg_02",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-6",
    "content": [
        {
            "type": "code_execution_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": {
                "type": "code_execution_result",
                "stdout": "2\n",
                "stderr": "",
                "return_code": 0,
                "content": [],
            },
        },
        {"type": "text", "text": "Two employees."},
    ],
    "container": {"id": "container_01", "expires_at": "2026-12-04T19:00:00Z"},
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 950, "output_tokens": 10},
}


def anthropic_request(body: dict[str, Any]) -> None:
    from anthropic.types import CodeExecutionTool20260120Param, ToolParam
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    TypeAdapter(MessageCreateParamsNonStreaming).validate_python(body)
    for tool in body["tools"]:
        known_keys(tool, CodeExecutionTool20260120Param if "type" in tool else ToolParam)


def test_fixtures_are_valid_anthropic_messages():
    from anthropic.types import Message

    first = Message.model_validate(PROGRAM_TURN)
    assert first.content[2].caller.tool_id == "srvtoolu_01"  # type: ignore[union-attr]
    assert first.container is not None and first.container.id == "container_01"
    last = Message.model_validate(END_TURN)
    assert last.content[0].type == "code_execution_tool_result"


def test_anthropic_offers_the_code_execution_tool_and_each_tools_callers():
    body = anthropic.encode_request(
        [ChatMessage.user("Total?")], [EXPENSES, SUBMIT], ON, model="claude-opus-4-6"
    )
    anthropic_request(body)
    code_tool, get_expenses, submit = body["tools"]
    assert code_tool == {"type": "code_execution_20260120", "name": "code_execution"}
    assert get_expenses["allowed_callers"] == ["code_execution_20260120"]
    assert submit["allowed_callers"] == ["direct", "code_execution_20260120"]
    plain = anthropic.encode_request([ChatMessage.user("Total?")], [EXPENSES])
    assert "allowed_callers" not in str(plain) and len(plain["tools"]) == 1


def test_anthropic_program_calls_decode_with_their_caller_and_replay_with_the_container():
    result = anthropic.decode_response(copy.deepcopy(PROGRAM_TURN), model="claude-opus-4-6")
    assert [(c.id, c.caller) for c in result.tool_calls] == [
        ("toolu_a", "srvtoolu_01"),
        ("toolu_b", "srvtoolu_01"),
    ]
    assert result.programs == (ProviderProgram(id="srvtoolu_01", runner="anthropic", code=CODE),)
    history = [
        ChatMessage.user("Total?"),
        result.to_message(),
        *(
            ChatMessage.tool_result(ToolResult.success(c.id, c.name, expenses(**c.arguments)))
            for c in result.tool_calls
        ),
    ]
    body = anthropic.encode_request(history, [EXPENSES], ON, model="claude-opus-4-6")
    anthropic_request(body)
    assert body["container"] == "container_01"
    assert body["messages"][1]["content"][1:] == PROGRAM_TURN["content"][1:]  # as it came
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result"] * 2
    saved = [message_from_data(json.loads(json.dumps(message_to_data(m)))) for m in history]
    assert anthropic.encode_request(saved, [EXPENSES], ON, model="claude-opus-4-6") == body
    ended = anthropic.decode_response(copy.deepcopy(END_TURN), model="claude-opus-4-6")
    assert ended.programs == (
        ProviderProgram(id="srvtoolu_01", runner="anthropic", output="2", is_error=False),
    )
    after = anthropic.encode_request(
        [*history, ended.to_message(), ChatMessage.user("Thanks")], [EXPENSES], ON
    )
    assert "container" not in after  # no program waits for results any more


def test_anthropic_stream_of_a_program_turn_decodes_like_the_body():
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 900}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "I'll total them in code."},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    for index, block in enumerate(PROGRAM_TURN["content"][1:], start=1):
        given = block["input"]
        start = {**block, "input": {}}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(given)},
            },
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "container": PROGRAM_TURN["container"]},
            "usage": {"output_tokens": 80},
        },
        {"type": "message_stop"},
    ]
    assembler = anthropic.AnthropicStreamAssembler(model="claude-opus-4-6")
    for event in events:
        assembler.feed(event)
    _, streamed = assembler.finish()
    body = anthropic.decode_response(copy.deepcopy(PROGRAM_TURN), model="claude-opus-4-6")
    assert streamed.tool_calls == body.tool_calls
    assert [c.caller for c in streamed.tool_calls] == ["srvtoolu_01"] * 2
    assert streamed.programs == body.programs
    assert streamed.to_message().metadata == body.to_message().metadata


def test_a_run_with_claude_running_the_program(server):
    server.replies += [Reply(json=copy.deepcopy(PROGRAM_TURN)), Reply(json=copy.deepcopy(END_TURN))]
    backend = AnthropicBackend("claude-opus-4-6", base_url=server.url, api_key="k", retry=FAST)
    events: list[Any] = []
    result = tooluse.run(
        backend,
        "Total?",
        tools=[EXPENSES],
        code_mode=CodeMode(provider=True),
        on_event=events.append,
    )
    assert result.final_text == "Two employees." and result.stop_reason.value == "final_text"
    started = [e for e in events if isinstance(e, ProgramStarted)]
    assert [(e.program_id, e.runner, e.code) for e in started] == [
        ("srvtoolu_01", "anthropic", CODE)
    ]
    ended = [e for e in events if isinstance(e, ProgramFinished)]
    assert [(e.program_id, e.output) for e in ended] == [("srvtoolu_01", "2")]
    calls = [e.call for e in events if isinstance(e, ToolExecutionStarted)]
    assert [(c.name, c.caller) for c in calls] == [("get_expenses", "srvtoolu_01")] * 2
    assert {t.caller for t in result.trail} == {"srvtoolu_01"}
    second = server.requests[1].body
    anthropic_request(second)
    assert second["container"] == "container_01"
    assert second["messages"][2]["content"][0]["content"] == json.dumps([{"amount": 10}] * 3)


def test_rounds_a_providers_program_asks_for_are_not_the_models_tool_rounds():
    def call(n: int) -> tooluse.ToolCall:
        arguments = {"employee": "a"}
        return tooluse.ToolCall(id=f"c{n}", name="get_expenses", arguments=arguments, caller="p")

    script = tooluse.ScriptedBackend([[call(1)], [call(2)], [call(3)], "done"])
    result = tooluse.run(script, "q", tools=[EXPENSES], max_tool_iters=1, max_identical_calls=5)
    assert result.final_text == "done" and [t.caller for t in result.trail] == ["p"] * 3
    assert result.iterations == 3


def test_a_backend_without_code_execution_is_refused_clearly():
    old = AnthropicBackend("claude-sonnet-4-5", api_key="k")
    with pytest.raises(ValueError, match="runs no programs of its own.*code_mode=True"):
        tooluse.run(old, "q", tools=[EXPENSES], code_mode=CodeMode(provider=True))


# -- OpenAI Responses -------------------------------------------------------------------------

JS = "const rs = await Promise.all(['a','b'].map(e => tools.get_expenses({employee: e})));"
PROGRAM_OUTPUT: list[dict[str, Any]] = [
    {
        "type": "program",
        "id": "prog_1",
        "call_id": "call_prog",
        "code": JS,
        "fingerprint": "fp-opaque",
    },
    {
        "type": "function_call",
        "id": "fc_a",
        "call_id": "call_a",
        "name": "get_expenses",
        "arguments": '{"employee": "a"}',
        "status": "completed",
        "caller": {"type": "program", "caller_id": "call_prog"},
    },
]
PROGRAM_DONE: list[dict[str, Any]] = [
    {
        "type": "program_output",
        "id": "po_1",
        "call_id": "call_prog",
        "result": "3 items",
        "status": "completed",
    },
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Three.", "annotations": []}],
    },
]


def test_the_responses_program_items_are_valid_output_items():
    from openai.types.responses import ResponseOutputItem

    adapter: TypeAdapter[Any] = TypeAdapter(ResponseOutputItem)
    names = [type(adapter.validate_python(i)).__name__ for i in PROGRAM_OUTPUT + PROGRAM_DONE]
    assert names == [
        "Program",
        "ResponseFunctionToolCall",
        "ProgramOutput",
        "ResponseOutputMessage",
    ]


def test_responses_offers_programmatic_tool_calling_and_each_functions_callers():
    from openai.types.responses import FunctionToolParam
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    body = openai_responses.encode_request(
        [ChatMessage.user("Total?")], [EXPENSES, SUBMIT], ON, model="gpt-5.4"
    )
    TypeAdapter(ResponseCreateParamsNonStreaming).validate_python(body)
    program_tool, get_expenses, submit = body["tools"]
    assert program_tool == {"type": "programmatic_tool_calling"}
    for tool in (get_expenses, submit):
        known_keys(tool, FunctionToolParam)
    assert get_expenses["allowed_callers"] == ["programmatic"]
    assert submit["allowed_callers"] == ["direct", "programmatic"]


def test_responses_program_calls_decode_with_their_caller_and_are_replayed():
    from openai.types.responses import ResponseInputItemParam

    body = {"id": "resp_1", "status": "completed", "output": copy.deepcopy(PROGRAM_OUTPUT)}
    result = openai_responses.decode_response(body, model="gpt-5.4")
    (call,) = result.tool_calls
    assert (call.id, call.caller) == ("call_a", "call_prog")
    assert result.programs == (ProviderProgram(id="call_prog", runner="openai", code=JS),)
    history = [
        ChatMessage.user("Total?"),
        result.to_message(),
        ChatMessage.tool_result(ToolResult.success("call_a", "get_expenses", [{"amount": 10}])),
    ]
    replayed = openai_responses.encode_request(history, [EXPENSES], ON, model="gpt-5.4")
    items = replayed["input"]
    assert items[1] == PROGRAM_OUTPUT[0]  # the program item whole, fingerprint included
    assert items[2]["caller"] == {"type": "program", "caller_id": "call_prog"}
    assert items[3]["type"] == "function_call_output" and items[3]["caller"] == items[2]["caller"]
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseInputItemParam)
    for item in items:
        adapter.validate_python(item)
    done = openai_responses.decode_response(
        {"id": "resp_2", "status": "completed", "output": copy.deepcopy(PROGRAM_DONE)},
        model="gpt-5.4",
    )
    assert done.programs == (ProviderProgram(id="call_prog", runner="openai", output="3 items"),)
    assert done.text == "Three."


def test_a_run_with_openai_running_the_program(server):
    server.replies += [
        Reply(json={"id": "r1", "status": "completed", "output": copy.deepcopy(PROGRAM_OUTPUT)}),
        Reply(json={"id": "r2", "status": "completed", "output": copy.deepcopy(PROGRAM_DONE)}),
    ]
    # a compatible server is not OpenAI: its capabilities are given, as a user would
    caps = tooluse.ModelCapabilities(supports_code_execution=True)
    backend = OpenAIBackend(
        "gpt-5.4", api="responses", base_url=server.url, api_key="k", capabilities=caps
    )
    events: list[Any] = []
    result = tooluse.run(
        backend,
        "Total?",
        tools=[EXPENSES],
        code_mode=CodeMode(provider=True),
        on_event=events.append,
    )
    assert result.final_text == "Three."
    assert [(e.program_id, e.runner) for e in events if isinstance(e, ProgramStarted)] == [
        ("call_prog", "openai")
    ]
    assert [e.output for e in events if isinstance(e, ProgramFinished)] == ["3 items"]
    assert [t.caller for t in result.trail] == ["call_prog"]
    sent = server.requests[1].body
    assert sent["input"][1]["type"] == "program" and sent["input"][3]["caller"]["caller_id"] == (
        "call_prog"
    )
