"""Code mode's programs on their own: real sandboxed interpreters, real host round trips.

Each test runs programs through a :class:`CodeModeExecutor` over plain Python tools and checks
what the model would read (the program call's result) and what ran on the host.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Literal

import pytest

from tooluse import ToolCall, ToolDefinition, ToolExecutor, ToolResult, Veto
from tooluse.execution.code_mode import (
    CodeMode,
    CodeModeExecutor,
    check_program,
    final_answer_of,
    program_calls,
    suspended_journal,
    tool_stubs,
)


class Host:
    """Tools that record every call they get (thread-safe)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.lock = threading.Lock()

    def record(self, name: str, value: object) -> None:
        with self.lock:
            self.calls.append((name, value))

    def tools(self) -> list[object]:
        def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
            """The weather of a city.

            Args:
                city: The city.
                unit: The unit of the temperature.
            """
            self.record("get_weather", city)
            return {"city": city, "temp": len(city) * 2, "unit": unit}

        def fail(reason: str) -> str:
            """Always fails.

            Args:
                reason: Why.
            """
            self.record("fail", reason)
            raise ValueError(reason)

        return [get_weather, fail]


@pytest.fixture(scope="module")
def host() -> Host:
    return Host()


@pytest.fixture(scope="module")
def executor(host: Host):
    executor = CodeModeExecutor(ToolExecutor(host.tools()), CodeMode(timeout=10))
    yield executor
    executor.close()


def run(executor: CodeModeExecutor, code: str, call_id: str = "p") -> ToolResult:
    return executor.execute(ToolCall(id=call_id, name="run_python", arguments={"code": code}))


def test_the_model_sees_one_tool_with_typed_stubs(executor):
    (tool,) = executor.definitions
    assert tool.name == "run_python" and list(tool.parameters_schema["properties"]) == ["code"]
    text = tool.description
    assert (
        "async def get_weather(city: str, unit: Literal['celsius', 'fahrenheit'] = 'celsius')"
        " -> dict:" in text
    )
    assert "city: The city." in text and "asyncio.gather" in text
    assert "cut at 8000 characters" in text and "at most 200 tool calls" in text


def test_stubs_name_and_type_every_tool():
    tools = [
        ToolDefinition.from_schema(
            "Calendar.create_event",
            {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
                "required": ["title"],
            },
        ),
        ToolDefinition.from_schema(
            "print", {"type": "object", "properties": {"from": {"type": "integer"}}}
        ),
    ]
    calendar, printer = tool_stubs(tools)
    assert calendar.function == "Calendar_create_event"
    assert calendar.signature() == (
        "(title: str, tags: list[str] | None = None, when: str | None = None) -> Any"
    )
    assert printer.function == "print_tool"  # never shadows a builtin
    assert printer.variadic and printer.signature() == "(**arguments) -> Any"  # 'from'


def test_calls_run_on_the_host_and_their_results_come_back_as_values(executor, host):
    result = run(
        executor,
        "rs = await asyncio.gather(*[get_weather(c) for c in ['Paris', 'Rome', 'Oslo']])\n"
        "print(sum(r['temp'] for r in rs))\n"
        "{'cities': [r['city'] for r in rs]}\n",
    )
    assert not result.is_error, result.output
    assert result.output == '26\n[return value]\n{"cities": ["Paris", "Rome", "Oslo"]}'
    made = program_calls(result)
    assert [c.call.name for c in made] == ["get_weather"] * 3
    assert {c.call.caller for c in made} == {"p"} and [c.call.id for c in made] == [
        "p.1",
        "p.2",
        "p.3",
    ]
    assert {c.call.arguments["city"] for c in made} == {"Paris", "Rome", "Oslo"}


def test_a_failing_call_raises_tool_error_in_the_program(executor):
    result = run(
        executor,
        "try:\n    await fail('not today')\nexcept ToolError as e:\n    print('caught', e)\n"
        "try:\n    await get_weather(city=5)\nexcept ToolError as e:\n    print('invalid', e.message.splitlines()[1])\n",
    )
    assert not result.is_error
    assert "caught fail: ValueError: not today" in result.output
    assert "invalid - city: expected string, got integer 5" in result.output


def test_an_uncaught_tool_error_ends_the_program_with_its_message(executor):
    result = run(executor, "print('before')\nawait get_weather(city=[1])\nprint('after')")
    assert result.is_error
    assert result.output.startswith("error: the program raised ToolError: get_weather: ")
    assert "before" in result.output and "after" not in result.output
    assert 'File "program.py", line 2' in result.output  # the program's own line


def test_a_program_that_does_not_parse_never_reaches_a_sandbox(executor):
    result = run(executor, "print(1")
    assert result.is_error and "SyntaxError: '(' was never closed (line 1)" in result.output
    assert check_program("x = 1\nreturn x", CodeMode()) is None  # a top-level return is fine
    assert "limit is 10" in (check_program("x" * 11, CodeMode(max_program_chars=10)) or "")


def test_a_call_without_await_is_pointed_out(executor):
    result = run(executor, "get_weather('Paris')\nprint('done')")
    assert not result.is_error
    assert "get_weather was called without await and did not run" in result.output
    assert program_calls(result) == ()


