"""Code mode: the model writes one Python program that calls the tools.

Twenty stores, one tool call per store: the program makes the 20 calls at once in the sandbox,
keeps the stores under their target and asks to discount them (a call that needs a person's
approval, so the run pauses and resumes from its saved state without calling any store again).
The model is a scripted one; swap in ``load_model("anthropic:claude-sonnet-4-5")`` or the
embedded model to have a real one write the program.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tooluse import Approve, RunState, ScriptedBackend, ToolCall, ToolRegistry, resume, run, tool

REGISTRY = ToolRegistry()
STORES = [f"store-{n:02d}" for n in range(20)]
SALES_CALLS: list[str] = []  # what ran on the host


@tool(registry=REGISTRY)
def weekly_sales(store: str) -> dict:
    """A store's sales of the week, day by day.

    Args:
        store: The store, e.g. store-07.
    """
    SALES_CALLS.append(store)
    number = int(store.split("-")[1])
    days = [{"day": d, "units": 40 + (number * 7 + d * 3) % 25} for d in range(7)]
    return {"store": store, "target": 351, "days": days}


@tool(registry=REGISTRY, requires_approval=True)
def set_discount(store: str, percent: int) -> str:
    """Put a store's prices down (a person approves each one).

    Args:
        store: The store.
        percent: The discount, in percent.
    """
    return f"{store}: {percent}% off from tomorrow"


PROGRAM = """
weeks = await asyncio.gather(*[weekly_sales(s) for s in STORES])
under = [w["store"] for w in weeks if sum(d["units"] for d in w["days"]) < w["target"]]
print(f"{len(under)} of {len(weeks)} stores under target: {under}")
for store in under[:1]:
    print(await set_discount(store, 10))
""".replace("STORES", repr(STORES))


def model() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [ToolCall(id="program", name="run_python", arguments={"code": PROGRAM})],
            "Two stores are under target; store-00 gets 10% off from tomorrow.",
        ]
    )


def main() -> None:
    backend = model()
    tools = [weekly_sales, set_discount]
    paused = run(
        backend, "Which stores are under target? Discount the first.", tools=tools, code_mode=True
    )
    offered = backend.requests[0].tools[0]
    print("the model sees:", offered.name, "with", offered.description.count("async def"), "stubs")
    stubs = offered.description.split("```python\n")[1].split("```")[0]
    print(stubs.split("\n\nasync def")[0])
    waiting = paused.pending[0]
    print("stopped:", paused.stop_reason.value, "waiting:", waiting.name, waiting.arguments)
    print("made by the program:", paused.state.program_of(waiting).strip().splitlines()[0][:40])
    print("store calls so far:", len(SALES_CALLS))
    with tempfile.TemporaryDirectory() as folder:  # the decision may come from elsewhere
        paused.state.save(Path(folder) / "paused.json")
        state = RunState.load(Path(folder) / "paused.json")
    done = resume(backend, state, tools=tools, code_mode=True, decisions={waiting.id: Approve()})
    program_answer = next(m.result.output for m in done.messages if m.role == "tool")
    print("the program printed:", program_answer.replace("\n", " | "))
    print("store calls in all:", len(SALES_CALLS), "(none repeated on resume)")
    inner = [t for t in done.trail if t.caller == "program"]
    print("trail:", len(inner), "calls made by the program, then", done.trail[-1].name)
    print("answer:", done.final_text, f"({len(backend.requests)} model turns)")


if __name__ == "__main__":
    main()
