"""100 MB of output: the caller keeps the capped head and reads the rest through a small buffer.

Measured in a real caller process (its peak RSS before and after the call), one-shot and in a
session, with the output written in many chunks and in one piece.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

CALLER = textwrap.dedent(
    """
    import json, resource, sys
    from tooluse.execution.sandbox import PythonSandbox, SandboxLimits, run_python
    limits = SandboxLimits(timeout=120, max_output_chars=8000)
    code = sys.argv[2]
    run_python("print(1)", limits)  # imports and first-run allocations before measuring
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.argv[1] == "session":
        with PythonSandbox(limits).session() as session:
            result = session.run(code)
    else:
        result = run_python(code, limits)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"grown_kb": grown, "stdout": result.stdout, "stderr": result.stderr,
                      "truncated": result.truncated_chars, "ok": result.ok}))
    """
)

CHUNKS = "import sys\nchunk = 'x' * 1_000_000\nfor _ in range(100):\n    sys.stdout.write(chunk)\n"
ONE_PIECE = "print('y' * 100_000_000, end='')\n"


@pytest.mark.parametrize("mode", ["run", "session"])
@pytest.mark.parametrize("code", [CHUNKS, ONE_PIECE], ids=["chunks", "one_piece"])
def test_hundred_megabytes_of_stdout_keep_the_caller_small(mode, code):
    done = subprocess.run(
        [sys.executable, "-c", CALLER, mode, code], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"]
    # 8,000 characters are kept; the marker says how many of the 100,000,000 were dropped.
    head, _, marker = report["stdout"].partition("\n... [output truncated: ")
    assert len(head) == 8000 and set(head) <= {"x", "y"}
    assert marker == f"{100_000_000 - 8000} more characters]"
    assert report["truncated"] == 100_000_000 - 8000
    # The caller grows by a few buffers, never by a share of the output (100 MB).
    assert report["grown_kb"] < 8 * 1024, report["grown_kb"]
