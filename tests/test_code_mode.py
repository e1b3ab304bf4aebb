"""Code mode in the tool loop: programs written by a scripted model, run in the real sandbox,
their calls run on the host through the loop's machinery (trail, events, approval and resume,
checkpoints, tracing, cancellation), mixed with direct calls."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tooluse
from tooluse import (
    Approve,
    CancellationToken,
    Deny,
    Edit,
    RunState,
    RunStateError,
    ScriptedBackend,
    StopReason,
    ToolCall,
    ToolDefinition,
    resume,
    run,
    tool,
)
from tooluse.execution.code_mode import CodeMode
from tooluse.loop import ToolExecutionFinished, ToolExecutionStarted
from tooluse.providers.history import validate_history

WORKERS = Path(__file__).parent / "loop_workers"
RAN: list[tuple[str, object]] = []
LOCK = threading.Lock()
REGISTRY = tooluse.ToolRegistry()


def note(name: str, value: object) -> None:
    with LOCK:
        RAN.append((name, value))


@tool(registry=REGISTRY)
def list_orders(customer: str) -> list:
    """The orders of a customer.

    Args:
        customer: The customer's name.
    """
    note("list_orders", customer)
    return [{"id": f"{customer}-{i}", "total": 10 * (i + 1)} for i in range(4)]


@tool(registry=REGISTRY, requires_approval=True)
def refund(order_id: str, amount: int) -> str:
    """Refund an order (needs approval).

    Args:
        order_id: The order.
        amount: How much to refund.
    """
    note("refund", (order_id, amount))
    return f"refunded {amount} on {order_id}"


TOOLS = [list_orders, refund]


@pytest.fixture(autouse=True)
def _clear():
    RAN.clear()


def program(code: str, call_id: str = "prog") -> list[ToolCall]:
    return [ToolCall(id=call_id, name="run_python", arguments={"code": code})]


SUM_PROGRAM = """
orders = await asyncio.gather(*[list_orders(c) for c in ["ann", "bo", "cy"]])
totals = {o[0]["id"].split("-")[0]: sum(x["total"] for x in o) for o in orders}
print(totals)
max(totals, key=totals.get)
"""


def test_one_model_turn_runs_many_calls_and_each_is_in_the_trail_and_the_events():
    backend = ScriptedBackend([program(SUM_PROGRAM), "ann, bo and cy spent 100 each."])
    events: list[object] = []
    result = run(backend, "who spent most?", tools=TOOLS, code_mode=True, on_event=events.append)
    assert result.stop_reason is StopReason.FINAL_TEXT and len(backend.requests) == 2
    assert [t.name for t in backend.requests[0].tools] == ["run_python"]
    answer = result.messages[2].result
    assert answer.output == "{'ann': 100, 'bo': 100, 'cy': 100}\n[return value]\nann"
    assert answer.metadata["calls"] == 3 and "program_journal" not in answer.metadata
    inner = [t for t in result.trail if t.caller == "prog"]
    assert sorted(t.arguments["customer"] for t in inner) == ["ann", "bo", "cy"]
    assert [t.name for t in result.trail] == ["list_orders"] * 3 + ["run_python"]
    assert sorted(c for n, c in RAN) == ["ann", "bo", "cy"]
    started = [e.call for e in events if isinstance(e, ToolExecutionStarted)]
    finished = [e.call for e in events if isinstance(e, ToolExecutionFinished)]
    assert [c.name for c in started] == ["run_python"] + ["list_orders"] * 3
    assert [c.caller for c in finished] == ["prog"] * 3 + [None]  # the program ends last
    assert validate_history(list(result.messages)) == list(result.messages)
    assert result.trail[0].to_dict()["caller"] == "prog"


def test_final_answer_ends_the_run_without_another_model_turn():
    code = "o = await list_orders('ann')\nfinal_answer(f'{len(o)} orders')"
    backend = ScriptedBackend([program(code)])
    result = run(backend, "how many orders has ann?", tools=TOOLS, code_mode=True)
    assert result.stop_reason is StopReason.FINAL_TEXT and result.final_text == "4 orders"
    assert len(backend.requests) == 1
    assert result.messages[-1].role == "assistant"
    assert validate_history(list(result.messages)) == list(result.messages)


REFUND_PROGRAM = """
orders = await list_orders("ann")
biggest = max(orders, key=lambda o: o["total"])
try:
    print(await refund(biggest["id"], 5))
