"""Sandbox sessions: a real long-lived isolated interpreter per session, state kept per session."""

from __future__ import annotations

import asyncio
import gc
import os
import socket

import pytest

import tooluse
from tooluse import ScriptedBackend, ToolCall, ToolExecutionError
from tooluse.execution.sandbox import PythonSandbox, SandboxLimits, SandboxSession

SANDBOX = PythonSandbox(timeout=5.0, memory_mb=256)


def test_variables_functions_and_imports_persist_within_a_session():
    with SANDBOX.session() as session:
        assert session.run("import math\nx = 6\ndef double(v):\n    return 2 * v").ok
        result = session.run("print(double(x) * 7, math.pi > 3)")
        assert result.ok, result.output
        assert result.output == "84 True"
        assert session.starts == 1 and session.calls == 2
        assert result.metadata["session_call"] == 2


def test_sessions_never_share_state():
    with SANDBOX.session() as first, SANDBOX.session() as second:
        first.run("secret = 'only-first'")
        result = second.run("print(globals().get('secret'))")
        assert result.output == "None"
        assert first.run("print(secret)").output == "only-first"


def test_each_call_gets_only_its_own_output():
    with SANDBOX.session() as session:
        first = session.run("import sys\nprint('one')\nprint('warn-one', file=sys.stderr)")
        second = session.run("print('two')")
        assert first.stdout == "one\n" and first.stderr == "warn-one\n"
        assert second.stdout == "two\n" and second.stderr == ""


def test_an_exception_is_reported_and_the_session_goes_on():
    with SANDBOX.session() as session:
        session.run("total = 10")
        failed = session.run("total += 1\nraise ValueError('bad')")
        assert not failed.ok
        assert failed.error == "ValueError: bad"
        assert 'File "cell2.py", line 2' in failed.stderr
        assert session.run("print(total)").output == "11"  # the state up to the error stays
        exited = session.run("import sys\nsys.exit(4)")
        assert exited.exit_code == 4 and exited.error == "exited with status 4"
        assert session.run("print(total)").output == "11"
        assert session.starts == 1


def test_a_timeout_restarts_the_session_and_says_the_variables_are_gone():
    with PythonSandbox(timeout=1.0).session() as session:
        session.run("kept = 1")
        stuck = session.run("while True:\n    pass")
        assert stuck.timed_out
        assert "variables are lost" in stuck.error
        assert stuck.metadata["session_reset"] is True
        after = session.run("print(globals().get('kept'))")
        assert after.ok and after.output == "None"
        assert session.starts == 2


def test_garbage_written_on_every_pipe_stops_the_call_with_a_clear_reason():
    """Code can reach the session's reply pipe by number: a reply that is not a cell's status
    says so (it is not reported as a bare kill) and the next call starts a fresh interpreter."""
    garbage = (
        "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'not json\\n')\n"
        "    except OSError:\n        pass\nprint('after')"
    )
    with SANDBOX.session() as session:
        result = session.run(garbage)
        assert not result.ok and not result.timed_out
        assert "is not a cell's status on the sandbox's reply pipe" in result.error
        assert "variables are lost" in result.error
        assert result.metadata["session_reset"] is True
        again = session.run("print('fresh')")
        assert again.ok and again.output == "fresh" and session.starts == 2


def test_memory_and_output_limits_apply_per_call():
    with PythonSandbox(timeout=10.0, memory_mb=256, max_output_chars=300).session() as session:
        big = session.run("block = bytearray(10 * 1024 ** 3)")
        assert "MemoryError" in big.error
        loud = session.run("print('z' * 2_000_000)")
        assert loud.ok
        assert len(loud.stdout) < 400 and "[output truncated" in loud.stdout
        assert loud.truncated_chars >= 1_999_000
        assert session.run("print('quiet')").output == "quiet"


