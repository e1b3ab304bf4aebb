"""The runner priority (native, text parser, none) and the text-parser path of the loop."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from tooluse import (
    ChatMessage,
    ModelCapabilities,
    ParseError,
    ScriptedBackend,
    StopReason,
    ToolCall,
    ToolDefinition,
    ToolResult,
    run,
    validate_history,
)
from tooluse.formats import ParsedToolResponse

NO_FC = ModelCapabilities(supports_function_calling=False)


class LineParser:
    """A tiny text format for the tests: ``CALL name {json}`` lines."""

    def __init__(self) -> None:
        self.parsed: list[str] = []

    def format_tools(self, tools: Sequence[ToolDefinition]) -> str:
        return "TOOLS: " + ", ".join(t.name for t in tools) + "\nCall one with: CALL name {json}"

    def parse(self, text: str, available_tools=()) -> ParsedToolResponse:
        self.parsed.append(text)
        calls, errors, rest = [], [], []
        for line in text.splitlines():
            match = re.match(r"CALL (\w+) (.*)", line)
            if not match:
                rest.append(line)
                continue
            try:
                arguments = json.loads(match.group(2))
                calls.append(ToolCall(name=match.group(1), arguments=arguments))
            except json.JSONDecodeError as exc:
                errors.append(ParseError(message=f"bad JSON: {exc.msg}", raw=line))
        return ParsedToolResponse(
            text="\n".join(rest), tool_calls=tuple(calls), errors=tuple(errors)
        )


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_native_calling_wins_even_when_a_parser_is_given():
    parser = LineParser()
    backend = ScriptedBackend([[ToolCall(id="n", name="add", arguments={"a": 1, "b": 2})], "3"])
    result = run(backend, "1+2?", tools=[add], tool_call_parser=parser)
    assert result.mode == "native"
    assert [t.name for t in backend.requests[0].tools] == ["add"]
    assert parser.parsed == []
    assert result.trail[0].output == "3"


def test_text_mode_formats_tools_into_the_system_prompt_and_parses_calls():
    parser = LineParser()
    backend = ScriptedBackend(
        ['Let me add.\nCALL add {"a": 2, "b": 40}', "The sum is 42."], capabilities=NO_FC
    )
    result = run(backend, "2+40?", tools=[add], tool_call_parser=parser, system_prompt="Be exact.")
    assert result.mode == "text"
    assert result.stop_reason is StopReason.FINAL_TEXT
    assert result.final_text == "The sum is 42."
    first = backend.requests[0]
    assert first.tools == ()
    assert first.messages[0].role == "system"
    assert first.messages[0].content.startswith("Be exact.")
    assert "TOOLS: add" in first.messages[0].content
    # The stored history keeps the user's system prompt and native-style calls and results.
    assert result.messages[0].content == "Be exact."
    assistant = result.messages[2]
    assert assistant.content == "Let me add." and assistant.tool_calls[0].name == "add"
    assert result.trail[0].output == "42"
    # The model sees its own earlier turn as the text it wrote, and the results as a user turn.
    second = backend.requests[1].messages
    assert second[2].role == "assistant" and not second[2].tool_calls
    assert second[2].content == 'Let me add.\nCALL add {"a": 2, "b": 40}'
    assert second[3].role == "user"
    assert second[3].content == "<tool_response>\n42\n</tool_response>"
    assert all(m.role != "tool" for m in second)
    validate_history(result.messages)
    for request in backend.requests:
        validate_history(list(request.messages))


def test_text_mode_uses_the_parsers_result_wording_and_renders_foreign_calls():
    class WordingParser(LineParser):
        def format_tool_results(self, results):
            return "RESULTS: " + "; ".join(f"{r.tool_name}={r.output}" for r in results)

    history = [
        ChatMessage.user("1+1 and 2+2?"),
        ChatMessage.assistant("", [ToolCall(id="x", name="add", arguments={"a": 1, "b": 1})]),
        ChatMessage.tool_result(ToolResult.success("x", "add", "2")),
        ChatMessage.user("and 2+2?"),
    ]
    backend = ScriptedBackend(['CALL add {"a": 2, "b": 2}', "4"], capabilities=NO_FC)
    run(backend, history, tools=[add], tool_call_parser=WordingParser())
    first = backend.requests[0].messages
    assert (
        first[2].content
        == '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call>'
    )
    assert first[3].content == "RESULTS: add=2"
    second = backend.requests[1].messages
    assert second[-1].role == "user" and second[-1].content == "RESULTS: add=4"


def test_text_mode_parse_errors_are_sent_back_and_the_model_retries():
    parser = LineParser()
    backend = ScriptedBackend(
        ["CALL add {a: 1}", 'CALL add {"a": 1, "b": 1}', "2"], capabilities=NO_FC
    )
    result = run(backend, "1+1", tools=[add], tool_call_parser=parser)
    assert result.final_text == "2"
    feedback = result.messages[2]
    assert feedback.role == "user" and "could not be read" in feedback.content
    assert "bad JSON" in feedback.content
    assert [t.output for t in result.trail] == ["2"]


def test_text_mode_unknown_tool_from_text_is_answered():
    backend = ScriptedBackend(['CALL mul {"a": 2}', "sorry"], capabilities=NO_FC)
    result = run(backend, "q", tools=[add], tool_call_parser=LineParser())
    assert result.trail[0].is_error and "mul" in result.trail[0].output
    validate_history(result.messages)


def test_text_mode_with_the_hermes_parser():
    from tooluse.formats import HermesToolCallParser

    backend = ScriptedBackend(
        [
            '<tool_call>\n{"name": "add", "arguments": {"a": 20, "b": 22}}\n</tool_call>',
            "42",
        ],
        capabilities=NO_FC,
    )
    result = run(
        backend, [ChatMessage.user("20+22?")], tools=[add], tool_call_parser=HermesToolCallParser()
    )
    assert result.mode == "text"
    assert result.trail[0].arguments == {"a": 20, "b": 22}
    assert result.trail[0].output == "42"
    assert "<tools>" in backend.requests[0].messages[0].content
    validate_history(result.messages)
