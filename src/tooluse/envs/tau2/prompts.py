"""The agent's instructions in a τ²-bench conversation (the domain's policy follows them), and
the ``done`` tool that ends a solo conversation."""

from __future__ import annotations

from tooluse.tools.definition import ToolDefinition

__all__ = ["DONE_TOOL", "agent_system_prompt", "done_tool"]

DONE_TOOL = "done"

AGENT_INSTRUCTIONS = (
    "You are a customer service agent. Help the customer while following the policy below "
    "exactly. In each turn either send the customer a message or call tools, not both. Use "
    "the tools to look up and change records; never make up information a tool can give."
)
SOLO_INSTRUCTIONS = (
    "You are a customer service agent working on the ticket below; you cannot talk to the "
    "customer. Follow the policy below exactly: call the tools to diagnose and fix the "
    "problem, and when the ticket is solved call `done` alone in its turn."
)


def agent_system_prompt(policy: str, *, solo: bool = False, ticket: str | None = None) -> str:
    """The agent's system prompt: instructions, the domain's policy and, solo, the ticket."""
    instructions = SOLO_INSTRUCTIONS if solo else AGENT_INSTRUCTIONS
    parts = [f"<instructions>\n{instructions}\n</instructions>", f"<policy>\n{policy}\n</policy>"]
    if solo and ticket:
        parts.append(f"<ticket>\n{ticket}\n</ticket>")
    return "\n".join(parts)


def done_tool() -> ToolDefinition:
    """The terminal ``done`` tool of solo mode: the ticket is solved."""
    return ToolDefinition(
        name=DONE_TOOL,
        description="Call this when the ticket is solved; it ends the task.",
        parameters=(),
        is_terminal=True,
    )
