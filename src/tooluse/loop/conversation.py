"""Conversations between several participants, each with its own model, tools and tool budget.

::

    solver = Participant(name="solver", backend=model, tools=[calculator], max_tool_iters=4)
    conv = Conversation(participants=[solver], shared_context="Compute 17 * 23, then explain.")
    conv.run(turns=2)
    conv.transcript[-1].metadata["tool_trail"]

Participants speak in turn (round robin; one turn is one participant's message). Each turn
runs the tool loop on the participant's private view; only the final message reaches the shared
``transcript``, with the calls it made in ``metadata["tool_trail"]``. ``save`` stores tools by
name and models by spec; ``Conversation.load`` resolves them against a registry.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from tooluse.execution.base import normalize_tools
from tooluse.loop.drivers import RunOptions, RunResult, arun, run
from tooluse.messages import ChatMessage
from tooluse.providers.base import Backend, SamplingParams
from tooluse.tools.definition import ToolDefinition

__all__ = ["Conversation", "Participant"]

FORMAT_VERSION = 1

BackendSource = Union[Mapping[str, Backend], Callable[[str], Backend], None]


@dataclass(frozen=True, kw_only=True)
class Participant:
    """One voice in a conversation.

    ``model`` names the backend for :meth:`Conversation.save` (e.g. ``"openai:gpt-4o-mini"``);
    when left empty, the backend's own ``model_spec`` / ``model`` / ``name`` attribute is used.
    """

    name: str
    backend: Backend = field(compare=False)
    tools: tuple[Any, ...] = ()
    max_tool_iters: int = 4
    system_prompt: str | None = None
    tool_call_parser: Any = field(default=None, compare=False)
    params: SamplingParams | None = None
    model: str = ""

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("a participant needs a non-empty name")
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))
        if self.max_tool_iters < 0:
            raise ValueError("max_tool_iters must be >= 0")

    @property
    def tool_definitions(self) -> tuple[ToolDefinition, ...]:
        return normalize_tools(self.tools)

    def model_spec(self) -> str:
        if self.model:
            return self.model
        for attribute in ("model_spec", "model", "name"):
            value = getattr(self.backend, attribute, None)
            if isinstance(value, str) and value:
                return value
        return type(self.backend).__name__


class Conversation:
    """A shared transcript and the participants who add to it."""

    def __init__(
        self,
        participants: Sequence[Participant],
        shared_context: str | None = None,
        *,
        transcript: Sequence[ChatMessage] = (),
    ) -> None:
        if not participants:
            raise ValueError("a conversation needs at least one participant")
        names = [p.name for p in participants]
        if len(set(names)) != len(names):
            raise ValueError(f"participant names must be unique, got {names}")
        self.participants = list(participants)
        self.shared_context = shared_context
        self.transcript: list[ChatMessage] = list(transcript)
        self.runs: list[RunResult] = []

    # -- turns ---------------------------------------------------------------------------------

    def next_speaker(self) -> Participant:
        """Who speaks next (round robin over the participants, continuing a loaded transcript)."""
        return self.participants[len(self.transcript) % len(self.participants)]

    def view_for(self, participant: Participant) -> list[ChatMessage]:
        """The participant's private prompt: its system prompt, the shared context and the
        transcript (its own messages as ``assistant``, the others' as named ``user`` turns)."""
        others = [p.name for p in self.participants if p.name != participant.name]
        system = participant.system_prompt or (
            f"You are {participant.name}, in a conversation with {', '.join(others)}."
            if others
            else f"You are {participant.name}."
        )
        view = [ChatMessage.system(system)]
        if self.shared_context:
            view.append(ChatMessage.user(self.shared_context))
        for message in self.transcript:
            if message.name == participant.name:
                view.append(ChatMessage.assistant(message.content))
            else:
                view.append(ChatMessage.user(f"{message.name}: {message.content}"))
        if view[-1].role != "user":
            view.append(ChatMessage.user(f"It is your turn, {participant.name}."))
        return view

    def _record(self, participant: Participant, result: RunResult) -> ChatMessage:
        message = ChatMessage(
            role="assistant",
            content=result.final_text,
            name=participant.name,
            metadata={
                "participant": participant.name,
                "tool_trail": [entry.to_dict() for entry in result.trail],
                "stop_reason": result.stop_reason.value,
                "usage": {
                    "input_tokens": result.usage.input_tokens,
                    "output_tokens": result.usage.output_tokens,
                    "requests": result.usage.requests,
                },
            },
        )
        self.transcript.append(message)
        self.runs.append(result)
        return message

    def _options(self, participant: Participant) -> RunOptions:
        return RunOptions(
            tools=participant.tools,
            max_tool_iters=participant.max_tool_iters,
            tool_call_parser=participant.tool_call_parser,
            params=participant.params,
        )

    def step(self) -> ChatMessage:
        """One turn of the next speaker; returns the message added to the transcript."""
        participant = self.next_speaker()
        result = run(participant.backend, self.view_for(participant), **self._options(participant))
        return self._record(participant, result)

    async def astep(self) -> ChatMessage:
        participant = self.next_speaker()
        result = await arun(
            participant.backend, self.view_for(participant), **self._options(participant)
        )
        return self._record(participant, result)

    def run(self, turns: int = 1) -> list[ChatMessage]:
        """Let ``turns`` messages be spoken (round robin); returns them."""
        if turns < 0:
            raise ValueError("turns must be >= 0")
        return [self.step() for _ in range(turns)]

    async def arun(self, turns: int = 1) -> list[ChatMessage]:
        if turns < 0:
            raise ValueError("turns must be >= 0")
        return [await self.astep() for _ in range(turns)]

    # -- persistence ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: participants (tools by name, model by spec) and transcript."""
        return {
            "version": FORMAT_VERSION,
            "shared_context": self.shared_context,
            "participants": [
                {
                    "name": p.name,
                    "model": p.model_spec(),
                    "tools": [d.name for d in p.tool_definitions],
                    "max_tool_iters": p.max_tool_iters,
                    "system_prompt": p.system_prompt,
                    "tool_call_parser": getattr(p.tool_call_parser, "name", None),
                }
                for p in self.participants
            ],
            "transcript": [_message_to_dict(m) for m in self.transcript],
        }

    def save(self, path: str | Path) -> None:
        """Write the conversation as JSON (live objects are stored by name)."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=2, default=str)
        Path(path).write_text(text + "\n", encoding="utf-8")

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        registry: Any = None,
        backends: BackendSource = None,
    ) -> Conversation:
        """Read a saved conversation; tools are resolved by name against ``registry``.

        ``registry`` is a ``ToolRegistry`` (default: ``DEFAULT_REGISTRY``) or a mapping of name
        to tool. ``backends`` gives each participant's backend: a mapping by participant name,
        or a function of the saved model spec; without it, the spec goes to
        ``tooluse.providers.load_model``.
        """
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"unsupported conversation format version {data.get('version')!r}")
        participants = [
            _participant_from_dict(entry, registry, backends) for entry in data["participants"]
        ]
        transcript = [_message_from_dict(m) for m in data.get("transcript", [])]
        return cls(participants, data.get("shared_context"), transcript=transcript)


def _message_to_dict(message: ChatMessage) -> dict[str, Any]:
    return {
        "role": message.role,
        "name": message.name,
        "content": message.content,
        "metadata": message.metadata,
    }


def _message_from_dict(data: Mapping[str, Any]) -> ChatMessage:
    return ChatMessage(
        role=data["role"],
        content=data.get("content", ""),
        name=data.get("name"),
        metadata=dict(data.get("metadata") or {}),
    )


def _resolve_tool(registry: Any, name: str) -> Any:
    if registry is None:
        from tooluse.tools import DEFAULT_REGISTRY

        registry = DEFAULT_REGISTRY
    if isinstance(registry, Mapping):
        if name not in registry:
            from tooluse.errors import ToolNotFoundError

            raise ToolNotFoundError(name, tuple(registry))
        return registry[name]
    return registry.get(name)


def _resolve_backend(backends: BackendSource, participant: str, spec: str) -> Backend:
    if isinstance(backends, Mapping):
        if participant in backends:
            return backends[participant]
        if spec in backends:
            return backends[spec]
        raise ValueError(
            f"no backend given for participant {participant!r} (model {spec!r}); "
            f"backends has: {', '.join(sorted(backends))}"
        )
    if callable(backends):
        return backends(spec)
    from tooluse.providers import load_model

    return load_model(spec)


def _participant_from_dict(
    entry: Mapping[str, Any], registry: Any, backends: BackendSource
) -> Participant:
    name = entry["name"]
    spec = entry.get("model") or ""
    parser = None
    if entry.get("tool_call_parser"):
        from tooluse.formats import get_parser

        parser = get_parser(entry["tool_call_parser"])
    tools = tuple(_resolve_tool(registry, tool_name) for tool_name in entry.get("tools", []))
    return Participant(
        name=name,
        backend=_resolve_backend(backends, name, spec),
        tools=tools,
        max_tool_iters=int(entry.get("max_tool_iters", 4)),
        system_prompt=entry.get("system_prompt"),
        tool_call_parser=parser,
        model=spec,
    )
