"""Sandboxed python tool overhead: tooluse's sandbox vs a plain ``python -c`` subprocess.

Both run the same snippets in a fresh interpreter:

- baseline: ``subprocess.run([python, "-c", code], capture_output=True, timeout=...)``, the
  way verifiers and GEM run their python tool (no limits, no clean environment);
- tooluse: ``run_python(code, limits)`` with the default isolation (user/mount/PID/IPC/UTS/
  network namespaces, a private read-only root, privileges dropped, rlimits, capped readers);
- the same with ``isolate=False`` (limits only), to show what the isolation itself costs;
- one call in a ``SandboxSession`` (the interpreter already running; state kept).

Figures are the median wall time per run in milliseconds and the ratio tooluse / baseline
(1.0 means no overhead). Also: a whole environment step (python call through the executor,
rewards computed) and the BFCL checker on the shipped sample.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from tooluse.envs import Action, environment_registry
from tooluse.evals import check_entry, load_sample
from tooluse.execution.sandbox import PythonSandbox, SandboxLimits, run_python
from tooluse.messages import ToolCall

RUNS = 12
SNIPPETS = {
    "print": "print(0.15 * 80)",
    "import math": "import math\nprint(math.factorial(30))",
    "loop 1e5": "s = 0\nfor i in range(100_000):\n    s += i\nprint(s)",
}


def _median_ms(fn) -> float:
    fn()  # warm the page cache
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> dict:
    limits = SandboxLimits(timeout=10.0)
    loose = SandboxLimits(timeout=10.0, isolate=False, allow_network=True)
    figures: dict = {"runs": RUNS, "snippets": {}}
    print(
        f"{'snippet':<14}{'plain ms':>10}{'sandbox ms':>12}{'ratio':>8}"
        f"{'no-ns ms':>10}{'session ms':>12}"
    )
    session = PythonSandbox(limits).session()
    for name, code in SNIPPETS.items():
        plain = _median_ms(
            lambda code=code: subprocess.run(
                [sys.executable, "-c", code], capture_output=True, timeout=10
            )
        )
        sandbox = _median_ms(lambda code=code: run_python(code, limits))
        no_namespaces = _median_ms(lambda code=code: run_python(code, loose))
        in_session = _median_ms(lambda code=code: session.run(code))
        figures["snippets"][name] = {
            "plain_ms": round(plain, 2),
            "sandbox_ms": round(sandbox, 2),
            "ratio": round(sandbox / plain, 3),
            "no_isolation_ms": round(no_namespaces, 2),
            "isolation_cost_ms": round(sandbox - no_namespaces, 2),
            "session_call_ms": round(in_session, 2),
        }
        print(
            f"{name:<14}{plain:>10.1f}{sandbox:>12.1f}{sandbox / plain:>8.2f}"
            f"{no_namespaces:>10.1f}{in_session:>12.2f}"
        )
    session.close()

    env = environment_registry.get(name="math:arithmetic", tool_types=("python",))
    state, _ = env.reset(options={"task_index": 0})
    action = Action(tool_calls=(ToolCall(id="1", name="python", arguments={"code": "print(1)"}),))
    step_ms = _median_ms(lambda: env.step(state, action))
    sandbox_print = figures["snippets"]["print"]["sandbox_ms"]
    figures["env_step_ms"] = round(step_ms, 2)
    figures["env_step_over_sandbox"] = round(step_ms / sandbox_print, 3)
    print(
        f"env step (python call + rewards): {step_ms:.1f} ms, {step_ms / sandbox_print:.2f}x a bare sandbox run"
    )
    env.close()

    entries = load_sample()
    # The first accepted value of each parameter: what a right answer looks like.
    decoded = [
        [
            {name: {k: next((v for v in vs if v != ""), None) for k, vs in params.items()}}
            for gt in e.ground_truth
            for name, params in gt.items()
        ]
        for e in entries
    ]
    started = time.perf_counter()
    rounds = 200
    for _ in range(rounds):
        for entry, calls in zip(entries, decoded):
            check_entry(entry.category, entry.functions, calls, entry.ground_truth)
    per_entry_us = (time.perf_counter() - started) / (rounds * len(entries)) * 1e6
    figures["bfcl_check_us_per_entry"] = round(per_entry_us, 2)
    figures["bfcl_entries"] = len(entries)
    print(f"BFCL check: {per_entry_us:.1f} us per entry ({len(entries)} entries x {rounds})")
    return figures


if __name__ == "__main__":
    main()
