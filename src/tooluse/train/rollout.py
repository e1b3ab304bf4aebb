"""Rollouts for GRPO: the training model plays an environment's episodes, turn by turn, in the
text the local llama.cpp backend shows it, and the environment grades them.

::

    rollouts = play_rollouts(env, [0, 0, 1, 1], renderer=backend, codec=codec,
                             generate=generate, settings=RolloutSettings(max_completion_tokens=160))
    [r.reward for r in rollouts]          # the environment's own total reward per episode

One rollout is one episode. Its prompt is the first turn as :meth:`LlamaCppBackend.render`
writes it (the system prompt with the tools, the task); its completion is everything after:
the model's turns and, between them, the tool results and the next assistant header, in the
backend's rendering. ``model_mask`` is 1 on the tokens the model wrote and 0 on those the
environment wrote, so the loss falls on the model's tokens only.

Each turn the model's text is read with the backend profile's parser and handed to
``env.step`` as one action: its calls run there (the sandboxed ``python`` really runs), a
``submit_answer`` call ends and grades the episode, and a turn without a readable call is the
final answer in text, as the environment reads it. (The tool loop would ask once more after an
unreadable call; a rollout does not, so a malformed call costs the reward.) An episode also
ends when the completion's token budget is spent (``length``: not graded, reward so far) or
after ``max_turns`` turns.

Tools are listed in every turn's prompt, so each prompt extends the one before it and the
tokens the model was sampled on are exactly the tokens trained on. This module does no
torch: ``generate`` is any function from token sequences to continuations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from tooluse.envs.base import Action, EnvState, ToolEnvironment
from tooluse.local.profiles import ToolPromptProfile
from tooluse.messages import ChatMessage
from tooluse.tools.definition import ToolDefinition
from tooluse.train.data import TrainDataError

__all__ = [
    "GenerateTokens",
    "Rollout",
    "RolloutRenderer",
    "RolloutSettings",
    "TokenCodec",
    "first_messages",
    "play_rollouts",
]

#: Continuations of token sequences: ``generate(sequences, max_new_tokens)`` -> new tokens of
#: each (anything after its first end-of-turn token is ignored).
GenerateTokens = Callable[[list[list[int]], int], list[list[int]]]
Ended = Literal["answered", "truncated", "turns", "length"]


class RolloutRenderer(Protocol):
    """How the local backend writes prompts and reads calls (a ``LlamaCppBackend``)."""

    profile: ToolPromptProfile

    def render(self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition] = ()) -> str:
        """The prompt text of ``messages`` with ``tools`` listed, ending with the next turn's
        assistant header."""
        ...

    def render_turn(
        self,
        history: Sequence[ChatMessage],
        reply: ChatMessage,
        tools: Sequence[ToolDefinition] = (),
    ) -> tuple[str, str]:
        """The prompt of ``reply``'s turn and its text up to the end-of-turn token."""
        ...


@dataclass(frozen=True, kw_only=True)
class TokenCodec:
    """Text to tokens and back, as the training model's tokenizer does it."""

    encode: Callable[[str], list[int]]
    decode: Callable[[Sequence[int]], str]
    #: The tokens that end a turn (the model's end-of-turn token).
    eos_ids: frozenset[int]


@dataclass(frozen=True, kw_only=True)
class RolloutSettings:
    """The limits of one episode: tokens after the prompt, model turns; the system prompt."""

    max_completion_tokens: int
    max_turns: int = 3
    system_prompt: str | None = None


@dataclass(frozen=True, kw_only=True)
class Rollout:
    """One played episode as training tokens, with the environment's verdict."""

    task_index: int
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    #: 1 for each completion token the model wrote, 0 for the environment's.
    model_mask: tuple[int, ...]
    #: The sum of the environment's step rewards (its own weights).
    reward: float
    success: bool
    turns: int
    tool_calls: int
    ended: Ended


def first_messages(task_prompt: str, system_prompt: str | None) -> list[ChatMessage]:
    """The conversation an episode starts with: the system prompt, then the task."""
    start = [ChatMessage.system(system_prompt)] if system_prompt else []
    return [*start, ChatMessage.user(task_prompt)]


@dataclass(frozen=True, kw_only=True)
class _Setting:
    """What every episode of a batch shares."""

    env: ToolEnvironment
    renderer: RolloutRenderer
    codec: TokenCodec
    settings: RolloutSettings


