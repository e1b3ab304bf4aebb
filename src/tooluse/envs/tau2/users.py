"""The simulated customer of a τ²-bench conversation, played by any tooluse backend.

The user model gets the package's own user-simulator guidelines and the task's user scenario
(its persona and instructions) as its system prompt, and sees the conversation from the
customer's side: the agent's messages as ``user`` turns, its own as ``assistant`` turns, and
only the results of its own tool calls (telecom customers act on their phone: toggling
airplane mode, running a speed test). Its calls run on the episode's environment as the
package's ``user`` requestor; it speaks when it writes text, and ends the conversation with
one of the package's stop tokens (``###STOP###``, ``###TRANSFER###``, ``###OUT-OF-SCOPE###``).

:class:`ScriptedUser` is a scripted customer for tests (the gold scripts of
:mod:`tooluse.envs.tau2.gold` play a task's user actions with it): its n-th turn in a
conversation is the n-th of its script, so one instance serves every episode and thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage, new_call_id
from tooluse.providers.base import (
    Backend,
    BaseBackend,
    GenerationResult,
    SamplingParams,
    ToolChoice,
)
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "GREETING",
    "STOP_TOKENS",
    "ScriptedUser",
    "UserSimulator",
    "UserSimulatorError",
    "UserTurn",
    "is_stop",
    "user_system_prompt",
    "user_view",
]

#: The agent's first message of every conversation without a history (as the package's).
GREETING = "Hi! How can I help you today?"
#: The package's tokens by which the user ends the conversation.
STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")


class UserSimulatorError(RuntimeError):
    """The user simulator failed (its backend raised, or it never said anything)."""


def is_stop(text: str) -> bool:
    """Whether a user message ends the conversation."""
    return any(token in text for token in STOP_TOKENS)


def user_system_prompt(guidelines: str, scenario: str) -> str:
    """The user model's system prompt: the package's guidelines, then the task's scenario."""
    return f"{guidelines.strip()}\n\n<scenario>\n{scenario.strip()}\n</scenario>"


def user_view(records: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """The conversation as the customer sees it (roles flipped; the agent's tool calls and
    their results left out, the results of the customer's own calls kept)."""
    view: list[ChatMessage] = []
    for record in records:
        role, content = record["role"], record.get("content") or ""
        if role == "assistant":
            if not record.get("tool_calls") and content:
                view.append(ChatMessage.user(content))
        elif role == "user":
            calls = tuple(
                ToolCall(id=c["id"], name=c["name"], arguments=dict(c["arguments"]))
                for c in record.get("tool_calls") or ()
            )
            view.append(ChatMessage.assistant(content, calls))
        elif record.get("requestor") == "user":
            result = ToolResult(
                call_id=record["id"],
                tool_name=record.get("name", ""),
                output=content,
                is_error=bool(record.get("error")),
            )
            view.append(ChatMessage.tool_result(result))
    return view


@dataclass(frozen=True, kw_only=True)
class UserTurn:
    """What the user did in one turn: the message records to append (its tool calls with
    their results, then its text), the text itself, and how many of its calls failed."""

    records: tuple[dict[str, Any], ...]
    text: str
    errors: int = 0
    steps: int = 0


#: Runs one of the user's calls: ``(call id, name, arguments) -> (content, is_error)``.
RunUserCall = Callable[[str, str, dict[str, Any]], tuple[str, bool]]


@dataclass(kw_only=True)
class UserSimulator:
    """A backend playing the customer; ``reply`` gives its next turn.

    ``max_tool_rounds`` caps the tool rounds of one turn (a user that keeps calling tools
    without speaking is a failed user turn, as a turn limit).
    """

    backend: Backend
    system_prompt: str
    tools: tuple[ToolDefinition, ...] = ()
    params: SamplingParams | None = None
    max_tool_rounds: int = 10

    def reply(self, records: Sequence[Mapping[str, Any]], run_call: RunUserCall) -> UserTurn:
        """The user's next turn after ``records`` (``UserSimulatorError`` when it fails)."""
        added: list[dict[str, Any]] = []
        errors = steps = 0
        for _ in range(self.max_tool_rounds + 1):
            messages = [ChatMessage.system(self.system_prompt), *user_view([*records, *added])]
            try:
                result = self.backend.generate(messages, tools=self.tools, params=self.params)
            except Exception as exc:  # any failure of the user model fails the conversation
                raise UserSimulatorError(
                    f"the user simulator failed: {type(exc).__name__}: {exc}"
                ) from exc
            text = (result.text or "").strip()
            if not result.tool_calls:
                if not text:
                    raise UserSimulatorError("the user simulator replied with nothing")
                added.append({"role": "user", "content": text})
                return UserTurn(records=tuple(added), text=text, errors=errors, steps=steps + 1)
            calls, results = self._run(result.tool_calls, run_call)
            added.append({"role": "user", "content": text or None, "tool_calls": calls})
            added.extend(results)
            errors += sum(1 for r in results if r["error"])
            steps += 2
        raise UserSimulatorError(
            f"the user simulator called tools for {self.max_tool_rounds} rounds without speaking"
        )

    def _run(
        self, calls: Sequence[ToolCall], run_call: RunUserCall
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Run the user's calls in order: their records and their results' records."""
        recorded, results = [], []
        for call in calls:
            call_id = call.id or new_call_id()
            arguments = dict(call.arguments or {})
            content, error = run_call(call_id, call.name, arguments)  # the package decides
            recorded.append(
                {"id": call_id, "name": call.name, "arguments": arguments, "requestor": "user"}
            )
            results.append(
                {
                    "role": "tool",
                    "id": call_id,
                    "name": call.name,
                    "content": content,
                    "requestor": "user",
                    "error": error,
                }
            )
        return recorded, results


class ScriptedUser(BaseBackend):
    """A scripted customer: its turn in a conversation is picked by how many turns it has
    already taken there (its ``assistant`` messages), so it keeps no state of its own.

    Each turn is a text or a list of :class:`ToolCall`; a conversation that outlasts the
    script gets ``###STOP###``."""

    name = "scripted-user"

    def __init__(self, turns: Sequence[str | Sequence[ToolCall]]) -> None:
        self.turns = tuple(turns)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return self.generate(messages, tools, params, tool_choice)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        taken = sum(1 for m in messages if m.role == "assistant")
        turn = self.turns[taken] if taken < len(self.turns) else "###STOP###"
        usage = Usage(requests=1)
        if isinstance(turn, str):
            return GenerationResult(text=turn, usage=usage)
        calls = tuple(turn)
        return GenerationResult(tool_calls=calls, usage=usage, finish_reason="tool_calls")
