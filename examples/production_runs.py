"""Production runs: a call that waits for approval and is resumed from its saved state in
another place, a checkpointed run, a fallback model and the cost of a run, with a scripted
model (swap in ``load_model("openai:gpt-4o")`` or the embedded model for real ones)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tooluse import (
    Approve,
    GenerationResult,
    RunState,
    ScriptedBackend,
    StopReason,
    ToolCall,
    ToolRegistry,
    Usage,
    resume,
    run,
    tool,
)
from tooluse.errors import BackendHTTPError
from tooluse.providers import FallbackBackend

REGISTRY = ToolRegistry()


@tool(requires_approval=True, registry=REGISTRY)
def refund(order: str, amount: float) -> str:
    """Refund an order.

    Args:
        order: The order id.
        amount: The amount to refund.
    """
    return f"refunded {amount:.2f} on {order}"


@tool(registry=REGISTRY)
def look_up(order: str) -> str:
    """Look an order up.

    Args:
        order: The order id.
    """
    return f"{order}: 2 items, 41.50 paid"


def model() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [
                ToolCall(id="look", name="look_up", arguments={"order": "A-17"}),
                ToolCall(id="pay", name="refund", arguments={"order": "A-17", "amount": 41.5}),
            ],
            "The order A-17 was refunded.",
        ]
    )


def approval(folder: Path) -> None:
    backend = model()
    paused = run(backend, "Refund order A-17", tools=[refund, look_up])
    print("stopped:", paused.stop_reason.value, "waiting:", [c.name for c in paused.pending])
    paused.state.save(folder / "paused.json")  # a person decides later, maybe elsewhere
    state = RunState.load(folder / "paused.json")
    decisions = {call.id: Approve() for call in state.pending}
    done = resume(backend, state, tools=[refund, look_up], decisions=decisions)
    print("resumed:", done.stop_reason.value, "->", done.final_text)
    print("results:", [t.output for t in done.trail])


def checkpointed(folder: Path) -> None:
    path = folder / "run.json"
    result = run(model(), "Refund order A-17", tools=[look_up], checkpoint=path)
    saved = RunState.load(path)
    print("checkpoint:", saved.stop_reason, len(saved.messages), "messages")
    assert result.stop_reason is StopReason.FINAL_TEXT


class Down(ScriptedBackend):
    def generate(self, *args, **kwargs):
        raise BackendHTTPError("primary is down", status_code=503, body="")


def fallback_and_cost() -> None:
    spare = ScriptedBackend(
        [GenerationResult(text="Hello from the spare.", usage=Usage(cost=0.0004))]
    )
    result = run(FallbackBackend([Down([]), spare]), "hi")
    print("fallback:", result.final_text, f"cost ${result.usage.cost:.4f}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        approval(Path(scratch))
        checkpointed(Path(scratch))
    fallback_and_cost()
