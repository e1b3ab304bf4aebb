import dataclasses

import pytest

from tooluse import ChatMessage, ToolCall, ToolResult, Usage
from tooluse.errors import ToolNotFoundError


def test_tool_result_success_and_failure():
    ok = ToolResult.success(call_id="1", tool_name="add", output="8")
    assert (ok.call_id, ok.tool_name, ok.output, ok.is_error) == ("1", "add", "8", False)
    structured = ToolResult.success(call_id="2", tool_name="w", output={"t": 21})
    assert structured.output == '{"t": 21}' and structured.structured == {"t": 21}
    bad = ToolResult.failure(call_id="3", tool_name="add", error=ValueError("boom"))
    assert bad.is_error and bad.output == "error: ValueError: boom"
    assert ToolResult.failure(
        call_id="4", tool_name="x", error=ToolNotFoundError("x", ["a"])
    ).output == ("error: unknown tool 'x'; available tools: a")


def test_chat_message_tool_result_and_frozen():
    res = ToolResult.success(call_id="c1", tool_name="today", output="2025-12-25")
    msg = ChatMessage.tool_result(res)
    assert msg.role == "tool" and msg.content == "2025-12-25" and msg.tool_call_id == "c1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.content = "x"  # type: ignore[misc]
    a = ChatMessage(role="assistant", content=None, tool_calls=[ToolCall(id="1", name="t")])  # type: ignore[arg-type]
    assert a.content == "" and isinstance(a.tool_calls, tuple)


def test_ids_are_unique_and_usage_adds():
    assert ToolCall(name="a").id != ToolCall(name="a").id
    u = Usage(input_tokens=3, output_tokens=4, requests=1) + Usage(input_tokens=1, requests=1)
    assert (u.input_tokens, u.output_tokens, u.total_tokens, u.requests) == (4, 4, 8, 2)
