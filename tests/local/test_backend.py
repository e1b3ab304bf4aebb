"""LlamaCppBackend on the real embedded SmolLM2: calls, text, streaming, async, cache, errors."""

from __future__ import annotations

import asyncio
import shutil

import jsonschema
import pytest

from tooluse import ChatMessage, SamplingParams, ToolCall, ToolDefinition, ToolResult
from tooluse.errors import (
    ContextLengthError,
    GrammarError,
    MissingDependencyError,
    ToolNotFoundError,
)
from tooluse.events import TextDelta, ToolCallFinished, ToolCallStarted
from tooluse.local import HERMES, AlwaysCall, LlamaCppBackend, NeverCall
from tooluse.local.chat_prompt import ChatTemplateError
from tooluse.local.model_files import ModelFileError, default_model_path
from tooluse.providers.base import Backend, GenerationDone

pytestmark = pytest.mark.slow

SHORT = SamplingParams(max_tokens=64)


def user(text: str) -> list[ChatMessage]:
    return [ChatMessage.user(text)]


def test_is_a_backend(backend):
    assert isinstance(backend, Backend)
    assert backend.profile.name == "smollm2"


def test_prompt_evaluation_and_generation_use_the_default_thread_count(backend):
    from tooluse.local.threads import default_threads

    params = backend.llm.context_params
    assert params.n_threads == params.n_threads_batch == default_threads()


def test_required_gives_a_valid_call_of_the_right_tool(backend, tools):
    result = backend.generate_with_tools(
        user("What's the weather in Paris?"), tools, SHORT, "required"
    )
    assert result.finish_reason == "tool_calls"
    (call,) = result.tool_calls
    assert call.name == "get_weather"
    jsonschema.validate(call.arguments, tools[0].parameters_schema)
    assert "paris" in call.arguments["city"].lower()


def test_named_tool_choice_forces_that_tool(backend, tools):
    result = backend.generate_with_tools(
        user("What's the weather in Paris?"), tools, SHORT, "get_time"
    )
    assert [c.name for c in result.tool_calls] == ["get_time"]
    assert set(result.tool_calls[0].arguments) <= {"timezone_name"}


def test_unknown_named_tool_is_rejected(backend, tools):
    with pytest.raises(ToolNotFoundError, match="nope"):
        backend.generate_with_tools(user("hi"), tools, SHORT, "nope")


def test_none_answers_in_text(backend, tools):
    result = backend.generate_with_tools(
        user("What is the capital of France?"), tools, SHORT, "none"
    )
    assert not result.tool_calls
    assert "Paris" in result.text


def test_auto_uses_the_decider(backend, tools):
    original = backend.decider
    try:
        backend.decider = AlwaysCall()
        called = backend.generate_with_tools(user("What is 2 + 2?"), tools, SHORT, "auto")
        backend.decider = NeverCall()
        answered = backend.generate_with_tools(user("What is 2 + 2?"), tools, SHORT, "auto")
    finally:
        backend.decider = original
    assert called.tool_calls and not called.text
    assert answered.text and not answered.tool_calls


def test_an_auto_call_the_request_does_not_ground_becomes_a_text_answer(backend, tools):
    from tooluse.local.grounding import GroundingCheck

    original = backend.decider
    request = user("What is the capital of France?")
    try:
        backend.decider = AlwaysCall()  # the call path, whatever the decider would say
        checked = backend.generate_with_tools(request, tools, SHORT, "auto")
        kept = backend.generate_with_tools(user("What's the weather in Paris?"), tools, SHORT)
        forced = backend.generate_with_tools(request, tools, SHORT, "required")
        backend.grounding = None
        unchecked = backend.generate_with_tools(request, tools, SHORT, "auto")
        assert backend.model_spec.endswith("#grounding=off")  # kept by the model string
    finally:
        backend.decider, backend.grounding = original, GroundingCheck()
    # forced to call, the model makes one up (a city the request never names) ...
    assert [c.name for c in unchecked.tool_calls] == ["get_weather"]
    assert unchecked.tool_calls[0].arguments["city"].lower() not in request[0].content.lower()
    # ... which the check turns into a text answer; both prompts count as spent
    assert not checked.tool_calls and checked.text and checked.finish_reason == "stop"
    assert "answered in text" in checked.raw["plan"]
    assert unchecked.tool_calls[0].arguments["city"] in checked.raw["refused_calls"]
    assert checked.usage.input_tokens > unchecked.usage.input_tokens
    assert [c.arguments for c in kept.tool_calls] == [{"city": "Paris"}]
    # a required call is never reviewed
    assert [(c.name, c.arguments) for c in forced.tool_calls] == [
        (c.name, c.arguments) for c in unchecked.tool_calls
    ]


