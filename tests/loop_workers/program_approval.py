"""One process of a code-mode run that pauses for approval, used by tests/test_code_mode.py.

``python program_approval.py start STATE LOG`` runs until the program's ``wire_money`` call
waits for approval and saves the state to STATE; ``python program_approval.py resume STATE LOG
approve|deny`` loads it in a new process and resumes with that decision. Every tool run
appends ``name argument`` to LOG, so the test can count what ran, in which process.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tooluse import Approve, Deny, RunState, ScriptedBackend, ToolCall, resume, run, tool
from tooluse.tools import ToolRegistry

REGISTRY = ToolRegistry()
MODE, STATE, LOG = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

PROGRAM = """
balances = await asyncio.gather(*[balance(a) for a in ["alice", "bob", "carol"]])
richest = max(balances, key=lambda b: b["amount"])
print("richest:", richest["account"])
try:
    receipt = await wire_money(richest["account"], 10)
    print("wired:", receipt)
except CallDenied as refused:
    print("not wired:", refused.message)
"""


def record(line: str) -> None:
    with LOG.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


@tool(registry=REGISTRY)
def balance(account: str) -> dict:
    """An account's balance.

    Args:
        account: The account.
    """
    record(f"balance {account}")
    return {"account": account, "amount": {"alice": 30, "bob": 70, "carol": 50}[account]}


@tool(registry=REGISTRY, requires_approval=True)
def wire_money(account: str, amount: int) -> str:
    """Wire money from an account (needs a person's approval).

    Args:
        account: The account to take it from.
        amount: How much.
    """
    record(f"wire {account}")
    return f"{amount} from {account}"


def main() -> None:
    tools = [balance, wire_money]
    if MODE == "start":
        backend = ScriptedBackend(
            [[ToolCall(id="prog", name="run_python", arguments={"code": PROGRAM})]]
        )
        result = run(backend, "Take 10 from the richest account.", tools=tools, code_mode=True)
        result.state.save(STATE)
        waiting = result.pending[0]
        print(result.stop_reason.value, waiting.id, waiting.name, waiting.arguments)
        print("program:", result.state.program_of(waiting).strip().splitlines()[0])
        return
    state = RunState.load(STATE)
    decision = Approve() if sys.argv[4] == "approve" else Deny(reason="not this month")
    backend = ScriptedBackend(["All done."])
    result = resume(
        backend, state, tools=tools, code_mode=True, decisions={state.pending[0].id: decision}
    )
    program_answer = next(m.result for m in result.messages if m.role == "tool")
    print(result.stop_reason.value, result.final_text)
    print(program_answer.output)


if __name__ == "__main__":
    main()
