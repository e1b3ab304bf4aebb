"""History validation before a request: every tool call answered exactly once, right after its turn.

Providers reject histories with unanswered, orphaned or duplicated tool results, often with a 400
one turn after the real mistake (a call left unanswered after a timeout or crash). Checking here
names the offending ids before anything is sent; ``repair=True`` closes unanswered calls with
synthesized error results instead of raising.
"""

from __future__ import annotations

from collections.abc import Sequence

from tooluse.errors import HistoryError
from tooluse.messages import ChatMessage, ToolResult

__all__ = ["UNANSWERED_CALL_OUTPUT", "validate_history"]

UNANSWERED_CALL_OUTPUT = "not executed: cancelled or timed out"


def _result_of(message: ChatMessage, index: int) -> ToolResult:
    if message.result is None:
        raise HistoryError(
            f"message {index} has role 'tool' but no result; build it with ChatMessage.tool_result()"
        )
    return message.result


def validate_history(messages: Sequence[ChatMessage], *, repair: bool = False) -> list[ChatMessage]:
    """Check that a conversation is one every provider accepts; return it (repaired if asked).

    Rules: a tool message follows an assistant turn that requested tools (possibly after other
    tool messages of the same batch); each requested id gets exactly one result; ids are unique
    across the conversation. Violations raise :class:`HistoryError` naming the ids.

    With ``repair=True``, calls that have no result get a synthesized ``is_error`` result
    ("not executed: cancelled or timed out"), and each batch of results is put in call order. Orphaned and duplicated results still raise: dropping them would
    silently lose data. Repair is idempotent.
    """
    out: list[ChatMessage] = []
    seen_ids: dict[str, int] = {}
    i, n = 0, len(messages)
    while i < n:
        message = messages[i]
        if message.role == "tool":
            result = _result_of(message, i)
            raise HistoryError(
                f"tool result for call {result.call_id!r} (message {i}) does not follow an "
                "assistant turn that requested it",
                call_ids=(result.call_id,),
            )
        out.append(message)
        i += 1
        if message.role != "assistant" or not message.tool_calls:
            continue
        calls = message.tool_calls
        for call in calls:
            if call.id in seen_ids:
                raise HistoryError(
                    f"tool call id {call.id!r} is used twice (messages {seen_ids[call.id]} and {i - 1})",
                    call_ids=(call.id,),
                )
            seen_ids[call.id] = i - 1
        requested = {call.id for call in calls}
        answered: dict[str, ChatMessage] = {}
        while i < n and messages[i].role == "tool":
            result = _result_of(messages[i], i)
            if result.call_id not in requested:
                raise HistoryError(
                    f"tool result for call {result.call_id!r} (message {i}) answers no call of "
                    f"the preceding assistant turn (calls: {', '.join(c.id for c in calls)})",
                    call_ids=(result.call_id,),
                )
            if result.call_id in answered:
                raise HistoryError(
                    f"tool call {result.call_id!r} has more than one result (message {i})",
                    call_ids=(result.call_id,),
                )
            answered[result.call_id] = messages[i]
            i += 1
        missing = tuple(call.id for call in calls if call.id not in answered)
        if missing and not repair:
            raise HistoryError(
                f"tool calls without a result: {', '.join(missing)}; every call needs exactly one "
                "result right after its assistant turn (validate_history(..., repair=True) "
                "closes them with error results)",
                call_ids=missing,
            )
        if repair:
            for call in calls:
                if call.id not in answered:
                    answered[call.id] = ChatMessage.tool_result(
                        ToolResult.failure(
                            call.id, call.name, UNANSWERED_CALL_OUTPUT, synthesized=True
                        )
                    )
            out.extend(answered[call.id] for call in calls)
        else:
            out.extend(answered.values())
    return out