def test_a_refused_repeat_hands_the_result_to_the_terminal_tool_or_answers_in_text(backend):
    from dataclasses import dataclass

    from tooluse.local.decision import ToolDecision
    from tooluse.local.grounding import REPEATED_CALLS, GroundingCheck

    @dataclass(frozen=True, kw_only=True)
    class EveryCallRepeats(GroundingCheck):
        """Says of every call after tool results that it repeats the turn before's."""

        def review(self, messages, calls, tools=()):
            return ToolDecision(call=False, reason=REPEATED_CALLS)

    class CallOn:
        """Calls after tool results too (``AlwaysCall`` answers once they are in)."""

        def decide(self, backend, messages, tools):
            return ToolDecision(call=True, reason="call on")

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def submit_answer(answer: str) -> str:
        """Submit the final answer."""
        return answer

    adding = ToolDefinition.from_callable(add)
    submit = ToolDefinition.from_callable(submit_answer, is_terminal=True)
    call = ToolCall(name="add", arguments={"a": 2, "b": 3})
    history = [
        ChatMessage.user("What is 2 + 3? Use add, then submit_answer."),
        ChatMessage.assistant(tool_calls=[call]),
        ChatMessage.tool_result(ToolResult(call_id=call.id, tool_name="add", output="5")),
    ]
    original = (backend.decider, backend.grounding)
    try:
        backend.decider, backend.grounding = CallOn(), EveryCallRepeats()
        handed_in = backend.generate(history, [adding, submit], SHORT, "auto")
        answered = backend.generate(history, [adding], SHORT, "auto")
    finally:
        backend.decider, backend.grounding = original
    assert [c.name for c in handed_in.tool_calls] == ["submit_answer"]
    assert handed_in.raw["plan"] == f"{REPEATED_CALLS}: the terminal tool"
    assert handed_in.raw["refused_calls"]  # the refused turn's text is kept
    assert not answered.tool_calls and answered.text
    assert answered.raw["plan"] == f"{REPEATED_CALLS}: answered in text"


def test_auto_answers_once_tool_results_are_in(backend, tools):
    call = ToolCall(name="get_weather", arguments={"city": "Paris"})
    history = [
        ChatMessage.user("What's the weather in Paris?"),
        ChatMessage.assistant(tool_calls=[call]),
        ChatMessage.tool_result(
            ToolResult.success(call.id, "get_weather", {"city": "Paris", "temperature": 18})
        ),
    ]
    result = backend.generate_with_tools(history, tools, SHORT, "auto")
    assert not result.tool_calls
    assert result.text


def test_required_call_is_narrowed_to_the_most_relevant_tool(backend, tools):
    from tooluse.local.decision import rank_tools

    ranking = rank_tools(backend, "What is 1234 * 5678?", tools)
    assert ranking[0][1].name == "calculate"
    result = backend.generate_with_tools(user("What is 1234 * 5678?"), tools, SHORT, "required")
    assert [c.name for c in result.tool_calls] == ["calculate"]
    assert "1234" in result.tool_calls[0].arguments["expression"]


def asked_then_answered(name: str, arguments: dict, output: str):
    """The request "What is 1234 * 5678?", and it followed by a call and its result."""
    from tooluse.messages import ToolCall, ToolResult

    asked = user("What is 1234 * 5678?")
    call = ToolCall(id="c1", name=name, arguments=arguments)
    answered = [
        *asked,
        ChatMessage.assistant("", tool_calls=[call]),
        ChatMessage.tool_result(ToolResult(call_id="c1", tool_name=name, output=output)),
    ]
    return asked, answered


def test_first_narrows_the_first_call_of_a_request_and_not_the_next(backend, tools, monkeypatch):
    asked, answered = asked_then_answered("calculate", {"expression": "1234 * 5678"}, "7006652")
    everything = backend.grammar_for(tools, False)
    best = backend.grammar_for([t for t in tools if t.name == "calculate"], False)
    monkeypatch.setattr(backend, "narrow_tools", "first")
    with backend._lock:
        first = backend._prepare_turn(asked, tools, "required", SHORT)
        after = backend._prepare_turn(answered, tools, "required", SHORT)
    assert first.grammar is best and after.grammar is everything
    monkeypatch.setattr(backend, "narrow_tools", True)
    with backend._lock:
        assert backend._prepare_turn(answered, tools, "required", SHORT).grammar is best


def test_a_terminal_tool_that_ranks_first_is_not_forced_before_any_tool_result(backend, tools):
    import dataclasses

    # the request ranks calculate first; made terminal, it is the run-ending step
    ended = [dataclasses.replace(t, is_terminal=t.name == "calculate") for t in tools]
    asked, answered = asked_then_answered("get_weather", {"city": "Paris"}, "18")
    everything = backend.grammar_for(ended, False)
    best = backend.grammar_for([t for t in ended if t.name == "calculate"], False)
    with backend._lock:
        first = backend._prepare_turn(asked, ended, "required", SHORT)
        after = backend._prepare_turn(answered, ended, "required", SHORT)
        plain = backend._prepare_turn(asked, tools, "required", SHORT)
    assert first.grammar is everything  # the model chooses its first step
    assert after.grammar is best  # once results are in, the terminal tool can be forced
    assert plain.grammar is backend.grammar_for([t for t in tools if t.name == "calculate"], False)


def test_parallel_calls_are_allowed_only_when_asked(backend, tools):
    gbnf_one = backend.call_grammar_text(tools, parallel=False)
    gbnf_many = backend.call_grammar_text(tools, parallel=True)
    assert "{0,3}" not in gbnf_one and "{0,3}" in gbnf_many