def test_return_and_final_answer(executor):
    returned = run(executor, "for i in range(3):\n    if i == 1:\n        return i * 10\n")
    assert returned.output == "[return value]\n10"
    answered = run(
        executor, "w = await get_weather('Rome')\nfinal_answer(f\"{w['temp']} degrees\")"
    )
    assert final_answer_of(answered) == "8 degrees"


def test_a_name_that_is_no_tool_and_a_forged_request(executor):
    missing = run(executor, "await delete_everything()")
    assert (
        missing.is_error and "NameError: name 'delete_everything' is not defined" in missing.output
    )
    forged = run(
        executor,
        "call = get_weather.__globals__['__tooluse_call__']\n"
        "try:\n    await call('os_system', {'cmd': 'id'})\nexcept ToolError as e:\n    print(e)",
    )
    assert "no tool named 'os_system' can be called from a program" in forged.output


def test_hooks_and_the_policy_see_every_call_a_program_makes(host):
    seen: list[str] = []

    def before(call: ToolCall):
        seen.append(call.name)
        if call.arguments.get("city") == "Berlin":
            return Veto(reason="no Berlin")
        return None

    def after(call: ToolCall, result: ToolResult):
        return (
            ToolResult.success(call.id, call.name, {"rewritten": True})
            if call.name == "fail"
            else None
        )

    inner = ToolExecutor(host.tools(), before=[before], after=[after])
    policy = lambda call: False if call.arguments.get("city") == "Lima" else None  # noqa: E731
    executor = CodeModeExecutor(inner, CodeMode(prestart=False), approve=policy)
    try:
        result = run(
            executor,
            "for city in ['Berlin', 'Lima']:\n"
            "    try:\n        await get_weather(city)\n"
            "    except CallDenied as e:\n        print('denied', e)\n"
            "    except ToolError as e:\n        print('refused', e)\n"
            "print(await fail('x'))",
        )
    finally:
        executor.close()
    assert "refused get_weather: call refused: no Berlin" in result.output
    assert "denied get_weather: denied: the approval policy refused this call" in result.output
    assert "{'rewritten': True}" in result.output
    assert seen == ["get_weather", "fail"]  # the denied call never reached the hooks


def test_a_program_waiting_for_approval_is_suspended_with_its_journal(host):
    def wipe(path: str) -> str:
        host.record("wipe", path)
        return "wiped"

    wipe_tool = dataclasses.replace(ToolDefinition.from_callable(wipe), requires_approval=True)
    executor = CodeModeExecutor(ToolExecutor([*host.tools(), wipe_tool]), CodeMode(prestart=False))
    try:
        result = run(
            executor,
            "a, b = await asyncio.gather(get_weather('Lyon'), wipe('/tmp/x'))\nprint(a, b)",
            "w",
        )
    finally:
        executor.close()
    journal = suspended_journal(result)
    assert journal is not None
    statuses = {c.call.name: c.status for c in journal.calls}
    assert statuses == {"get_weather": "done", "wipe": "pending"}
    assert [c.name for c in journal.pending] == ["wipe"]
    assert ("wipe", "/tmp/x") not in host.calls


def test_direct_and_code_callers():
    def lookup(key: str) -> str:
        return key.upper()

    def submit(answer: str) -> str:
        return answer

    both = dataclasses.replace(ToolDefinition.from_callable(lookup), callers=("direct", "code"))
    direct = dataclasses.replace(ToolDefinition.from_callable(submit), callers=("direct",))
    only_code = ToolDefinition.from_callable(lambda x: x, name="helper")
    executor = CodeModeExecutor(ToolExecutor([both, direct, only_code]), CodeMode(prestart=False))
    try:
        names = [d.name for d in executor.definitions]
        assert names == ["run_python", "lookup", "submit"]
        stubs = executor.definitions[0].description
        assert "async def lookup(" in stubs and "async def helper(" in stubs
        assert "submit" not in stubs
        refused = executor.execute(ToolCall(id="h", name="helper", arguments={"x": 1}))
        assert refused.is_error and "can be called only from a program" in refused.output
        assert (
            executor.execute(ToolCall(id="l", name="lookup", arguments={"key": "a"})).output == "A"
        )
    finally:
        executor.close()


def test_an_optional_argument_left_out_is_not_sent_and_one_given_is():
    seen: list[dict] = []

    def find(**arguments: object) -> str:
        seen.append(arguments)
        return "ok"

    # BFCL writes some defaults as text: "None" the string, which the tool itself never gets
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "default": "."},
            "name": {"type": "string", "default": "None"},
            "depth": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
    }
    tool = ToolDefinition.from_schema("find", schema, function=find)
    (stub,) = tool_stubs([tool])
    assert "name: str = 'None'" in stub.signature()  # the model reads the schema's default
    executor = CodeModeExecutor(ToolExecutor([tool]), CodeMode(timeout=10))
    try:
        program = "await find()\nawait find(path='.')\nawait find(name='x', depth=None)\n"
        result = run(executor, program)
    finally:
        executor.close()
    assert not result.is_error, result.output
    # left out: not sent; given, even equal to the default, or None where null is allowed: sent
    assert seen == [{}, {"path": "."}, {"name": "x", "depth": None}]
