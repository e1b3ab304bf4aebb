"""``adapter="gem"``: GEM's text environments (PyPI ``gem-llm``) as tooluse tool environments.

::

    env = environment_registry.get(name="game:GuessTheNumber-v0-easy", adapter="gem",
                                   tool_types=(), size=10, seed=0)
    state, info = env.reset(options={"task_index": 0})
    state.observation.prompt                  # GEM's first observation: the rules of the game
    call = ToolCall(id="1", name="act", arguments={"action": "\\\\boxed{5}"})
    result = env.step(state, Action(tool_calls=(call,)))
    result.info["tool_results"][0].output     # 'At turn 1, you guessed 5, and the target ...'

A GEM environment is text in, text out: ``reset(seed)`` gives an observation, ``step(action)``
gives the next observation, a reward and whether the episode ended. Here:

* **Tasks.** Task ``i`` is the GEM environment reset with seed ``seed + i`` (``size`` tasks);
  its prompt is GEM's first observation. The game is the task, so a ``seed`` given to
  :meth:`~GemEnvironment.reset` is recorded but does not change it.
* **Actions.** The tool ``act(action: str)`` sends one action; its result is GEM's next
  observation. GEM's games read the move written inside ``\\boxed{...}`` (GuessTheNumber
  ``\\boxed{7}``, TowerofHanoi ``\\boxed{A C}``, Sudoku ``\\boxed{row col number}``; the first
  observation of each game says which). A turn without tool calls sends its text as the action
  (GEM's own protocol) and GEM's answer comes back as the next user message. ``tool_types``
  adds the sandboxed ``python`` (one session per episode, as in the native environments).
* **End.** The episode terminates when GEM ends it (GEM marks a game that ran out of turns both
  terminated and truncated: here it is terminated) and is truncated after ``max_steps`` steps.
  It is correct when GEM's last reward is at least ``success_reward`` (1.0: GEM's reward for a
  won game or a right answer).

==================  =======  ==================================================================
reward              type     value
==================  =======  ==================================================================
GemReward           step     the sum of GEM's rewards for the actions of the step (GEM games:
                             1 won, 0 ordinary move or lost, -0.1 unreadable move); no signal
                             for a step that sent no action
CorrectnessReward   outcome  1 if the episode ended correct (see above), else 0; weight 0
==================  =======  ==================================================================

The validity and efficiency monitors (weight 0) are added as in every environment.

**State.** ``state.data`` holds the task's seed, every action sent with its reward, and the
``python`` code run so far: JSON, so a state saves, restores and branches. The live GEM object
of the latest states is cached; any other state gets a fresh GEM object that replays the
state's actions from ``reset(seed)`` (checked against the recorded rewards). GEM's games draw
from the process-wide ``random`` and ``numpy.random`` generators, so every GEM call runs under
one lock with both seeded from (seed, action number) and the caller's generator states put
back afterwards: a replay plays the same game.

**Data sets.** GEM environments that load a Hugging Face data set (``math:*``, ``code:*``,
``qa:*``, ``logic:*``, ``eval:*``) and the word games that download NLTK's ``words`` corpus
(Wordle, Hangman, WordSearch) raise ``ValueError`` naming the data: tooluse does not download
data. ``name="math:GSM8K"`` with ``data_path=...`` (a GSM8K-format JSONL file) builds tooluse's
native ``math:gsm8k`` instead (:class:`~tooluse.envs.GSM8KEnvironment`: the same problems, the
``python`` and ``submit_answer`` tools, numeric grading), which is what the llenvs line
``environment_registry.get(name="math:GSM8K", adapter="gem", tool_types=("python",))`` needs.

This is the only module that imports ``gem`` (``pip install 'tooluse[gem]'``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import hashlib
import json
import logging
import random
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from tooluse.envs.arithmetic import SESSION_NOTE
from tooluse.envs.base import (
    Action,
    EnvState,
    Observation,
    StepResult,
    Task,
    ToolEnvironment,
    check_action,
)
from tooluse.envs.python_sessions import SessionPool, new_episode_data
from tooluse.envs.rewards import (
    CorrectnessReward,
    RewardSignal,
    RewardType,
    StepContext,
    WeightedReward,
    call_key,
    compute_signals,
)
from tooluse.envs.splits import split_seed_start
from tooluse.errors import MissingDependencyError
from tooluse.execution.sandbox import PythonSandbox, python_tool
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition, ToolParameter, ToolParameterType

__all__ = ["GemEnvironment", "GemReward", "build", "environment_ids"]

ACT = "act"
_CACHE_SIZE = 64
#: GEM's game modules that call ``nltk.download("words")`` when an environment is made.
_NLTK_WORD_GAMES = ("wordle", "hangman", "word_search")
#: One lock for every GEM call in the process: the games share the global random generators.
_GEM_LOCK = threading.RLock()


def _gem() -> tuple[Any, Any]:
    """``gem`` and ``numpy`` (imported once; importing gem configures the root logger, which
    is undone so that tooluse's users keep their logging as it was)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import gem
        import numpy
    except ImportError as exc:  # the extra is missing: say which one
        raise MissingDependencyError("gem-llm", "gem") from exc
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return gem, numpy


def environment_ids() -> tuple[str, ...]:
    """The ids of GEM's registered environments (not all of them work offline; see module)."""
    gem, _ = _gem()
    return tuple(sorted(gem.envs.registration.ENV_REGISTRY))


@contextmanager
def _seeded(numpy: Any, seed: int, action_number: int) -> Iterator[None]:
    """Run GEM code alone, with the global generators seeded from (seed, action number)."""
    with _GEM_LOCK:
        saved_random, saved_numpy = random.getstate(), numpy.random.get_state()
        mixed = (seed * 1_000_003 + action_number) % 2**32
        random.seed(mixed)
        numpy.random.seed(mixed)
        try:
            yield
        finally:
            random.setstate(saved_random)
            numpy.random.set_state(saved_numpy)


@dataclass(frozen=True, kw_only=True)
class GemReward(WeightedReward):
    """GEM's own reward: the sum of the rewards GEM gave the actions of this step."""

    name: str = "gem_reward"
    reward_type: ClassVar[RewardType] = RewardType.STEP

    def compute(self, context: StepContext) -> RewardSignal | None:
        rewards = context.info.get("gem_rewards") or []
        if not rewards:
            return None
        return self.signal(float(sum(rewards)), {"actions": len(rewards)})


def act_tool(env_id: str, example: str) -> ToolDefinition:
    """The ``act(action: str)`` tool of a GEM environment."""
    shown = f" (for example {example})" if example else ""
    return ToolDefinition(
        name=ACT,
        description=(
            f"Send one action to the {env_id} environment; the result is its answer. Write the "
            f"move inside \\boxed{{...}}{shown}, as the rules in the first message say."
        ),
        parameters=(
            ToolParameter(
                name="action",
                type=ToolParameterType.STRING,
                description="The action text, with the move inside \\boxed{...}.",
            ),
        ),
    )


class _Live:
    """A live GEM object and the number of actions it has taken."""

    def __init__(self, env: Any, actions: int) -> None:
        self.env = env
        self.actions = actions


class _Play:
    """One step's actions on a live GEM object: what was sent, GEM's rewards, and whether the
    episode ended or the GEM object broke (then it is dropped and the next step replays)."""

    def __init__(self, env: GemEnvironment, live: _Live, data: Mapping[str, Any]) -> None:
        self._env = env
        self.live = live
        self._seed = data["seed"]
        self.actions: list[str] = list(data["actions"])
        self.rewards: list[float] = list(data["rewards"])
        self.step_rewards: list[float] = []
        self.ended: dict[str, Any] | None = None
        self.broken = False

    def send(self, text: str) -> str:
        """Send one action; GEM's answer (raises :class:`_GemFailed` if GEM raised)."""
        try:
            observation, reward, terminated, truncated, info = self._env._send(
                self.live, self._seed, text
            )
        except Exception as exc:
            # The GEM object may be half-changed: drop it; the next step replays.
            self.broken = True
            raise _GemFailed(f"the environment failed on this action: {exc!r}") from exc
        self.actions.append(text)
        self.rewards.append(reward)
        self.step_rewards.append(reward)
        if terminated or truncated:
            self.ended = {"terminated": bool(terminated), "truncated": bool(truncated)}
            return observation
        return _with_suffix(observation, info)


@dataclass(frozen=True)
class _Started:
    prompt: str
    live: _Live


class GemEnvironment(ToolEnvironment):
    """One GEM environment id as a tool environment (see the module for the mapping)."""

    def __init__(  # noqa: PLR0913 -- keyword-only options of the registry
        self,
        env_id: str,
        *,
        size: int = 50,
        seed: int = 0,
        gem_kwargs: Mapping[str, Any] | None = None,
        tool_types: Sequence[str] = (),
        rewards: Sequence[Any] | None = None,
        max_steps: int = 30,
        success_reward: float = 1.0,
        python_timeout: float = 10.0,
        python_session: bool = True,
        split: str | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        seed = split_seed_start(split, seed=seed, size=size)  # task i plays seed + i
        gem, numpy = _gem()
        _check_offline(gem, env_id)
        self.env_id = env_id
        self.name = f"gem:{env_id}"
        self.size = size
        self.seed = seed
        self.success_reward = success_reward
        self._numpy = numpy
        self._make = lambda: gem.make(env_id, **dict(gem_kwargs or {}))
        self._prompts: dict[int, str] = {}
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self._lock = threading.Lock()
        with _seeded(numpy, seed, 0):
            try:
                probe = self._make()
            except Exception as exc:
                raise ValueError(f"GEM could not make {env_id!r}: {exc!r}") from exc
            try:
                example = str(probe.sample_random_action())
            except Exception:  # not every GEM environment offers an example action
                example = ""
        tools: list[ToolDefinition] = [act_tool(env_id, example)]
        for kind in tool_types:
            if kind != "python":
                raise ValueError(f"unknown tool type {kind!r}; GEM environments offer: python")
            tool = python_tool(timeout=python_timeout)
            if python_session:
                tool = dataclasses.replace(tool, description=tool.description + SESSION_NOTE)
            tools.append(tool)
        default_rewards = (GemReward(), CorrectnessReward(_weight=0.0))
        # Tasks are made on demand (resetting some GEM games takes seconds), so the base class
        # gets a stand-in; task(), tasks and len() below are the real ones.
        super().__init__(
            (Task(prompt="", reference=None),),
            tools=tools[1:],
            rewards=default_rewards if rewards is None else rewards,
            max_steps=max_steps,
        )
        self._tools = tuple(tools)  # no submit_answer: GEM decides when an episode ends
        self._has_python = len(tools) > 1
        self._sessions = (
            SessionPool(PythonSandbox(timeout=python_timeout), timeout=python_timeout)
            if python_session and self._has_python
            else None
        )

    # -- tasks -----------------------------------------------------------------------------------

    def task_seed(self, index: int) -> int:
        return self.seed + index

    def task(self, index: int) -> Task:
        if not 0 <= index < self.size:
            raise IndexError(f"task_index {index} is out of range (0..{self.size - 1})")
        prompt = self._prompts.get(index)
        if prompt is None:
            prompt = self._start(index).prompt
        seed = self.task_seed(index)
        return Task(
            id=f"{self.env_id}/seed={seed}",
            prompt=prompt,
            reference=None,
            metadata={"gem_env": self.env_id, "seed": seed},
        )

    @property
    def tasks(self) -> tuple[Task, ...]:
        """Every task (each one not yet started resets a GEM environment)."""
        return tuple(self.task(i) for i in range(self.size))

    def __len__(self) -> int:
        return self.size

    # -- episode ---------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start task ``options["task_index"]`` (default 0): GEM reset with the task's seed."""
        index = int((options or {}).get("task_index", 0))
        if not 0 <= index < self.size:
            raise IndexError(f"task_index {index} is out of range (0..{self.size - 1})")
        started = self._start(index)
        data: dict[str, Any] = {"seed": self.task_seed(index), "actions": [], "rewards": []}
        if self._sessions is not None:
            data.update(new_episode_data())
        self._keep(index, data, started.live)
        state = EnvState(
            task_index=index,
            observation=Observation(prompt=started.prompt, available_tools=self._tools),
            data=data,
        )
        info = {
            "task_id": f"{self.env_id}/seed={data['seed']}",
            "task_index": index,
            "seed": seed,
            "gem_seed": data["seed"],
        }
        return state, info

    def step(self, state: EnvState, action: Action) -> StepResult:
        """Send the action's ``act`` calls (or its text, without calls) to GEM, in order.

        ``python`` calls run first, in the episode's session; every call gets one result.
        """
        check_action(state, action)
        data = dict(state.data)
        python_calls = [c for c in action.tool_calls if c.name == "python" and self._has_python]
        python_results: dict[str, ToolResult] = {}
        if python_calls:
            ran, data = self._run_python(data, python_calls)
            python_results = {r.call_id: r for r in ran}
        play = _Play(self, self._take(state.task_index, state.data), data)
        results = tuple(
            python_results[call.id] if call.id in python_results else self._act(play, call)
            for call in action.tool_calls
        )
        user_message = ""
        if not action.tool_calls:
            try:
                user_message = play.send(action.text)
            except _GemFailed as exc:
                user_message = f"error: {exc}"
        new_data = {**data, "actions": play.actions, "rewards": play.rewards}
        if not play.broken:
            self._keep(state.task_index, new_data, play.live)
        return self._step_result(state, action, play, results, user_message, new_data)

    def _act(self, play: _Play, call: ToolCall) -> ToolResult:
        """The result of one call that is not ``python``: sent to GEM when it is a valid act."""
        if call.name != ACT:
            known = ", ".join(t.name for t in self._tools)
            return ToolResult.failure(
                call.id, call.name, f"unknown tool {call.name!r}; available: {known}"
            )
        if play.ended is not None or play.broken:
            why = "the episode ended" if play.ended is not None else "the environment failed"
            return ToolResult.failure(call.id, ACT, f"ignored: {why} at an earlier act")
        try:
            text = self._tools[0].validate_arguments(_given(call))["action"]
        except Exception as exc:  # the model gets the problem and may act again
            return ToolResult.failure(call.id, ACT, exc)
        try:
            output = play.send(str(text))
        except _GemFailed as exc:
            return ToolResult.failure(call.id, ACT, str(exc))
        return ToolResult.success(call.id, ACT, output, gem_reward=play.step_rewards[-1])

    def _step_result(  # noqa: PLR0913 -- the pieces of one step, gathered by step()
        self,
        state: EnvState,
        action: Action,
        play: _Play,
        results: tuple[ToolResult, ...],
        user_message: str,
        new_data: dict[str, Any],
    ) -> StepResult:
        """The step's outcome: whether the episode ended, its rewards and the next state."""
        actions, rewards = play.actions, play.rewards
        step_count = state.step_count + 1
        terminated = play.ended is not None
        truncated = not terminated and step_count >= self.max_steps
        correct: bool | None = None
        info: dict[str, Any] = {"tool_results": results, "step": step_count}
        if terminated:
            correct = rewards[-1] >= self.success_reward
            info.update(
                answer=actions[-1], correct=correct, gem=play.ended, gem_return=sum(rewards)
            )
            user_message = ""
        elif truncated:
            correct = False
            info["truncated_reason"] = f"GEM did not end the episode within {self.max_steps} steps"
            user_message = ""
        elif user_message:
            info["user_message"] = user_message
        if terminated or truncated:
            self._end(state.task_index, new_data)
        context = StepContext(
            calls=action.tool_calls,
            results=results,
            previous_calls=state.call_keys,
            text=action.text,
            answer=actions[-1] if terminated else None,
            correct=correct,
            done=terminated or truncated,
            info={"gem_rewards": play.step_rewards},
        )
        next_state = dataclasses.replace(
            state,
            observation=Observation(
                prompt=state.observation.prompt,
                available_tools=self._tools,
                tool_results=results,
                user_message=user_message,
            ),
            step_count=step_count,
            done=terminated or truncated,
            call_keys=state.call_keys + tuple(call_key(c) for c in action.tool_calls),
            answer=actions[-1] if terminated else state.answer,
            data=new_data,
        )
        return StepResult(
            state=next_state,
            signals=compute_signals(self.rewards, context),
            terminated=terminated,
            truncated=truncated,
            info=info,
        )

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        """Async :meth:`step` (run in a worker thread: GEM and the sandbox are blocking)."""
        return await asyncio.to_thread(self.step, state, action)

    def close(self) -> None:
        if self._sessions is not None:
            self._sessions.close()
        with self._lock:
            self._live.clear()
        super().close()

    # -- GEM objects -----------------------------------------------------------------------------

    def _start(self, index: int) -> _Started:
        seed = self.task_seed(index)
        with _seeded(self._numpy, seed, 0):
            env = self._make()
            observation, info = env.reset(seed=seed)
        prompt = _with_suffix(str(observation), info)
        self._prompts[index] = prompt
        return _Started(prompt=prompt, live=_Live(env, 0))

    def _send(self, live: _Live, seed: int, text: str) -> tuple[str, float, bool, bool, Any]:
        with _seeded(self._numpy, seed, live.actions + 1):
            observation, reward, terminated, truncated, info = live.env.step(text)
        live.actions += 1
        return str(observation), float(reward), bool(terminated), bool(truncated), info

    @staticmethod
    def _key(index: int, data: Mapping[str, Any]) -> str:
        text = json.dumps([index, data.get("seed"), data.get("actions", [])])
        return hashlib.sha256(text.encode()).hexdigest()

    def _take(self, index: int, data: Mapping[str, Any]) -> _Live:
        """The live GEM object of a state: from the cache (so no one else steps it), or a fresh
        one that replays the state's actions."""
        with self._lock:
            live = self._live.pop(self._key(index, data), None)
        if live is not None:
            return live
        live = self._start(index).live
        for number, (text, recorded) in enumerate(
            zip(data.get("actions", []), data.get("rewards", []), strict=True), 1
        ):
            _obs, reward, _t, _u, _i = self._send(live, int(data["seed"]), text)
            if abs(reward - float(recorded)) > 1e-9:
                raise RuntimeError(
                    f"replaying {self.env_id} (seed {data['seed']}) diverged at action {number}: "
                    f"reward {reward}, recorded {recorded}"
                )
        return live

    def _keep(self, index: int, data: Mapping[str, Any], live: _Live) -> None:
        with self._lock:
            self._live[self._key(index, data)] = live
            while len(self._live) > _CACHE_SIZE:
                self._live.popitem(last=False)

    def _end(self, index: int, data: Mapping[str, Any]) -> None:
        with self._lock:
            self._live.pop(self._key(index, data), None)
        if self._sessions is not None:
            self._sessions.end(data)

    def _run_python(
        self, data: dict[str, Any], calls: Sequence[ToolCall]
    ) -> tuple[Sequence[ToolResult], dict[str, Any]]:
        """Run ``python`` calls: in the episode's session, or each in a fresh interpreter."""
        if self._sessions is not None:
            return self._sessions.run(data, calls)
        return self._executor.execute_batch(calls), data


def _with_suffix(observation: str, info: Any) -> str:
    """GEM's observation with the ``suffix`` its info adds (the board and what to enter next),
    as GEM's own observation wrappers show it."""
    suffix = info.get("suffix") if isinstance(info, Mapping) else None
    return f"{observation}\n{suffix}" if isinstance(suffix, str) and suffix else observation


class _GemFailed(Exception):
    """GEM raised while taking an action."""


def _given(call: ToolCall) -> Any:
    raw = call.raw_arguments
    if not call.arguments and raw is not None and raw.strip() not in ("", "null", "{}"):
        return raw
    return call.arguments


def _check_offline(gem: Any, env_id: str) -> None:
    """``ValueError`` for an unknown id, or one whose environment needs a download."""
    registry = gem.envs.registration.ENV_REGISTRY
    spec = registry.get(env_id)
    if spec is None:
        close = difflib.get_close_matches(env_id, list(registry), n=5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        games = ", ".join(sorted(k for k in registry if k.startswith("game:"))[:8])
        raise ValueError(
            f"unknown GEM environment {env_id!r}{hint} (games: {games}, ...; all: "
            "tooluse.envs.adapters.gem.environment_ids())"
        )
    dataset = spec.kwargs.get("dataset_name")
    if dataset:
        local = (
            " For math:GSM8K, pass data_path=<a GSM8K-format JSONL file> to use tooluse's "
            "math:gsm8k on local data."
            if env_id == "math:GSM8K"
            else ""
        )
        raise ValueError(
            f"GEM environment {env_id!r} loads the Hugging Face data set {dataset!r} "
            "(datasets.load_dataset), which needs a download; tooluse does not download "
            f"data.{local} Offline GEM environments: the game:* and rg:* ones."
        )
    entry = spec.entry_point if isinstance(spec.entry_point, str) else ""
    module = entry.split(":")[0].rsplit(".", 1)[-1]
    if module in _NLTK_WORD_GAMES:
        raise ValueError(
            f"GEM environment {env_id!r} downloads NLTK's 'words' corpus "
            "(nltk.download('words')) each time it starts, and tooluse does not download data; "
            "the other game:* environments work offline"
        )


def build(name: str, *, tool_types: tuple[str, ...] = (), **options: Any) -> ToolEnvironment:
    """The adapter: ``environment_registry.get(name=..., adapter="gem", ...)``.

    Options: ``size`` (tasks, default 50), ``seed`` (task ``i`` uses ``seed + i``, default 0),
    ``split`` (``"test"`` starts at the test seeds, ``"train"`` keeps below them),
    ``gem_kwargs`` (passed to ``gem.make``), ``max_steps``, ``success_reward``, ``rewards``,
    ``python_timeout``, ``python_session``. ``name="math:GSM8K"`` with ``data_path`` gives
    tooluse's native ``math:gsm8k`` (its own options apply).
    """
    if name == "math:GSM8K" and options.get("data_path") is not None:
        from tooluse.envs.gsm8k import GSM8KEnvironment

        return GSM8KEnvironment(tool_types=tool_types, **options)
    if "data_path" in options:
        raise ValueError(
            "data_path is read only for name='math:GSM8K' (tooluse's math:gsm8k); "
            f"GEM environment {name!r} takes no local data"
        )
    return GemEnvironment(name, tool_types=tool_types, **options)