def test_unconstrained_mode_parses_free_output(backend, tools):
    free = LlamaCppBackend.default(n_ctx=2048, constrain=False)
    try:
        result = free.generate_with_tools(
            user("What's the weather in Paris?"), tools, SHORT, "required"
        )
    finally:
        free.close()
    # the small model rarely writes a call when free; whatever it wrote is kept, never lost
    assert result.tool_calls or result.text or result.raw["output"] == ""


def test_stream_yields_text_deltas_then_done(backend):
    events = list(backend.stream_with_tools(user("Say hello."), (), SHORT, "none"))
    assert isinstance(events[-1], GenerationDone)
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas.strip() == events[-1].result.text


def test_stream_of_a_call_has_started_and_finished(backend, tools):
    events = list(backend.stream_with_tools(user("Time in Tokyo?"), tools, SHORT, "required"))
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(started) == len(finished) == 1
    assert started[0].id == finished[0].call.id
    assert events[-1].result.tool_calls == (finished[0].call,)


async def test_async_runs_off_the_event_loop(backend, tools):
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        result = await backend.agenerate_with_tools(
            user("Time in Paris?"), tools, SHORT, "required"
        )
    finally:
        task.cancel()
    assert result.tool_calls
    assert ticks > 0  # the loop kept running while the model generated


async def test_async_stream(backend):
    events = [e async for e in backend.astream_with_tools(user("Say hi."), (), SHORT, "none")]
    assert isinstance(events[-1], GenerationDone)


def test_prompt_prefix_is_reused_between_calls(backend, tools):
    backend.generate_with_tools(user("What's the weather in Rome?"), tools, SHORT, "required")
    second = backend.generate_with_tools(
        user("What's the weather in Oslo?"), tools, SHORT, "required"
    )
    assert backend.loop.last_prefill_tokens < second.usage.input_tokens / 5


def test_prompt_longer_than_the_context_is_a_clear_error(backend):
    small = LlamaCppBackend.default(n_ctx=256)
    try:
        with pytest.raises(ContextLengthError, match="context holds 256"):
            small.generate(user("word " * 400), params=SHORT)
        # the backend still works after the error
        assert small.generate(
            user("Say hi."), params=SamplingParams(max_tokens=8)
        ).usage.output_tokens
    finally:
        small.close()


def test_generation_stops_at_the_context_end(backend):
    small = LlamaCppBackend.default(n_ctx=256)
    try:
        result = small.generate(
            user("Write a long story about a dragon."), params=SamplingParams(max_tokens=5000)
        )
    finally:
        small.close()
    assert result.finish_reason == "length"
    # generation ran to the end of the context, not to max_tokens, and did not crash
    assert result.usage.input_tokens + result.usage.output_tokens == small.n_ctx


def test_schema_the_compiler_cannot_express_fails_before_generation(backend):
    bad = ToolDefinition(name="odd", description="x", input_schema={"type": "object", "not": {}})
    with pytest.raises(GrammarError, match="'not'"):
        backend.generate_with_tools(user("hi"), [bad], SHORT, "required")


def test_missing_model_file(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        LlamaCppBackend(tmp_path / "absent.gguf")


def test_file_that_is_not_gguf(tmp_path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model at all")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        LlamaCppBackend(fake)


def test_gguf_without_chat_template(tmp_path):
    # same file with its template key renamed (same length, so the file stays valid)
    data = default_model_path().read_bytes()
    key = b"tokenizer.chat_template"
    assert data.count(key) == 1
    patched = tmp_path / "notemplate.gguf"
    patched.write_bytes(data.replace(key, b"tokenizer.chat_templatX"))
    with pytest.raises(ChatTemplateError, match="no chat template"):
        LlamaCppBackend(patched, profile=HERMES, n_ctx=256)
    with_template = LlamaCppBackend(
        patched, profile=HERMES, n_ctx=256, chat_template="{{ messages[0]['content'] }}"
    )
    with_template.close()


def test_missing_llama_cpp_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "llama_cpp":
            raise ImportError("no module named llama_cpp")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    from tooluse.local.runtime import import_llama_cpp

    with pytest.raises(MissingDependencyError, match=r"tooluse\[local\]"):
        import_llama_cpp()


def test_load_model_prefixes():
    from tooluse.providers.model_registry import load_model

    assert isinstance(load_model("local", n_ctx=256), LlamaCppBackend)
    assert isinstance(load_model(f"llama-cpp:{default_model_path()}", n_ctx=256), LlamaCppBackend)
    with pytest.raises(ModelFileError):
        load_model("llama-cpp:/no/such/model.gguf")


def test_copied_model_with_other_name_gets_hermes_profile(tmp_path):
    copy = tmp_path / "other-model.gguf"
    shutil.copyfile(default_model_path(), copy)
    b = LlamaCppBackend(copy, n_ctx=256)
    try:
        # the GGUF's own name still says SmolLM2
        assert b.profile.name == "smollm2"
    finally:
        b.close()