except CallDenied as e:
    print("refused:", e.message)
"""


def test_approval_inside_a_program_pauses_and_each_decision_resumes_it():
    paused = run(ScriptedBackend([program(REFUND_PROGRAM)]), "q", tools=TOOLS, code_mode=True)
    assert paused.stop_reason is StopReason.APPROVAL_REQUIRED
    (waiting,) = paused.pending
    assert (waiting.name, waiting.arguments, waiting.caller) == (
        "refund",
        {"order_id": "ann-3", "amount": 5},
        "prog",
    )
    assert paused.state.program_of(waiting) == REFUND_PROGRAM
    assert RAN == [("list_orders", "ann")]
    saved = RunState.from_json(paused.state.to_json())  # the state survives JSON
    outcomes = {}
    for label, decision in (
        ("approve", Approve()),
        ("deny", Deny(reason="too late")),
        ("edit", Edit(arguments={"order_id": "ann-3", "amount": 2})),
    ):
        RAN.clear()
        result = resume(
            ScriptedBackend(["ok"]),
            saved,
            tools=TOOLS,
            code_mode=True,
            decisions={waiting.id: decision},
        )
        assert result.stop_reason is StopReason.FINAL_TEXT
        outcomes[label] = (
            next(m.result.output for m in result.messages if m.role == "tool"),
            list(RAN),
        )
        inner = [t for t in result.trail if t.caller == "prog"]
        assert [t.name for t in inner] == ["list_orders", "refund"]  # each once
    assert outcomes["approve"] == ("refunded 5 on ann-3", [("refund", ("ann-3", 5))])
    assert outcomes["deny"] == ("refused: denied: too late", [])
    assert outcomes["edit"] == ("refunded 2 on ann-3", [("refund", ("ann-3", 2))])


def test_a_paused_program_resumes_in_another_process(tmp_path):
    state, log = tmp_path / "run.json", tmp_path / "effects.log"
    worker = str(WORKERS / "program_approval.py")

    def step(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, worker, *args], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    started = step("start", str(state), str(log))
    assert started.startswith(
        "approval_required prog.4 wire_money {'account': 'bob', 'amount': 10}"
    )
    assert "program: balances = await asyncio.gather" in started
    first = log.read_text().split("\n")
    assert sorted(first[:3]) == ["balance alice", "balance bob", "balance carol"]
    resumed = step("resume", str(state), str(log), "approve")
    assert resumed.startswith("final_text All done.")
    assert "richest: bob\nwired: 10 from bob" in resumed
    assert log.read_text().splitlines()[3:] == ["wire bob"]  # nothing else ran again


def test_direct_calls_and_programs_mix_in_one_turn():
    lookup = dataclasses.replace(
        ToolDefinition.from_callable(lambda sku: f"{sku}: 3 left", name="stock"),
        callers=("direct", "code"),
    )
    turn = [
        ToolCall(id="direct", name="stock", arguments={"sku": "A1"}),
        *program("print(await stock('B2'), len(await list_orders('bo')))", "p2"),
    ]
    backend = ScriptedBackend([turn, "done"])
    result = run(backend, "q", tools=[*TOOLS, lookup], code_mode=True)
    assert [t.name for t in backend.requests[0].tools] == ["run_python", "stock"]
    outputs = {m.result.call_id: m.result.output for m in result.messages if m.role == "tool"}
    assert outputs == {"direct": "A1: 3 left", "p2": "B2: 3 left 4"}
    assert {(t.name, t.caller) for t in result.trail} == {
        ("stock", ""),
        ("stock", "p2"),
        ("list_orders", "p2"),
        ("run_python", ""),
    }


def test_checkpoints_follow_each_call_a_program_makes(tmp_path):
    path = tmp_path / "run.json"
    seen: list[dict[str, str]] = []

    def inspect_state(label: str) -> str:
        """Reads the checkpoint while it runs.

        Args:
            label: A label.
        """
        journal = RunState.load(path).round.programs["prog"]
        seen.append({c.call.arguments.get("label", c.call.name): c.status for c in journal.calls})
        return label

    code = "for label in ['one', 'two']:\n    await inspect_state(label)\n"
    backend = ScriptedBackend([program(code), "done"])
    run(backend, "q", tools=[inspect_state], code_mode=True, checkpoint=path)
    assert seen == [{"one": "running"}, {"one": "done", "two": "running"}]
    final = RunState.load(path)
    assert final.stop_reason == "final_text" and [t["caller"] for t in final.trail[:2]] == [
        "prog",
        "prog",
    ]


def test_cancelling_stops_a_running_program_and_every_call_keeps_one_answer():
    token = CancellationToken()

    def slow_step(i: int) -> int:
        """A slow step.

        Args:
            i: The step.
        """
        if i == 1:
            threading.Timer(0.2, token.cancel).start()
        time.sleep(0.05)
        return i

    code = "for i in range(100):\n    await slow_step(i)\n    await asyncio.sleep(0.05)\n"
    backend = ScriptedBackend([program(code), "never asked"])
    result = run(backend, "q", tools=[slow_step], code_mode=True, cancel=token)
    assert result.stop_reason is StopReason.CANCELLED
    answer = next(m.result for m in result.messages if m.role == "tool")
    assert answer.is_error and "cancelled before it finished" in answer.output
    assert validate_history(list(result.messages)) == list(result.messages)


def test_traced_runs_nest_a_programs_calls_under_its_span():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    backend = ScriptedBackend([program(SUM_PROGRAM), "done"])
    run(backend, "q", tools=TOOLS, code_mode=True, tracer=tracer)
    spans = {
        s.name: s for s in exporter.get_finished_spans() if s.name != "execute_tool list_orders"
    }
    program_span = spans["execute_tool run_python"]
    inner = [s for s in exporter.get_finished_spans() if s.name == "execute_tool list_orders"]
    assert len(inner) == 3
    assert all(s.parent.span_id == program_span.context.span_id for s in inner)
    assert {s.attributes["tooluse.tool.caller"] for s in inner} == {"prog"}
    assert {s.attributes["gen_ai.tool.call.id"] for s in inner} == {"prog.1", "prog.2", "prog.3"}


def test_arun_runs_programs_with_async_tools_on_its_event_loop():
    async def fetch(key: str) -> str:
        """Fetch a key.

        Args:
            key: The key.
        """
        await asyncio.sleep(0.01)
        note("fetch", key)
        return key * 2

    backend = ScriptedBackend(
        [program("print(await asyncio.gather(fetch('a'), fetch('b')))"), "ok"]
    )
    result = asyncio.run(tooluse.arun(backend, "q", tools=[fetch], code_mode=True))
    assert next(m.result.output for m in result.messages if m.role == "tool") == "['aa', 'bb']"
    assert sorted(RAN) == [("fetch", "a"), ("fetch", "b")]


def test_bad_programs_are_answered_and_the_run_goes_on():
    backend = ScriptedBackend(
        [
            [ToolCall(id="a", name="run_python", arguments={})],
            program("def broken(:\n    pass", "b"),
            program("await list_orders(customer=None)", "c"),
            [ToolCall(id="d", name="list_orders", arguments={"customer": "x"})],
            "gave up",
        ]
    )
    result = run(backend, "q", tools=TOOLS, code_mode=True)
    outputs = {m.result.call_id: m.result.output for m in result.messages if m.role == "tool"}
    assert "takes one argument, code" in outputs["a"]
    assert "SyntaxError" in outputs["b"]
    assert outputs["c"].startswith("error: the program raised ToolError: list_orders: ")
    assert "can be called only from a program" in outputs["d"]
    assert result.final_text == "gave up"


def test_settings_that_do_not_fit_are_refused_clearly():
    only_code = dataclasses.replace(
        ToolDefinition.from_callable(lambda x: x, name="f"), callers=("code",)
    )
    with pytest.raises(ValueError, match="only from programs.*code_mode=True"):
        run(ScriptedBackend(["x"]), "q", tools=[only_code])
    with pytest.raises(tooluse.ToolDefinitionError, match="callers must name"):
        dataclasses.replace(only_code, callers=("model",))
    paused = run(ScriptedBackend([program(REFUND_PROGRAM)]), "q", tools=TOOLS, code_mode=True)
    with pytest.raises(RunStateError, match="run_python.*code_mode"):
        resume(ScriptedBackend([]), paused.state, tools=TOOLS)
    with pytest.raises(ValueError, match="max_calls"):
        CodeMode(max_calls=0)
    data = json.loads(paused.state.to_json())
    assert data["round"]["programs"]["prog"][1]["status"] == "pending"
