"""The tool loop: stop reasons, trail, usage, limits, repeats, forced choice, hooks, events,
valid histories, and run/arun behaving the same."""

from __future__ import annotations

import asyncio
import threading

import pytest

import tooluse
from tooluse import (
    CancellationToken,
    ChatMessage,
    GenerationResult,
    ModelCapabilities,
    RunResult,
    ScriptedBackend,
    StopReason,
    TextDelta,
    ToolCall,
    ToolDefinition,
    ToolParameter,
    ToolResult,
    Usage,
    Veto,
    arun,
    run,
    validate_history,
)
from tooluse.loop import (
    ModelTurnFinished,
    RunFinished,
    ToolExecutionFinished,
    ToolExecutionStarted,
    iter_run,
)


def get_weather(city: str, units: str = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
        units: Temperature units.
    """
    return f"18 degrees {units} and sunny in {city}"


def get_time(timezone: str) -> str:
    """Get the current time in a timezone.

    Args:
        timezone: An IANA timezone name.
    """
    return f"14:05 in {timezone}"


submit = ToolDefinition(
    name="submit_answer",
    description="Submit the final answer",
    parameters=(ToolParameter("answer", description="The answer"),),
    is_terminal=True,
)


def tc(name: str, id: str | None = None, **arguments) -> ToolCall:
    return ToolCall(id=id or f"id_{name}_{len(arguments)}", name=name, arguments=arguments)


def weather_script():
    return [
        [
            tc("get_weather", "w1", city="Paris"),
            tc("get_time", "t1", timezone="Europe/Paris"),
        ],
        GenerationResult(
            text="Sunny, 18 degrees, 14:05.",
            usage=Usage(input_tokens=30, output_tokens=8, requests=1),
        ),
    ]


def assert_valid(result: RunResult) -> None:
    validate_history(result.messages)  # raises on any unanswered / orphaned / duplicate id


def shape(result: RunResult):
    return [(m.role, m.content, tuple(c.name for c in m.tool_calls)) for m in result.messages]


# -- the basic loop ------------------------------------------------------------------------------


def test_multi_call_round_then_final_answer():
    backend = ScriptedBackend(weather_script())
    result = run(backend, "Weather and time in Paris?", tools=[get_weather, get_time])
    assert result.stop_reason is StopReason.FINAL_TEXT
    assert result.final_text == "Sunny, 18 degrees, 14:05."
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [t.name for t in result.trail] == ["get_weather", "get_time"]
    assert result.trail[0].arguments == {"city": "Paris"}
    assert result.trail[0].output == "18 degrees celsius and sunny in Paris"
    assert not result.trail[0].is_error and result.trail[0].duration >= 0
    assert result.usage == Usage(input_tokens=30, output_tokens=8, requests=2)
    assert result.iterations == 1
    assert result.new_messages == result.messages[1:]
    # The second request carried the tool results, answered in call order.
    second = backend.requests[1].messages
    assert [m.tool_call_id for m in second if m.role == "tool"] == ["w1", "t1"]
    assert {t.name for t in backend.requests[0].tools} == {"get_weather", "get_time"}
    assert_valid(result)


async def test_arun_matches_run():
    sync_result = run(ScriptedBackend(weather_script()), "q", tools=[get_weather, get_time])
    async_result = await arun(ScriptedBackend(weather_script()), "q", tools=[get_weather, get_time])
    assert shape(sync_result) == shape(async_result)
    assert sync_result.stop_reason == async_result.stop_reason
    assert sync_result.usage == async_result.usage
    assert [(t.name, t.output) for t in sync_result.trail] == [
        (t.name, t.output) for t in async_result.trail
    ]


def test_input_history_is_not_mutated_and_system_prompt_comes_first():
    history = [ChatMessage.user("hello")]
    result = run(ScriptedBackend(["hi"]), history, system_prompt="Be brief.")
    assert history == [ChatMessage.user("hello")]
    assert [m.role for m in result.messages] == ["system", "user", "assistant"]
    assert result.messages[0].content == "Be brief."
    with pytest.raises(ValueError, match="system"):
        run(
            ScriptedBackend(["x"]),
            [ChatMessage.system("a"), ChatMessage.user("b")],
            system_prompt="c",
        )


def test_bad_prompts_are_refused_clearly():
    with pytest.raises(TypeError, match="ChatMessage"):
        run(ScriptedBackend(["x"]), [{"role": "user", "content": "hi"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="empty"):
        run(ScriptedBackend(["x"]), [])


def test_unanswered_calls_in_the_input_history_are_closed_before_sending():
    history = [
        ChatMessage.user("q"),
        ChatMessage.assistant("", [tc("get_time", "old", timezone="UTC")]),
        ChatMessage.user("never mind"),
    ]
    backend = ScriptedBackend(["ok"])
    result = run(backend, history, tools=[get_time])
    sent = backend.requests[0].messages
    assert sent[2].role == "tool" and sent[2].tool_call_id == "old" and sent[2].result.is_error
    assert_valid(result)


# -- errors stay data ----------------------------------------------------------------------------


def test_tool_errors_unknown_tools_and_broken_json_do_not_stop_the_run():
    def explode(x: int) -> int:
        raise RuntimeError("disk on fire")

    backend = ScriptedBackend(
        [
            [
                tc("explode", "e", x=1),
                tc("teleport", "u", to="Mars"),
                ToolCall(id="j", name="get_time", raw_arguments='{"timezone": "UTC"'),
            ],
            "Sorry, everything failed.",
        ]
    )
    result = run(backend, "go", tools=[explode, get_time])
    assert result.stop_reason is StopReason.FINAL_TEXT
    outputs = {t.call_id: t for t in result.trail}
    assert outputs["e"].is_error and "disk on fire" in outputs["e"].output
    assert outputs["u"].is_error and "teleport" in outputs["u"].output
    assert outputs["j"].is_error and "JSON" in outputs["j"].output
    assert outputs["j"].arguments == {"_raw": '{"timezone": "UTC"'}
    assert_valid(result)


def test_per_tool_timeout_in_the_loop_becomes_an_error_result():
    release = threading.Event()

    def slow_lookup(q: str) -> str:
        release.wait(10)
        return "late"

    backend = ScriptedBackend([[tc("slow_lookup", "s", q="x")], "gave up"])
    try:
        result = run(backend, "go", tools=[slow_lookup], tool_timeouts={"slow_lookup": 0.05})
    finally:
        release.set()
    assert result.trail[0].is_error and "timed out" in result.trail[0].output
    assert result.final_text == "gave up"


def test_duplicate_call_ids_from_the_model_are_made_unique():
    backend = ScriptedBackend(
        [
            [tc("get_time", "same", timezone="UTC"), tc("get_time", "same", timezone="Asia/Tokyo")],
            [tc("get_time", "same", timezone="Europe/Paris")],
            "done",
        ]
    )
    result = run(backend, "times", tools=[get_time])
    ids = [c.id for m in result.messages for c in m.tool_calls]
    assert len(ids) == len(set(ids)) == 3
    assert ids[0] == "same"
    assert_valid(result)


# -- stopping --------------------------------------------------------------------------------------


def test_terminal_tool_arguments_become_the_output():
    backend = ScriptedBackend(
        [[tc("get_weather", "w", city="Oslo")], [tc("submit_answer", "s", answer="cold")]]
    )
    result = run(backend, "q", tools=[get_weather, submit])
    assert result.stop_reason is StopReason.TERMINAL_TOOL
    assert result.output == {"answer": "cold"}
    assert result.messages[-1].role == "tool" and result.messages[-1].tool_call_id == "s"
    assert backend.remaining == 0
    assert_valid(result)


def test_terminal_tool_with_bad_arguments_gets_another_chance():
    backend = ScriptedBackend(
        [[tc("submit_answer", "bad", answr="typo")], [tc("submit_answer", "good", answer="42")]]
    )
    result = run(backend, "q", tools=[submit])
    assert result.stop_reason is StopReason.TERMINAL_TOOL
    assert result.output == {"answer": "42"}
    assert result.trail[0].is_error and "answer" in result.trail[0].output


def test_terminal_tool_implementation_is_not_run():
    ran = []

    def finish(answer: str) -> str:
        ran.append(answer)
        return "ran"

    terminal = ToolDefinition.from_callable(finish, is_terminal=True)
    result = run(ScriptedBackend([[tc("finish", "f", answer="x")]]), "q", tools=[terminal])
    assert result.output == {"answer": "x"} and ran == []


def test_iteration_limit_answers_the_pending_calls_and_stops():
    calls = [[tc("get_time", f"c{i}", timezone=f"Zone/{i}")] for i in range(5)]
    backend = ScriptedBackend(calls)
    result = run(backend, "loop forever", tools=[get_time], max_tool_iters=2)
    assert result.stop_reason is StopReason.MAX_TOOL_ITERS
    assert result.iterations == 2
    executed = [t for t in result.trail if not t.is_error]
    assert len(executed) == 2
    last = result.messages[-1]
    assert last.role == "tool" and last.tool_call_id == "c2"
    assert last.result.is_error and "limit of 2" in last.result.output
    assert len(backend.requests) == 3
    assert_valid(result)


def test_final_answer_on_limit_forbids_tools_in_the_last_request():
    backend = ScriptedBackend([[tc("get_time", "c0", timezone="UTC")], "It is 14:05."])
    result = run(backend, "q", tools=[get_time], max_tool_iters=1, final_answer_on_limit=True)
    assert backend.requests[0].tool_choice == "auto"
    assert backend.requests[1].tool_choice == "none"
    assert result.final_text == "It is 14:05."


def test_zero_iterations_allowed_means_no_tool_runs():
    ran = []
    backend = ScriptedBackend([[tc("probe", "p")]])
    result = run(backend, "q", tools={"probe": lambda: ran.append(1)}, max_tool_iters=0)
    assert result.stop_reason is StopReason.MAX_TOOL_ITERS and ran == []
    assert_valid(result)


def test_repeated_identical_calls_are_refused_and_end_the_run():
    ran = []

    def ping(host: str) -> str:
        ran.append(host)
        return "pong"

    backend = ScriptedBackend([[tc("ping", f"p{i}", host="a")] for i in range(6)])
    result = run(backend, "q", tools=[ping], max_identical_calls=2, max_tool_iters=10)
    assert ran == ["a", "a"]
    assert result.stop_reason is StopReason.REPEATED_CALLS
    assert "already made 2 times" in result.messages[-1].content
    assert backend.remaining == 3
    assert_valid(result)


def test_cancellation_token_stops_the_run_with_a_valid_history():
    token = CancellationToken()

    def stop_now() -> str:
        token.cancel()
        return "stopping"

    backend = ScriptedBackend(
        [[tc("stop_now", "s"), tc("get_time", "t", timezone="UTC")], "unused"]
    )
    result = run(backend, "q", tools=[stop_now, get_time], cancel=token)
    assert result.stop_reason is StopReason.CANCELLED
    assert backend.remaining == 1
    assert_valid(result)


# -- tool_choice -------------------------------------------------------------------------------------


def test_forced_tool_choice_applies_to_the_first_round_only():
    backend = ScriptedBackend([[tc("get_weather", "w", city="Rome")], "warm"])
    run(backend, "q", tools=[get_weather, get_time], tool_choice="get_weather")
    assert [r.tool_choice for r in backend.requests] == ["get_weather", "auto"]
    backend = ScriptedBackend([[tc("get_weather", "w", city="Rome")], "warm"])
    run(backend, "q", tools=[get_weather], tool_choice="required")
    assert [r.tool_choice for r in backend.requests] == ["required", "auto"]


def test_tool_choice_naming_no_tool_is_refused():
    with pytest.raises(ValueError, match="names no given tool"):
        run(ScriptedBackend(["x"]), "q", tools=[get_weather], tool_choice="get_wether")


# -- hooks and events ------------------------------------------------------------------------------


def test_hooks_in_the_loop_can_veto_and_rewrite():
    def policy(call: ToolCall):
        if call.arguments.get("city") == "Atlantis":
            return Veto(reason="no such city")
        return ToolCall(id=call.id, name=call.name, arguments={**call.arguments, "units": "kelvin"})

    seen = []
    backend = ScriptedBackend(
        [[tc("get_weather", "a", city="Atlantis"), tc("get_weather", "b", city="Lima")], "ok"]
    )
    result = run(
        backend,
        "q",
        tools=[get_weather],
        before_tool_call=policy,
        after_tool_call=lambda call, res: seen.append((call.id, res.is_error)),
    )
    assert result.trail[0].is_error and "no such city" in result.trail[0].output
    assert result.trail[1].output == "18 degrees kelvin and sunny in Lima"
    assert sorted(seen) == [("a", True), ("b", False)]


def test_events_arrive_in_order_and_streamed_text_is_forwarded():
    events = []
    run(
        ScriptedBackend(weather_script()),
        "q",
        tools=[get_weather, get_time],
        on_event=events.append,
        stream=True,
    )
    kinds = [type(e).__name__ for e in events]
    assert kinds[-1] == "RunFinished"
    assert kinds.index("ToolExecutionStarted") < kinds.index("ToolExecutionFinished")
    assert any(isinstance(e, TextDelta) and e.text == "Sunny, 18 degrees, 14:05." for e in events)
    finished = [e for e in events if isinstance(e, ToolExecutionFinished)]
    assert [e.call.name for e in finished] == ["get_weather", "get_time"]
    assert sum(isinstance(e, ModelTurnFinished) for e in events) == 2


def test_iter_run_yields_events_and_the_result_last():
    events = list(iter_run(ScriptedBackend(weather_script()), "q", tools=[get_weather, get_time]))
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.final_text.startswith("Sunny")
    assert sum(isinstance(e, ToolExecutionStarted) for e in events) == 2


async def test_async_tools_of_a_round_run_concurrently_in_arun():
    arrived = 0
    everyone = asyncio.Event()

    async def meet(i: int) -> int:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 5)
        return i

    backend = ScriptedBackend([[tc("meet", f"m{i}", i=i) for i in range(3)], "met"])
    result = await arun(backend, "q", tools=[meet])
    assert [t.output for t in result.trail] == ["0", "1", "2"]


def test_run_uses_worker_threads_for_parallel_sync_tools():
    barrier = threading.Barrier(3, timeout=5)

    def meet(i: int) -> int:
        barrier.wait()
        return i

    backend = ScriptedBackend([[tc("meet", f"m{i}", i=i) for i in range(3)], "met"])
    result = run(backend, "q", tools=[meet])
    assert [t.is_error for t in result.trail] == [False, False, False]


def test_injected_values_reach_tools_through_run():
    def balance(account: str, db: tooluse.tools.injection.Injected[dict]) -> int:  # type: ignore[valid-type]
        return db[account]

    backend = ScriptedBackend([[tc("balance", "b", account="alice")], "100"])
    result = run(backend, "q", tools=[balance], injected={"db": {"alice": 100}})
    assert result.trail[0].output == "100"
    assert "db" not in backend.requests[0].tools[0].parameters_schema["properties"]


def test_capabilities_without_function_calling_and_no_parser_ignore_tools(caplog):
    backend = ScriptedBackend(
        ["plain answer"],
        capabilities=ModelCapabilities(supports_function_calling=False),
        name="tiny-text-model",
    )
    with caplog.at_level("WARNING", logger="tooluse.loop"):
        result = run(backend, "q", tools=[get_weather])
    assert result.final_text == "plain answer" and result.mode == "none"
    assert backend.requests[0].tools == ()
    assert "ScriptedBackend('tiny-text-model')" in caplog.text
    assert "tool_call_parser" in caplog.text


class StreamingScripted(ScriptedBackend):
    """A scripted backend that streams text word by word, sync and async."""

    def _pieces(self, result):
        words = result.text.split(" ")
        return (
            [w if i == len(words) - 1 else w + " " for i, w in enumerate(words)]
            if result.text
            else []
        )

    async def astream_with_tools(self, messages, tools=(), params=None, tool_choice="auto"):
        from tooluse import GenerationDone

        result = self.generate_with_tools(messages, tools, params, tool_choice)
        for piece in self._pieces(result):
            await asyncio.sleep(0)
            yield TextDelta(text=piece)
        yield GenerationDone(result=result)


async def test_aiter_run_streams_text_deltas_from_an_async_streaming_backend():
    from tooluse.loop import aiter_run

    backend = StreamingScripted([[tc("get_time", "t", timezone="UTC")], "It is 14:05 now."])
    events = [e async for e in aiter_run(backend, "q", tools=[get_time], stream=True)]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["It ", "is ", "14:05 ", "now."]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.final_text == "It is 14:05 now."
    order = [type(e).__name__ for e in events]
    assert order.index("ToolExecutionFinished") < order.index("TextDelta")


async def test_arun_on_event_and_async_hooks():
    async def deny(call):
        await asyncio.sleep(0)
        return Veto(reason="maintenance")

    events = []
    backend = ScriptedBackend([[tc("get_time", "t", timezone="UTC")], "ok"])
    result = await arun(
        backend, "q", tools=[get_time], before_tool_call=deny, on_event=events.append
    )
    assert result.trail[0].is_error and "maintenance" in result.trail[0].output
    assert isinstance(events[-1], RunFinished)


def test_tools_may_be_tool_objects_functions_and_definitions():
    from tooluse.tools import Tool

    class Multiply(Tool):
        name = "multiply"
        description = "Multiply two integers."

        def __call__(self, a: int, b: int) -> int:
            return a * b

    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    echo = ToolDefinition(
        name="echo",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        function=lambda text: text,
    )
    backend = ScriptedBackend(
        [
            [
                tc("multiply", "m", a=17, b="23"),
                tc("shout", "s", text="hi"),
                tc("echo", "e", text="same"),
            ],
            "done",
        ]
    )
    result = run(backend, "q", tools=[Multiply(), shout, echo])
    assert [t.output for t in result.trail] == ["391", "HI", "same"]


class FailingSecondRequest(ScriptedBackend):
    def generate_with_tools(self, messages, tools=(), params=None, tool_choice="auto"):
        if len(self.requests) == 1:
            self.requests.append(None)
            raise tooluse.BackendHTTPError("server exploded", status_code=500, body="oops")
        return super().generate_with_tools(messages, tools, params, tool_choice)


def test_backend_errors_propagate_with_the_partial_run_attached():
    backend = FailingSecondRequest([[tc("get_time", "t", timezone="UTC")]])
    with pytest.raises(tooluse.BackendHTTPError, match="server exploded") as info:
        run(backend, "q", tools=[get_time])
    partial = info.value.partial_result
    assert partial.stop_reason is StopReason.ERROR
    assert [t.output for t in partial.trail] == ["14:05 in UTC"]
    assert partial.messages[-1].role == "tool"
    assert_valid(partial)


async def test_backend_errors_in_arun_carry_the_partial_run_too():
    backend = FailingSecondRequest([[tc("get_time", "t", timezone="UTC")]])
    with pytest.raises(tooluse.BackendHTTPError) as info:
        await arun(backend, "q", tools=[get_time])
    assert info.value.partial_result.trail[0].name == "get_time"


def release_when_fast_is_reported(order: list[str], fast_reported):
    """An ``on_event`` that records finished calls and sets ``fast_reported`` for "fast"."""

    def on_event(event):
        if isinstance(event, ToolExecutionFinished):
            order.append(event.call.name)
            if event.call.name == "fast":
                fast_reported.set()

    return on_event


def check_fast_was_reported_first(order: list[str], result: RunResult) -> None:
    assert order == ["fast", "slow"]
    assert [(t.name, t.output, t.is_error) for t in result.trail] == [
        ("slow", "slow done", False),
        ("fast", "fast done", False),
    ]
    validate_history(list(result.messages))


async def test_arun_reports_each_call_as_soon_as_it_completes():
    # "slow" can only finish after the loop has reported "fast" as finished: if finished
    # events waited for the whole round, "slow" would hit its timeout and fail.
    fast_reported = asyncio.Event()

    async def fast() -> str:
        return "fast done"

    async def slow() -> str:
        await fast_reported.wait()
        return "slow done"

    order: list[str] = []
    on_event = release_when_fast_is_reported(order, fast_reported)
    backend = ScriptedBackend([[tc("slow", "s"), tc("fast", "f")], "both done"])
    result = await arun(backend, "q", tools=[slow, fast], on_event=on_event, tool_timeout=5)
    check_fast_was_reported_first(order, result)


async def test_stopping_aiter_run_early_cancels_the_running_calls():
    from tooluse.loop import aiter_run

    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def quick() -> str:
        return "quick"

    async def hang() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    backend = ScriptedBackend([[tc("hang", "h"), tc("quick", "q")], "unused"])
    events = aiter_run(backend, "q", tools=[hang, quick], tool_timeout=None)
    async for event in events:
        if isinstance(event, ToolExecutionFinished):
            assert event.call.name == "quick" and started.is_set()
            break
    await events.aclose()
    assert cancelled.is_set()


def test_unknown_options_are_refused_by_name():
    for entry in (run, iter_run):
        with pytest.raises(TypeError, match="max_tool_iter"):
            entry(ScriptedBackend(["x"]), "q", max_tool_iter=3)


async def test_an_executor_that_runs_rounds_itself_is_called_once_per_round():
    from tooluse import AsyncToolExecutor
    from tooluse.loop import build_setup, drive_async, initial_history

    rounds: list[list[str]] = []

    class RoundExecutor(AsyncToolExecutor):
        async def execute_batch_async(self, calls, *, cancel=None):
            rounds.append([c.name for c in calls])
            return tuple(ToolResult.success(c.id, c.name, f"did {c.name}") for c in calls)

    backend = ScriptedBackend(
        [[tc("get_time", "a", timezone="UTC"), tc("get_weather", "b", city="Oslo")], "ok"]
    )
    setup = build_setup(backend, executor=RoundExecutor([get_time, get_weather]))
    events = [e async for e in drive_async(backend, setup, initial_history("q", None))]
    assert rounds == [["get_time", "get_weather"]]
    finished = [e.result.output for e in events if isinstance(e, ToolExecutionFinished)]
    assert finished == ["did get_time", "did get_weather"]
    assert events[-1].result.final_text == "ok"


def test_run_reports_each_call_as_soon_as_it_completes():
    # As in arun: "slow" finishes only once "fast" has been reported (else it times out).
    fast_reported = threading.Event()

    def fast() -> str:
        return "fast done"

    def slow() -> str:
        return "slow done" if fast_reported.wait(10) else "never released"

    order: list[str] = []
    on_event = release_when_fast_is_reported(order, fast_reported)
    backend = ScriptedBackend([[tc("slow", "s"), tc("fast", "f")], "both done"])
    result = run(backend, "q", tools=[slow, fast], on_event=on_event, tool_timeout=5)
    check_fast_was_reported_first(order, result)
