"""Property: whatever the model sends, every request the loop makes carries a valid history
(each call id answered exactly once, right after its turn), and run and arun agree."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooluse import (
    ScriptedBackend,
    ToolCall,
    ToolDefinition,
    ToolParameter,
    Veto,
    arun,
    run,
    validate_history,
)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


submit = ToolDefinition(
    name="submit",
    description="Submit the final answer",
    parameters=(ToolParameter("answer"),),
    is_terminal=True,
)

calls = st.one_of(
    st.builds(
        lambda a, b: ToolCall(name="add", arguments={"a": a, "b": b}),
        st.integers(0, 3),
        st.integers(0, 3),
    ),
    st.builds(lambda: ToolCall(name="add", arguments={"a": "x"})),
    st.builds(lambda: ToolCall(name="nope", arguments={})),
    st.builds(lambda: ToolCall(name="add", raw_arguments='{"a": 1,')),
    st.builds(lambda: ToolCall(name="fail", arguments={"reason": "boom"})),
    st.builds(lambda: ToolCall(name="add", arguments={"a": 9, "b": 9})),  # vetoed by the hook
    st.builds(lambda: ToolCall(name="submit", arguments={"answer": "42"})),
    st.builds(lambda: ToolCall(name="submit", arguments={})),
    st.builds(lambda: ToolCall(id="fixed", name="add", arguments={"a": 1, "b": 1})),
)
turns = st.lists(st.one_of(st.lists(calls, min_size=1, max_size=4), st.just("text")), max_size=6)


def veto_nines(call: ToolCall):
    return Veto(reason="no nines") if call.arguments.get("a") == 9 else None


def options(max_iters: int, max_identical: int) -> dict:
    return {
        "tools": [add, fail, submit],
        "max_tool_iters": max_iters,
        "max_identical_calls": max_identical,
        "before_tool_call": veto_nines,
    }


def shape(result):
    return (
        result.stop_reason,
        [(m.role, m.content, tuple(c.name for c in m.tool_calls)) for m in result.messages],
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=turns, max_iters=st.integers(0, 4), max_identical=st.integers(1, 3))
def test_every_request_history_is_valid_and_run_equals_arun(turns, max_iters, max_identical):
    script = [t if isinstance(t, list) else "an answer" for t in turns] + ["end"]
    backend = ScriptedBackend(script)
    result = run(backend, "go", **options(max_iters, max_identical))
    for request in backend.requests:
        validate_history(list(request.messages))
    validate_history(list(result.messages))
    answered = [m.tool_call_id for m in result.messages if m.role == "tool"]
    requested = [c.id for m in result.messages for c in m.tool_calls]
    assert sorted(answered) == sorted(requested)
    assert len(set(requested)) == len(requested)
    assert result.iterations <= max(max_iters, 0) + 1
    assert len(result.trail) == len(requested)

    async_result = asyncio.run(
        arun(ScriptedBackend(script), "go", **options(max_iters, max_identical))
    )
    assert shape(async_result) == shape(result)