class _Play:
    """One episode in progress (rollout-internal, mutable)."""

    def __init__(self, setting: _Setting, index: int) -> None:
        self.index = index
        self.state: EnvState = setting.env.reset(options={"task_index": index})[0]
        self.messages = first_messages(
            self.state.observation.prompt, setting.settings.system_prompt
        )
        self.prompt = setting.codec.encode(setting.renderer.render(self.messages, self.tools()))
        self.completion: list[int] = []
        self.mask: list[int] = []
        self.reward = 0.0
        self.success = False
        self.turns = 0
        self.calls = 0
        self.ended: Ended | None = None

    def tools(self) -> tuple[ToolDefinition, ...]:
        return self.state.observation.available_tools

    def room(self, settings: RolloutSettings) -> int:
        return settings.max_completion_tokens - len(self.completion)

    def add(self, ids: Sequence[int], written_by_model: bool) -> None:
        self.completion.extend(ids)
        self.mask.extend([1 if written_by_model else 0] * len(ids))

    def result(self) -> Rollout:
        assert self.ended is not None
        return Rollout(
            task_index=self.index,
            prompt_ids=tuple(self.prompt),
            completion_ids=tuple(self.completion),
            model_mask=tuple(self.mask),
            reward=self.reward,
            success=self.success,
            turns=self.turns,
            tool_calls=self.calls,
            ended=self.ended,
        )


def _model_turn(new: Sequence[int], room: int, eos_ids: frozenset[int]) -> tuple[list[int], bool]:
    """The tokens of the turn (up to and with its end-of-turn token, within ``room``) and
    whether the turn ended."""
    for position, token in enumerate(new[:room]):
        if token in eos_ids:
            return list(new[: position + 1]), True
    return list(new[:room]), False


def _suffix(
    renderer: RolloutRenderer,
    history: Sequence[ChatMessage],
    reply: ChatMessage,
    after: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition],
) -> str:
    """What the backend writes after the model's turn ``reply``: the results in ``after`` and
    the next assistant header."""
    prompt, turn = renderer.render_turn(history, reply, tools)
    whole = renderer.render(after, tools)
    if not whole.startswith(prompt + turn):
        raise TrainDataError(
            "the chat template does not render a conversation as an extension of its earlier "
            "turns; GRPO rollouts need it to (the tokens sampled must be the tokens trained)"
        )
    return whole[len(prompt) + len(turn) :]


def _step(play: _Play, setting: _Setting, new: Sequence[int]) -> None:
    """Take the model's new tokens as one turn: step the environment, add its results."""
    settings, codec, renderer = setting.settings, setting.codec, setting.renderer
    ids, finished = _model_turn(new, play.room(settings), codec.eos_ids)
    play.add(ids, written_by_model=True)
    play.turns += 1
    if not finished:
        play.ended = "length"
        return
    parsed = renderer.profile.parse(codec.decode(ids[:-1]))
    result = setting.env.step(play.state, Action(tool_calls=parsed.calls, text=parsed.text))
    play.state, play.reward = result.state, play.reward + result.reward
    play.calls += len(parsed.calls)
    if result.done:
        play.ended = "answered" if result.terminated else "truncated"
        play.success = bool(result.info.get("correct"))
        return
    if play.turns >= settings.max_turns:
        play.ended = "turns"
        return
    reply = ChatMessage.assistant(parsed.text, parsed.calls)
    after = [*play.messages, reply, *(ChatMessage.tool_result(r) for r in result.tool_results)]
    if result.observation.user_message:
        after.append(ChatMessage.user(result.observation.user_message))
    suffix = codec.encode(_suffix(renderer, play.messages, reply, after, play.tools()))
    if len(suffix) >= play.room(settings):  # no room left for the model's next turn
        play.ended = "length"
        return
    play.add(suffix, written_by_model=False)
    play.messages = after


def play_rollouts(
    env: ToolEnvironment,
    task_indices: Sequence[int],
    *,
    renderer: RolloutRenderer,
    codec: TokenCodec,
    generate: GenerateTokens,
    settings: RolloutSettings,
) -> list[Rollout]:
    """One episode per entry of ``task_indices`` (GRPO's groups repeat an index), played
    together: each round, every episode still running gets its next model turn from one
    ``generate`` call. Returns them in the order of ``task_indices``."""
    if settings.max_completion_tokens < 1 or settings.max_turns < 1:
        raise ValueError("max_completion_tokens and max_turns must be at least 1")
    setting = _Setting(env=env, renderer=renderer, codec=codec, settings=settings)
    plays = [_Play(setting, index) for index in task_indices]
    while running := [p for p in plays if p.ended is None]:
        sequences = [[*p.prompt, *p.completion] for p in running]
        continuations = generate(sequences, max(p.room(settings) for p in running))
        if len(continuations) != len(running):
            raise ValueError(f"generate gave {len(continuations)} continuations for {len(running)}")
        for play, new in zip(running, continuations, strict=True):
            _step(play, setting, new)
    return [p.result() for p in plays]
