"""Gold plays of τ²-bench tasks: a scripted agent and a scripted user that carry out a task's
expected actions, for the parity test with the package's evaluator and for teacher data.

The agent calls its expected actions one per turn; where the user must act (telecom's
customer toggles roaming on the phone), the agent asks for it in a message and the scripted
user makes those calls, then says it did. The agent's last message states the information
the task requires to be communicated; the user then ends the conversation. In solo mode the
agent makes every call itself and ends with ``done``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tooluse.messages import ToolCall

__all__ = ["GoldScript", "gold_script", "opening_message"]

#: The scripted user's reply after doing what the agent asked.
DONE_REPLY = "I did that on my phone."


@dataclass(frozen=True, kw_only=True)
class GoldScript:
    """The turns of the scripted agent and of the scripted user (``ScriptedBackend`` turns:
    a text, or a list of calls)."""

    agent: tuple[Any, ...]
    user: tuple[Any, ...]


def opening_message(task: Any) -> str:
    """What the scripted user says first: the reason for its call."""
    instructions = task.user_scenario.instructions
    reason = getattr(instructions, "reason_for_call", None)
    return str(reason if reason else instructions).strip()


def _call(action: Any) -> ToolCall:
    return ToolCall(id="", name=action.name, arguments=dict(action.arguments))


def _segments(actions: list[Any]) -> list[tuple[str, list[Any]]]:
    """Consecutive actions grouped by who makes them."""
    segments: list[tuple[str, list[Any]]] = []
    for action in actions:
        if segments and segments[-1][0] == action.requestor:
            segments[-1][1].append(action)
        else:
            segments.append((action.requestor, [action]))
    return segments


def _closing(task: Any) -> str:
    infos = (
        list(task.evaluation_criteria.communicate_info or ()) if task.evaluation_criteria else []
    )
    if infos:
        return "Here is what you need to know: " + "; ".join(infos) + "."
    return "Your request is taken care of. Is there anything else I can help you with?"


def gold_script(task: Any, *, solo: bool = False, done_tool: str = "done") -> GoldScript:
    """The scripted turns that play ``task``'s expected actions (see the module)."""
    criteria = task.evaluation_criteria
    actions = list(criteria.actions or ()) if criteria is not None else []
    if solo:
        return GoldScript(
            agent=(*([_call(a)] for a in actions), [ToolCall(id="", name=done_tool)]), user=()
        )
    agent: list[Any] = []
    history = task.initial_state.message_history if task.initial_state else None
    # The scripted user's turns are counted in the conversation: the history's come first.
    earlier = sum(1 for m in history or () if m.role == "user")
    user: list[Any] = [*([""] * earlier), opening_message(task)]
    for requestor, group in _segments(actions):
        if requestor == "user":
            asked = ", ".join(a.get_func_format() for a in group)
            agent.append(f"Please do this on your phone: {asked}.")
            user.append([_call(a) for a in group])
            user.append(DONE_REPLY)
        else:
            agent.extend([_call(a)] for a in group)
    agent.append(_closing(task))
    user.append("###STOP###")
    return GoldScript(agent=tuple(agent), user=tuple(user))
