"""Code mode against direct calls, in one run: turns, tokens, overhead, the escape corpus.

- **Fan-out** (three tasks of this file: expenses, logs, stock): each needs 20 calls whose
  results are about 20 KB each, and an answer that filters or sums over all of them. A scripted
  model solves each twice: directly (one call per model turn, then the answer) and in code mode
  (one program that makes the 20 calls, filters and prints, then the answer). Figures: model
  turns and the tokens the model reads (every request's messages and tools as OpenAI Chat JSON,
  counted with the embedded SmolLM2 model's tokenizer), code mode's over direct's; both answers
  are checked against the truth.
- **BFCL multi-turn replay** (``multi_turn_base``): the ground truth of each entry replayed on
  BFCL's executable classes, directly (one call per model turn, then a text answer ending the
  user turn) and in code mode (one program per user turn that makes the turn's calls and ends
  it with ``final_answer``). Figures: model turns of each, the reduction, and whether each
  mode's world after every turn passes BFCL's state and response checks (the same final state).
- **Overhead**: a sandbox interpreter's start (runtime loaded) p50; a call from a program to
  the host and back p50 (measured inside the program around each ``await``); a one-call
  program against one direct call, end to end through ``tooluse.run`` with a scripted model,
  the next interpreter started while the model would write its turn (measured after the spare
  is ready), p50 of each and their difference.
- **Security**: the escape corpus (``code_mode_escapes.py``): each case's outcome and time.

``CODE_MODE_BENCH=tiny`` runs a small size (a check that the script works, not figures).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import tooluse
from tooluse import ScriptedBackend, ToolCall, ToolDefinition
from tooluse.execution.code_mode import CodeMode, tool_stubs
from tooluse.execution.code_mode.sandboxes import ready_session, spares_for
from tooluse.providers.openai_chat import encode_request

HERE = Path(__file__).resolve().parent
TINY = os.environ.get("CODE_MODE_BENCH") == "tiny"
FANOUT = 4 if TINY else 20
BFCL_ENTRIES = 3 if TINY else 200
REPEATS = 3 if TINY else 15
SETTINGS = CodeMode(timeout=60)


class Tokens:
    """The embedded model's tokenizer (its vocabulary only)."""

    def __init__(self) -> None:
        from llama_cpp import Llama

        from tooluse.local.model_files import default_model_path

        self.model = Llama(str(default_model_path()), vocab_only=True, verbose=False)

    def of_request(self, request: Any) -> int:
        body = encode_request(request.messages, request.tools, None, request.tool_choice)
        text = json.dumps({"messages": body["messages"], "tools": body.get("tools", [])})
        return len(self.model.tokenize(text.encode(), add_bos=False, special=False))


# -- fan-out tasks --------------------------------------------------------------------------------


