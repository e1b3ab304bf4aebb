"""Does the grammar-constrained Python block help the embedded model in code mode?

The 32 tool questions of ``bench_local.py`` (4 tools: weather, time, calculator, currency), each
asked once to the embedded SmolLM2-135M model three ways:

- program, grammar: ``CodeBlockModel`` writes the program as a Python block under the program
  grammar (``tooluse.local.code_block.program_grammar``);
- program, free: the same prompt, the block written without the grammar (up to its fence);
- direct call (the baseline): the backend's own grammar-constrained call, ``tool_choice``
  required, as ``bench_local.py`` measures it.

Each program runs in the sandbox through ``CodeModeExecutor`` against tools that record their
calls. Figures per way: the share of programs that ran without an error (for the direct call:
of valid calls), of answers whose first call is the right tool, and of those whose arguments
are sensible (``bench_local.py``'s checks), and the seconds per question. Written to
``benchmarks/results/code_mode_local.json``. ``CODE_MODE_LOCAL_QUESTIONS=N`` asks only the first
N questions (a check that the script works).

    python benchmarks/measure_code_mode_local.py
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_local  # noqa: E402 - the questions and tools, from beside this file

from tooluse import ChatMessage, SamplingParams, ToolCall, ToolExecutor  # noqa: E402
from tooluse.execution.code_mode import CodeMode, CodeModeExecutor, program_calls  # noqa: E402
from tooluse.local import LlamaCppBackend  # noqa: E402
from tooluse.local.code_block import CodeBlockModel  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "code_mode_local.json"
LIMIT = int(os.environ.get("CODE_MODE_LOCAL_QUESTIONS", "0")) or None
IMPLEMENTATIONS = {
    "get_weather": lambda city, unit="celsius": {"city": city, "temperature": 18, "unit": unit},
    "get_time": lambda timezone: {"timezone": timezone, "time": "14:05"},
    "calculate": lambda expression: {"expression": expression, "value": 42},
    "convert_currency": lambda amount, from_currency, to_currency: {"amount": amount * 0.9},
}
TOOLS = [dataclasses.replace(t, function=IMPLEMENTATIONS[t.name]) for t in bench_local.TOOLS]


def program_way(backend: Any, constrain: bool, questions: list[Any]) -> dict[str, Any]:
    model = CodeBlockModel(backend, constrain=constrain, max_tokens=120)
    executor = CodeModeExecutor(ToolExecutor(TOOLS), CodeMode(timeout=10))
    program = executor.definitions[0]
    ran = right = sensible = 0
    started = time.perf_counter()
    for number, (question, expected, check) in enumerate(questions):
        turn = model.generate([ChatMessage.user(question)], [program])
        code = turn.tool_calls[0].arguments["code"]
        result = executor.execute(
            ToolCall(id=f"q{number}", name=program.name, arguments={"code": code})
        )
        made = program_calls(result)
        ran += not result.is_error
        first = made[0].call if made else None
        right += first is not None and first.name == expected
        sensible += first is not None and first.name == expected and check(first.arguments)
    executor.close()
    model.close()
    return _shares(len(questions), ran, right, sensible, started)


def direct_way(backend: Any, questions: list[Any]) -> dict[str, Any]:
    valid = right = sensible = 0
    started = time.perf_counter()
    for question, expected, check in questions:
        result = backend.generate(
            [ChatMessage.user(question)], TOOLS, SamplingParams(max_tokens=96), "required"
        )
        call = result.tool_calls[0] if result.tool_calls else None
        ok = call is not None and call.raw_arguments is None
        valid += ok
        right += ok and call.name == expected
        sensible += ok and call.name == expected and check(call.arguments)
    return _shares(len(questions), valid, right, sensible, started)


def _shares(n: int, ran: int, right: int, sensible: int, started: float) -> dict[str, Any]:
    return {
        "questions": n,
        "ran_share": round(ran / n, 3),
        "right_tool_share": round(right / n, 3),
        "sensible_args_share": round(sensible / n, 3),
        "seconds_per_question": round((time.perf_counter() - started) / n, 2),
    }


def main() -> dict[str, Any]:
    questions = bench_local.TOOL_QUESTIONS[:LIMIT]
    backend = LlamaCppBackend.default()
    figures = {
        "model": backend.display_name,
        "program_grammar": program_way(backend, True, questions),
        "program_free": program_way(backend, False, questions),
        "direct_call": direct_way(backend, questions),
    }
    for way in ("program_grammar", "program_free", "direct_call"):
        f = figures[way]
        print(
            f"{way:<16} ran {f['ran_share']:.0%}  right tool {f['right_tool_share']:.0%}  "
            f"sensible args {f['sensible_args_share']:.0%}  {f['seconds_per_question']} s/question"
        )
    record = {
        "benchmark": "code_mode_local",
        "recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "figures": figures,
    }
    if LIMIT is None:
        RESULTS.write_text(json.dumps(record, indent=2) + "\n")
        print(f"-> {RESULTS}")
    return figures


if __name__ == "__main__":
    main()
