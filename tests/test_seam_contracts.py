"""The two seams the loop talks to: a Backend built from one ``agenerate``, and an executor
built from ``definitions`` plus ``aexecute_batch``; and the loop's own rules at those seams."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from tooluse import (
    ChatMessage,
    GenerationResult,
    ModelCapabilities,
    ParseError,
    ScriptedBackend,
    StopReason,
    TextDelta,
    ToolCall,
    ToolDefinition,
    ToolResult,
    arun,
    run,
)
from tooluse.execution import AbstractToolExecutor, ToolExecutor
from tooluse.formats import get_parser
from tooluse.loop import aiter_run, build_setup, drive_sync, initial_history, iter_run
from tooluse.providers.base import BaseBackend, GenerationDone, as_backend, final_result


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def finish(answer: str) -> str:
    """Give the final answer."""
    return answer


class OneMethod(BaseBackend):
    """Implements only the required method: call ``add`` once, then answer with its result."""

    def __init__(self) -> None:
        self.requests: list[tuple[ChatMessage, ...]] = []

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        self.requests.append(tuple(messages))
        await asyncio.sleep(0)
        if messages[-1].role == "tool":
            return GenerationResult(text=f"It is {messages[-1].result.output}.")
        call = ToolCall(id="c1", name="add", arguments={"a": 2, "b": 40})
        return GenerationResult(tool_calls=(call,), finish_reason="tool_calls")


def test_a_backend_with_only_agenerate_serves_every_entry_point():
    backend = OneMethod()
    assert run(backend, "2+40?", tools=[add]).final_text == "It is 42."
    assert asyncio.run(arun(backend, "2+40?", tools=[add])).final_text == "It is 42."
    streamed = list(iter_run(backend, "2+40?", tools=[add], stream=True))
    assert streamed[-1].result.final_text == "It is 42."
    assert "It is 42." in [e.text for e in streamed if isinstance(e, TextDelta)]
    # the derived blocking call also works from inside a running event loop (notebooks)

    async def inside_a_loop() -> str:
        return backend.generate([ChatMessage.user("x")], [add_definition()]).tool_calls[0].name

    assert asyncio.run(inside_a_loop()) == "add"


def add_definition() -> ToolDefinition:
    return ToolDefinition.from_callable(add)


def test_the_derived_stream_ends_with_the_whole_turn():
    events = list(OneMethod().stream([ChatMessage.user("x")], [add_definition()]))
    assert isinstance(events[-1], GenerationDone)
    assert events[-1].result.tool_calls[0].arguments == {"a": 2, "b": 40}
    assert final_result(events).finish_reason == "tool_calls"


class AsyncStreaming(BaseBackend):
    """Streams asynchronously only; the second piece waits until the first was consumed."""

    def __init__(self) -> None:
        self.first_seen = threading.Event()

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        raise AssertionError("streaming requests must not fall back to agenerate")

    async def astream(self, messages, tools=(), params=None, tool_choice="auto"):
        yield TextDelta(text="first ")
        # only a consumer that gets events as they come sets it (the event is a thread's)
        assert await asyncio.to_thread(self.first_seen.wait, 10)
        yield TextDelta(text="second")
        yield GenerationDone(result=GenerationResult(text="first second"))


def test_a_blocking_stream_of_an_async_streaming_backend_hands_over_each_event_as_it_comes():
    backend = AsyncStreaming()
    seen = []
    for event in backend.stream([ChatMessage.user("x")]):
        seen.append(event)
        if isinstance(event, TextDelta) and event.text == "first ":
            backend.first_seen.set()
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["first ", "second"]
    assert isinstance(seen[-1], GenerationDone)


class EarlierInterface:
    """A backend written to the earlier names only (no BaseBackend)."""

    def __init__(self) -> None:
        self.calls = 0

    def generate_with_tools(self, messages, tools=(), params=None, tool_choice="auto"):
        self.calls += 1
        return GenerationResult(text="old style")


def test_a_backend_written_to_the_earlier_names_still_runs():
    backend = EarlierInterface()
    assert run(backend, "hi").final_text == "old style"
    assert asyncio.run(arun(backend, "hi")).final_text == "old style"
    assert backend.calls == 2


def test_something_that_is_not_a_backend_is_refused_with_what_to_do():
    with pytest.raises(TypeError, match="BaseBackend"):
        as_backend(object())
    with pytest.raises(TypeError, match="agenerate"):
        run(object(), "hi")  # type: ignore[arg-type]


def test_a_backend_missing_agenerate_cannot_be_built():
    class Incomplete(BaseBackend):
        pass

    with pytest.raises(TypeError, match="agenerate"):
        Incomplete()  # type: ignore[abstract]


class RoundLogger(AbstractToolExecutor):
    """An executor from the two required members only: answers every call with its name."""

    def __init__(self, tools: Sequence[ToolDefinition]) -> None:
        self._tools = tuple(tools)
        self.batches: list[list[str]] = []

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        return self._tools

    async def aexecute_batch(self, calls, *, cancel=None):
        self.batches.append([c.name for c in calls])
        return tuple(ToolResult.success(c.id, c.name, f"ran {c.name}") for c in calls)


def two_calls_then_answer() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [
                ToolCall(id="a", name="add", arguments={"a": 1, "b": 2}),
                ToolCall(id="b", name="add", arguments={"a": 3, "b": 4}),
            ],
            "done",
        ]
    )


def test_an_executor_with_only_the_required_members_runs_whole_rounds_sync_and_async():
    executor = RoundLogger([add_definition()])
    backend = two_calls_then_answer()
    setup = build_setup(backend, executor=executor)
    events = list(drive_sync(backend, setup, initial_history("q", None)))
    result = events[-1].result
    assert executor.batches == [["add", "add"]]
    assert [t.output for t in result.trail] == ["ran add", "ran add"]

    async def go() -> list[str]:
        backend = two_calls_then_answer()
        setup = build_setup(backend, executor=executor)
        from tooluse.loop import drive_async

        events = [e async for e in drive_async(backend, setup, initial_history("q", None))]
        return [t.output for t in events[-1].result.trail]

    assert asyncio.run(go()) == ["ran add", "ran add"]
    assert executor.execute(ToolCall(id="x", name="add", arguments={})).output == "ran add"


def test_prepare_checks_arguments_against_the_executors_own_definitions():
    executor = RoundLogger([add_definition()])
    bad = executor.prepare(ToolCall(id="x", name="add", arguments={"a": "one"}))
    assert isinstance(bad, ToolResult) and bad.is_error
    unknown = executor.prepare(ToolCall(id="y", name="nope", arguments={}))
    assert isinstance(unknown, ToolResult) and "nope" in unknown.output


def test_the_local_executor_is_one_class_for_sync_and_async_batches():
    with ToolExecutor([add], max_concurrency=2) as executor:
        calls = [ToolCall(id=str(i), name="add", arguments={"a": i, "b": i}) for i in range(5)]
        assert [r.output for r in executor.execute_batch(calls)] == ["0", "2", "4", "6", "8"]
        results = asyncio.run(executor.aexecute_batch(calls))
        assert [r.call_id for r in results] == ["0", "1", "2", "3", "4"]


def test_an_ordinary_call_beside_a_terminal_call_ends_the_run_in_that_turn():
    terminal = ToolDefinition.from_callable(finish, is_terminal=True)
    backend = ScriptedBackend(
        [
            [
                ToolCall(id="a", name="add", arguments={"a": 1, "b": 2}),
                ToolCall(id="f", name="finish", arguments={"answer": "three"}),
            ],
            "the model must not be asked again",
        ]
    )
    result = run(backend, "q", tools=[add, terminal])
    assert result.stop_reason is StopReason.TERMINAL_TOOL
    assert result.output == {"answer": "three"}
    assert len(backend.requests) == 1
    assert [t.name for t in result.trail] == ["add", "finish"]


def test_parse_errors_of_any_backend_go_back_to_the_model_once_per_turn():
    bad = ParseError(message="the arguments are not JSON", raw="<tool_call>{oops")
    backend = ScriptedBackend([GenerationResult(text="", parse_errors=(bad,)), "fine"])
    result = run(backend, "q", tools=[add])
    assert result.final_text == "fine"
    retry = backend.requests[1].messages[-1]
    assert retry.role == "user" and "the arguments are not JSON" in retry.content


NO_FC = ModelCapabilities(supports_function_calling=False)


async def test_a_text_format_model_streams_in_the_loop_and_its_calls_are_read():
    hermes = get_parser("hermes")
    reply = 'Adding.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
    backend = ScriptedBackend([reply, "It is 5."], capabilities=NO_FC)
    events = [
        e
        async for e in aiter_run(backend, "2+3?", tools=[add], tool_call_parser=hermes, stream=True)
    ]
    result = events[-1].result
    assert result.mode == "text"
    assert [t.output for t in result.trail] == ["5"]
    assert result.final_text == "It is 5."
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "Adding." in "".join(texts) and "It is 5." in "".join(texts)
    # the upstream was asked for plain text, with the tools in its prompt
    first = backend.requests[0]
    assert first.tools == () and "add" in first.messages[0].content


class EarlierNamedSubclass(ScriptedBackend):
    """Overrides an earlier name and calls up through it (as the seeds' users write)."""

    def generate_with_tools(self, messages, tools=(), params=None, tool_choice="auto"):
        return super().generate_with_tools(messages, tools, params, tool_choice)


def test_a_subclass_on_the_earlier_names_survives_being_pickled_by_value(tmp_path):
    # Ray sends classes of modules it cannot import by value; the copy, rebuilt in another
    # process, must still know which of its methods are aliases, or calling up through them
    # recurses forever.
    import subprocess
    import sys

    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        sent = tmp_path / "backend.pickle"
        sent.write_bytes(cloudpickle.dumps(EarlierNamedSubclass(["sent by value"])))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    script = (
        "import sys; from ray import cloudpickle; from tooluse import ChatMessage\n"
        f"backend = cloudpickle.loads(open({str(sent)!r}, 'rb').read())\n"
        "print(backend.generate([ChatMessage.user('hi')]).text)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "sent by value"