def _expenses(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    data = {}
    for i in range(FANOUT):
        items = [
            {
                "date": f"2026-0{1 + n % 9}-{1 + n % 28:02d}",
                "merchant": rng.choice(["Air Lines", "Hotel Central", "Cafe Nord", "Taxi Co"]),
                "category": rng.choice(["travel", "lodging", "meals", "transport"]),
                "amount": round(rng.uniform(2, 58 if i % 3 else 70), 2),
                "note": "receipt attached" if n % 2 else "approved by manager",
            }
            for n in range(180)
        ]
        data[f"e{i:02d}"] = items
    return data


def _logs(rng: random.Random) -> dict[str, str]:
    levels = ["INFO"] * 12 + ["WARN"] * 3 + ["ERROR"]
    return {
        f"svc{i:02d}": "\n".join(
            f"2026-03-{1 + n % 28:02d}T12:{n % 60:02d}:00 {rng.choice(levels)} svc{i:02d} "
            f"request {n} handled in {rng.randint(1, 900)} ms for user u{rng.randint(1, 999)}"
            for n in range(250)
        )
        for i in range(FANOUT)
    }


def _stock(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    skus = [f"{c}-{n}" for c in "ABCDEFG" for n in range(100, 130)]
    return {
        f"w{i:02d}": [
            {
                "sku": sku,
                "name": f"item {sku}, standard pack",
                "quantity": rng.randint(0, 500),
                "aisle": rng.randint(1, 40),
            }
            for sku in rng.sample(skus, len(skus))
        ]
        for i in range(FANOUT)
    }


@dataclasses.dataclass
class FanOut:
    """One task: its tool, the keys to call it with, the program, and the true answer."""

    name: str
    tool: ToolDefinition
    keys: list[str]
    program: str
    answer: str


def fanout_tasks() -> list[FanOut]:
    rng = random.Random(41)
    expenses, logs, stock = _expenses(rng), _logs(rng), _stock(rng)

    def get_expenses(employee_id: str) -> list:
        """An employee's expense line items this year.

        Args:
            employee_id: The employee, e.g. e07.
        """
        return expenses[employee_id]

    def fetch_logs(service: str) -> str:
        """A service's log of today, one line per request.

        Args:
            service: The service, e.g. svc03.
        """
        return logs[service]

    def warehouse_stock(warehouse_id: str) -> list:
        """Every item a warehouse holds.

        Args:
            warehouse_id: The warehouse, e.g. w11.
        """
        return stock[warehouse_id]

    over = sorted(k for k, items in expenses.items() if sum(x["amount"] for x in items) > 5000)
    errors = {k: v.count(" ERROR ") for k, v in logs.items()}
    units = sum(x["quantity"] for items in stock.values() for x in items if x["sku"] == "C-115")
    return [
        FanOut(
            "expenses over 5,000",
            ToolDefinition.from_callable(get_expenses),
            list(expenses),
            "ids = {keys}\nall_items = await asyncio.gather(*[get_expenses(i) for i in ids])\n"
            "print(sorted(i for i, items in zip(ids, all_items) "
            "if sum(x['amount'] for x in items) > 5000))",
            str(over),
        ),
        FanOut(
            "errors per service",
            ToolDefinition.from_callable(fetch_logs),
            list(logs),
            "ids = {keys}\ntexts = await asyncio.gather(*[fetch_logs(s) for s in ids])\n"
            "counts = {{s: t.count(' ERROR ') for s, t in zip(ids, texts)}}\nprint(counts)",
            str(errors),
        ),
        FanOut(
            "units of C-115",
            ToolDefinition.from_callable(warehouse_stock),
            list(stock),
            "ids = {keys}\nheld = await asyncio.gather(*[warehouse_stock(w) for w in ids])\n"
            "print(sum(x['quantity'] for items in held for x in items if x['sku'] == 'C-115'))",
            str(units),
        ),
    ]


def _direct_answer(task: FanOut, messages: Any) -> str:
    """What a model that read every result would answer (computed from the history)."""
    outputs = [m.result.output for m in messages if m.role == "tool"]
    if task.name.startswith("expenses"):
        totals = [sum(x["amount"] for x in json.loads(o)) for o in outputs]
        return str(sorted(k for k, t in zip(task.keys, totals) if t > 5000))
    if task.name.startswith("errors"):
        return str({k: o.count(" ERROR ") for k, o in zip(task.keys, outputs)})
    return str(sum(x["quantity"] for o in outputs for x in json.loads(o) if x["sku"] == "C-115"))


class DirectModel(tooluse.BaseBackend):
    """One call per turn, then the answer computed from what it read."""

    def __init__(self, task: FanOut) -> None:
        self.task = task
        self.requests: list[Any] = []

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        self.requests.append(_Request(tuple(messages), tuple(tools), tool_choice))
        done = sum(1 for m in messages if m.role == "tool")
        if done < len(self.task.keys):
            name = self.task.tool.parameters_schema["required"][0]
            call = ToolCall(
                id=f"c{done}", name=self.task.tool.name, arguments={name: self.task.keys[done]}
            )
            return tooluse.GenerationResult(tool_calls=(call,), finish_reason="tool_calls")
        return tooluse.GenerationResult(text=_direct_answer(self.task, messages))


class CodeModel(tooluse.BaseBackend):
    """One program, then the answer it printed."""

    def __init__(self, program: str) -> None:
        self.program = program
        self.requests: list[Any] = []

    async def agenerate(self, messages, tools=(), params=None, tool_choice="auto"):
        self.requests.append(_Request(tuple(messages), tuple(tools), tool_choice))
        printed = [m.result.output for m in messages if m.role == "tool"]
        if printed:
            return tooluse.GenerationResult(text=printed[-1].strip())
        call = ToolCall(id="p", name="run_python", arguments={"code": self.program})
        return tooluse.GenerationResult(tool_calls=(call,), finish_reason="tool_calls")


@dataclasses.dataclass
class _Request:
    messages: tuple[Any, ...]
    tools: tuple[Any, ...]
    tool_choice: Any


def fanout(tokens: Tokens) -> dict[str, Any]:
    figures: dict[str, Any] = {"calls_per_task": FANOUT, "tasks": {}}
    direct_total = code_total = 0
    for task in fanout_tasks():
        direct = DirectModel(task)
        # The direct model reads every result whole (no cut), as it must to answer right.
        direct_run = tooluse.run(
            direct,
            task.name,
            tools=[task.tool],
            max_tool_iters=FANOUT + 1,
            max_output_chars=1_000_000,
        )
        code = CodeModel(task.program.format(keys=task.keys))
        code_run = tooluse.run(code, task.name, tools=[task.tool], code_mode=SETTINGS)
        direct_tokens = sum(tokens.of_request(r) for r in direct.requests)
        code_tokens = sum(tokens.of_request(r) for r in code.requests)
        direct_total += direct_tokens
        code_total += code_tokens
        result_chars = sum(len(m.result.output) for m in direct_run.messages if m.role == "tool")
        right = (direct_run.final_text == task.answer, code_run.final_text == task.answer)
        figures["tasks"][task.name] = {
            "direct_turns": len(direct.requests),
            "code_turns": len(code.requests),
            "direct_tokens_read": direct_tokens,
            "code_tokens_read": code_tokens,
            "tokens_ratio": round(code_tokens / direct_tokens, 4),
            "result_kb_per_call": round(result_chars / FANOUT / 1000, 1),
            "direct_answer_right": right[0],
            "code_answer_right": right[1],
        }
        print(
            f"{task.name:<22} turns {len(direct.requests):>3} -> {len(code.requests)}  tokens "
            f"{direct_tokens:>9} -> {code_tokens:>6} ({code_tokens / direct_tokens:.2%})  "
            f"right: {right[0]}/{right[1]}"
        )
    figures["tokens_ratio_all"] = round(code_total / direct_total, 4)
    return figures


# -- BFCL multi-turn replay ----------------------------------------------------------------------


def _bfcl_tools(entry: Any, world: Any) -> list[ToolDefinition]:
    from tooluse.evals.bfcl.data import tool_from_bfcl_function
    from tooluse.evals.bfcl.world import function_docs

    tools = []
    for doc in function_docs(entry.involved_classes):
        tool = tool_from_bfcl_function(doc)
        name = tool.metadata["bfcl_name"]

        def call(_name: str = name, **arguments: Any) -> str:
            return str(world.call(_name, arguments)[0])

        tools.append(dataclasses.replace(tool, function=call))
    return tools


def _program(turn: list[tuple[str, dict[str, Any]]], functions: dict[str, str]) -> str:
    """One program making a user turn's calls. A call that fails is printed and the program
    goes on, as a failed direct call's error goes back to the model and the next call follows
    (some ground-truth calls fail on purpose)."""
    lines = []
    for name, arguments in turn:
        args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        lines += [
            "try:",
            f"    await {functions[name]}({args})",
            "except Exception as error:",
            "    print(error)",
        ]
    lines.append('final_answer("Done.")')
    return "\n".join(lines)


def _replay(entry: Any, code_mode: bool) -> tuple[int, list[bool]]:
    """The ground truth replayed one way: the model turns it took and each turn's BFCL check."""
    from tooluse.evals.bfcl.world import World, check_turn, ground_truth_calls

    world = World(entry)
    tools = _bfcl_tools(entry, world)
    functions = {s.tool: s.function for s in tool_stubs(tools)}
    history: list[Any] = []
    turns, checks, results = 0, [], []
    for index, (text, calls) in enumerate(zip(entry.turns, ground_truth_calls(entry))):
        if code_mode and calls:
            script: list[Any] = [
                [
                    ToolCall(
                        id=f"t{index}",
                        name="run_python",
                        arguments={"code": _program(calls, functions)},
                    )
                ],
                "Done.",  # answers only if the program did not end the turn
            ]
        else:
            script = [
                [ToolCall(id=f"t{index}c{i}", name=n, arguments=a)]
                for i, (n, a) in enumerate(calls)
            ]
            script.append("Done.")
        backend = ScriptedBackend(script)
        prompt = [*history, tooluse.ChatMessage.user(text or "Go on.")]
        options: dict[str, Any] = {"code_mode": SETTINGS} if code_mode else {}
        result = tooluse.run(backend, prompt, tools=tools, max_tool_iters=len(calls) + 1, **options)
        history = list(result.messages)
        turns += len(backend.requests)
        made = [t for t in result.trail if t.name != "run_python"]
        results += [t.output for t in made]
        checks.append(check_turn(entry, index, world, results, len(made)).valid)
    return turns, checks


def bfcl() -> dict[str, Any]:
    from tooluse.evals.bfcl.world import load_multi_turn

    entries = load_multi_turn("multi_turn_base")[:BFCL_ENTRIES]
    direct_turns = code_turns = same = both_valid = 0
    for entry in entries:
        d_turns, d_checks = _replay(entry, code_mode=False)
        c_turns, c_checks = _replay(entry, code_mode=True)
        direct_turns += d_turns
        code_turns += c_turns
        same += d_checks == c_checks
        both_valid += all(d_checks) and all(c_checks)
    reduction = 1 - code_turns / direct_turns
    print(
        f"BFCL multi_turn_base, {len(entries)} entries: model turns {direct_turns} -> {code_turns} "
        f"({reduction:.1%} fewer); same checks {same}/{len(entries)}, all valid both ways "
        f"{both_valid}/{len(entries)}"
    )
    return {
        "entries": len(entries),
        "direct_model_turns": direct_turns,
        "code_model_turns": code_turns,
        "turn_reduction": round(reduction, 4),
        "same_turn_checks": same,
        "valid_both_ways": both_valid,
    }


# -- overhead ------------------------------------------------------------------------------------


def _p50(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 2)


def overhead() -> dict[str, Any]:
    starts = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        ready_session(SETTINGS).close()
        starts.append(time.perf_counter() - started)

    def noop(i: int) -> int:
        """Give the number back.

        Args:
            i: A number.
        """
        return i

    timed = (
        "import time\nspent = []\nfor i in range(200):\n    t = time.perf_counter()\n"
        "    await noop(i)\n    spent.append(time.perf_counter() - t)\nprint(json.dumps(spent))"
    )
    spares = spares_for(SETTINGS)
    spares.wait_ready()
    run = tooluse.run(
        ScriptedBackend([[ToolCall(id="p", name="run_python", arguments={"code": timed})], "ok"]),
        "q",
        tools=[noop],
        code_mode=SETTINGS,
    )
    per_call = json.loads(next(m.result.output for m in run.messages if m.role == "tool"))
    direct, code = [], []
    one_call = "print(await noop(1))"
    for _ in range(REPEATS):
        spares.wait_ready()  # started while the model writes its turn
        started = time.perf_counter()
        tooluse.run(
            ScriptedBackend([[ToolCall(id="d", name="noop", arguments={"i": 1})], "ok"]),
            "q",
            tools=[noop],
        )
        direct.append(time.perf_counter() - started)
        spares.wait_ready()
        started = time.perf_counter()
        tooluse.run(
            ScriptedBackend(
                [[ToolCall(id="p", name="run_python", arguments={"code": one_call})], "ok"]
            ),
            "q",
            tools=[noop],
            code_mode=SETTINGS,
        )
        code.append(time.perf_counter() - started)
    figures = {
        "sandbox_start_ms_p50": _p50(starts),
        "inner_call_ms_p50": _p50(per_call),
        "direct_one_call_run_ms_p50": _p50(direct),
        "program_one_call_run_ms_p50": _p50(code),
    }
    figures["program_minus_direct_ms"] = round(
        figures["program_one_call_run_ms_p50"] - figures["direct_one_call_run_ms_p50"], 2
    )
    print(
        f"sandbox start {figures['sandbox_start_ms_p50']} ms; a call from a program "
        f"{figures['inner_call_ms_p50']} ms; one-call run: direct "
        f"{figures['direct_one_call_run_ms_p50']} ms, program "
        f"{figures['program_one_call_run_ms_p50']} ms (+{figures['program_minus_direct_ms']} ms)"
    )
    return figures


# -- security ------------------------------------------------------------------------------------


def security() -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location(
        "code_mode_escapes", HERE / "code_mode_escapes.py"
    )
    assert spec is not None and spec.loader is not None
    corpus = importlib.util.module_from_spec(spec)
    sys.modules["code_mode_escapes"] = corpus
    spec.loader.exec_module(corpus)
    outcomes, result = corpus.run_corpus()
    for o in outcomes:
        verdict = "refused" if o.error else "contained"
        print(f"  {'ok ' if o.passed else 'FAIL'} {o.name:<40} {verdict:<10} {o.seconds:.2f} s")
    passed = sum(o.passed for o in outcomes)
    print(
        f"escape corpus: {passed}/{len(outcomes)} contained or refused; run ended {result.stop_reason.value}"
    )
    return {
        "cases": len(outcomes),
        "passed": passed,
        "run_went_on": result.stop_reason.value == "final_text",
        "outcomes": {
            o.name: {"passed": o.passed, "refused": o.error, "seconds": round(o.seconds, 3)}
            for o in outcomes
        },
    }


def main() -> dict[str, Any]:
    figures: dict[str, Any] = {"size": "tiny" if TINY else "full"}
    print("fan-out (20 calls of about 20 KB each):")
    figures["fanout"] = fanout(Tokens())
    figures["bfcl_multi_turn"] = bfcl()
    figures["overhead"] = overhead()
    figures["security"] = security()
    return figures


if __name__ == "__main__":
    main()