def test_the_session_has_the_same_isolation(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        with SANDBOX.session() as session:
            result = session.run(
                "import os, socket\n"
                "print(os.getcwd())\n"
                "try:\n"
                f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                "    print('connected')\n"
                "except OSError:\n"
                "    print('refused')\n"
                "try:\n"
                "    open('/etc/shadow')\n"
                "except OSError as exc:\n"
                "    print(type(exc).__name__)\n"
            )
    finally:
        listener.close()
    if any(
        m.startswith(("network_namespace", "filesystem_view")) for m in result.isolation_missing
    ):
        pytest.skip("the kernel refused: " + "; ".join(result.isolation_missing))
    assert result.stdout.splitlines() == ["/sandbox", "refused", "FileNotFoundError"]
    assert {"network_namespace", "filesystem_view", "pid_namespace"} <= set(result.isolation)


def test_close_kills_the_interpreter_and_everything_it_started():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(3.0)
    port = listener.getsockname()[1]
    limits = SandboxLimits(timeout=5.0, allow_subprocess=True, allow_network=True)
    session = SandboxSession(limits)
    started = session.run(
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import socket, time; time.sleep(1.5); "
        f'socket.create_connection(("127.0.0.1", {port}), timeout=2)\'], start_new_session=True)\n'
        "print('spawned')"
    )
    assert started.output == "spawned"
    supervisor = session._state.child.process.pid  # type: ignore[union-attr]
    assert session.alive
    session.close()
    assert not session.alive and session.closed
    with pytest.raises(ProcessLookupError):
        os.kill(supervisor, 0)
    try:
        connection, _ = listener.accept()
    except TimeoutError:
        pass
    else:
        connection.close()
        raise AssertionError("a process of the closed session was still running")
    finally:
        listener.close()
    with pytest.raises(ToolExecutionError, match="closed"):
        session.run("print(1)")


def test_a_forgotten_session_is_cleaned_up_when_collected():
    session = SANDBOX.session()
    session.run("x = 1")
    process = session._state.child.process  # type: ignore[union-attr]
    workdir = session._state.workdir
    assert workdir is not None and os.path.isdir(workdir)
    del session
    gc.collect()
    assert process.poll() is not None
    assert not os.path.exists(workdir)


async def test_async_session_calls():
    async with SANDBOX.session() as session:
        await session.arun("n = 20")
        result = await session.arun("print(n + 22)")
        assert result.output == "42"


def test_session_tool_keeps_state_across_the_calls_of_a_trajectory():
    tool, session = SANDBOX.session_tool()
    backend = ScriptedBackend(
        [
            [ToolCall(id="a", name="python", arguments={"code": "values = [3, 4, 5]"})],
            [ToolCall(id="b", name="python", arguments={"code": "print(sum(values))"})],
            "The sum is 12.",
        ]
    )
    try:
        result = tooluse.run(backend, "sum them", tools=[tool])
    finally:
        session.close()
    answers = {m.result.call_id: m.result for m in result.messages if m.result is not None}
    assert answers["b"].output == "12"
    assert not answers["b"].is_error
    assert "kept between calls" in tool.description
    assert "network_namespace" in answers["b"].metadata["isolation"]
    # A new trajectory gets a new session: nothing carried over.
    tool2, session2 = SANDBOX.session_tool()
    with session2:
        fresh = tool2.invoke({"code": "print(globals().get('values'))"})
    assert fresh.output == "None"


def test_stateless_tool_and_run_from_the_same_settings():
    sandbox = PythonSandbox(timeout=3.0, memory_mb=128)
    assert sandbox.run("print(6 * 7)").output == "42"
    assert asyncio.run(sandbox.arun("print(1)")).output == "1"
    assert "128 MB memory" in sandbox.tool().description
    with pytest.raises(TypeError, match="either"):
        PythonSandbox(SandboxLimits(), timeout=3.0)
    with pytest.raises(TypeError, match="code must be a string"):
        SANDBOX.session().run(5)  # type: ignore[arg-type]
