"""``adapter="openenv"``: an OpenEnv environment server as a tooluse tool environment.

::

    # a server that is already running
    env = environment_registry.get(name="guess", adapter="openenv",
                                   base_url="http://127.0.0.1:8000")
    # or one started here, on 127.0.0.1 and a free port, for the environment's lifetime
    env = environment_registry.get(name="guess", adapter="openenv",
                                   server="guess_server:app", app_dir="envs/guess")
    state, info = env.reset(options={"task_index": 0})
    state.observation.prompt                  # the text of the server's first observation
    call = ToolCall(id="1", name="act", arguments={"guess": 50})
    result = env.step(state, Action(tool_calls=(call,)))
    result.info["tool_results"][0].output     # '50 is wrong; go lower.'

An OpenEnv environment is a FastAPI server (openenv-core's ``create_app``) with a typed
``Action`` (pydantic) and ``Observation``; each WebSocket session on ``/ws`` is one episode
(``reset`` then ``step(action)``, answered with the observation, a reward and ``done``).
Here:

* **Tools.** The action becomes one tool (``tool_name``, default ``act``): its parameters are
  the action model's fields from the server's ``GET /schema`` (without OpenEnv's ``metadata``
  field) and are validated against that schema before anything is sent. The result of a call is
  the text of the observation: its only text field as it is, or else the observation's fields
  as JSON (``observation_field`` picks one field). ``tool_types`` is accepted for the
  registry's sake; the tools are the environment's.
* **Tasks.** Task ``i`` is the environment reset with ``seed=seed + i`` (plus
  ``reset_kwargs``), ``size`` tasks; its prompt is the text of the first observation (after
  ``instructions``, when given).
* **End.** The episode terminates when the server says ``done`` or when the model replies
  without tool calls, and is truncated after ``max_steps`` steps. It is correct when it
  terminated and its return (the sum of the server's rewards) is at least ``success_reward``.
* **Faults.** A server that does not answer raises ``ConnectionError`` naming the URL at
  construction and at ``reset`` (connection attempts give up after ``connect_timeout``
  seconds, answers after ``message_timeout``: nothing hangs). During a step, a call the server
  rejects or fails on, or a lost connection, comes back to the model as an error result; the
  session is dropped and the next step replays the episode on a new one.

==================  =======  ==================================================================
reward              type     value
==================  =======  ==================================================================
OpenEnvReward       step     the sum of the server's rewards for the actions of the step
                             (a missing reward counts 0); no signal for a step without actions
CorrectnessReward   outcome  1 if the episode ended correct (see above), else 0; weight 0
==================  =======  ==================================================================

The validity and efficiency monitors (weight 0) are added as in every environment.

**State.** ``state.data`` holds the task's seed and every action sent with its reward: JSON, so
a state saves, restores and branches. The live sessions of the latest states are kept; any
other state gets a new session that replays its actions from ``reset`` and checks the rewards,
which is exact for environments that are deterministic given the seed (others raise
``RuntimeError`` naming the action where the replay diverged).

This is the only module that imports ``openenv`` (``pip install 'tooluse[openenv]'`` and, as
its declared web-UI dependencies are not needed, ``pip install --no-deps openenv-core``).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tooluse.envs.adapters.openenv_server import OpenEnvServer, fetch_schema
from tooluse.envs.base import (
    Action,
    EnvState,
    Observation,
    StepResult,
    Task,
    ToolEnvironment,
    check_action,
)
from tooluse.envs.rewards import (
    CorrectnessReward,
    RewardSignal,
    RewardType,
    StepContext,
    WeightedReward,
    call_key,
    compute_signals,
)
from tooluse.errors import MissingDependencyError
from tooluse.messages import ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition

__all__ = ["OpenEnvEnvironment", "OpenEnvReward", "OpenEnvServer", "action_tool", "build"]

OPENENV_CORE = "openenv-core==0.3.0"
_CACHE_SIZE = 16


def _client_class() -> Any:
    """openenv-core's ``GenericEnvClient`` (the WebSocket client of any OpenEnv server)."""
    try:
        from openenv.core.generic_client import GenericEnvClient
    except ImportError as exc:  # the extra is missing: say which one, and the no-deps step
        raise MissingDependencyError.installed_without_deps(
            "openenv-core", "openenv", OPENENV_CORE
        ) from exc
    return GenericEnvClient


@dataclass(frozen=True, kw_only=True)
class OpenEnvReward(WeightedReward):
    """The environment's own reward: the sum of the server's rewards for this step's actions."""

    name: str = "openenv_reward"
    reward_type: ClassVar[RewardType] = RewardType.STEP

    def compute(self, context: StepContext) -> RewardSignal | None:
        rewards = context.info.get("openenv_rewards") or []
        if not rewards:
            return None
        return self.signal(float(sum(rewards)), {"actions": len(rewards)})


def action_tool(tool_name: str, action_schema: Mapping[str, Any], env_name: str) -> ToolDefinition:
    """The tool for an OpenEnv action model (its JSON schema, without the ``metadata`` field)."""
    schema = copy.deepcopy(dict(action_schema))
    properties = dict(schema.get("properties") or {})
    properties.pop("metadata", None)  # OpenEnv's bookkeeping field, not for the model
    schema["properties"] = properties
    required = [r for r in schema.get("required", []) if r != "metadata"]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    what = str(schema.pop("description", "") or "").strip()
    schema.pop("title", None)
    lead = f"{what} " if what else ""
    return ToolDefinition.from_schema(
        tool_name,
        schema,
        description=(
            f"{lead}Sends one action to the {env_name} environment; the result is what it "
            "observes next."
        ),
    )


def observation_text(observation: Mapping[str, Any], field: str | None = None) -> str:
    """An observation as text: ``field``, else its only text field, else its fields as JSON."""
    if field is not None:
        value = observation.get(field, "")
        return value if isinstance(value, str) else json.dumps(value, default=str)
    texts = [v for v in observation.values() if isinstance(v, str)]
    if len(observation) == 1 and len(texts) == 1:
        return texts[0]
    return json.dumps(dict(observation), ensure_ascii=False, default=str)


class _Live:
    """An open session (one episode on the server) and the number of actions it has taken."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.actions = 0

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # the server may be gone already; nothing is left to release here
            pass


class _Play:
    """One step's actions: the session (opened on the first call), what was sent and rewarded,
    whether the server ended the episode, and the failure that stopped the step (if any)."""

    def __init__(self, index: int, data: Mapping[str, Any]) -> None:
        self.index = index
        self.data = data
        self.live: _Live | None = None
        self.actions: list[Any] = list(data["actions"])
        self.rewards: list[float] = list(data["rewards"])
        self.step_rewards: list[float] = []
        self.server_done = False
        self.failure = ""


class _StepFailed(Exception):
    """The server rejected or failed on an action, or the connection was lost."""


class OpenEnvEnvironment(ToolEnvironment):
    """An OpenEnv server's environment as a tool environment (see the module for the mapping)."""

    def __init__(  # noqa: PLR0913 -- keyword-only options of the registry
        self,
        env_name: str,
        *,
        base_url: str | None = None,
        server: str | None = None,
        app_dir: str | Path | None = None,
        size: int = 10,
        seed: int = 0,
        reset_kwargs: Mapping[str, Any] | None = None,
        instructions: str = "",
        tool_name: str = "act",
        observation_field: str | None = None,
        rewards: Sequence[Any] | None = None,
        max_steps: int = 20,
        success_reward: float = 1.0,
        connect_timeout: float = 10.0,
        message_timeout: float = 60.0,
        startup_timeout: float = 60.0,
        server_environ: Mapping[str, str] | None = None,
    ) -> None:
        if (base_url is None) == (server is None):
            raise ValueError(
                "the openenv adapter needs base_url='http://host:port' (a running OpenEnv "
                "server) or server='module:app' (one to start here), not both"
            )
        if size < 1:
            raise ValueError("size must be >= 1")
        self._client_class = _client_class()
        self.server = (
            OpenEnvServer(
                server, app_dir=app_dir, startup_timeout=startup_timeout, environ=server_environ
            )
            if server is not None
            else None
        )
        try:
            self.base_url = (self.server.base_url if self.server else str(base_url)).rstrip("/")
            schema = fetch_schema(self.base_url, timeout=connect_timeout)
        except BaseException:
            if self.server is not None:
                self.server.close()
            raise
        self.env_name = env_name
        self.name = f"openenv:{env_name}"
        self.size = size
        self.seed = seed
        self.reset_kwargs = dict(reset_kwargs or {})
        self.instructions = instructions
        self.observation_field = observation_field
        self.success_reward = success_reward
        self.connect_timeout = connect_timeout
        self.message_timeout = message_timeout
        self.schema = schema
        self.action = action_tool(tool_name, schema["action"], env_name)
        self._prompts: dict[int, str] = {}
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self._lock = threading.Lock()
        # Prompts come from the server on demand, so the base class gets a stand-in task;
        # task(), tasks and len() below are the real ones.
        super().__init__(
            (Task(prompt="", reference=None),),
            rewards=(OpenEnvReward(), CorrectnessReward(_weight=0.0))
            if rewards is None
            else rewards,
            max_steps=max_steps,
        )
        self._tools = (self.action,)  # no submit_answer: the server decides when it is over

    # -- tasks -----------------------------------------------------------------------------------

    def task_seed(self, index: int) -> int:
        return self.seed + index

    def task(self, index: int) -> Task:
        self._check_index(index)
        prompt = self._prompts.get(index)
        if prompt is None:
            live = self._open(index)
            self._keep(index, self._fresh_data(index), live)  # reset() takes this session
            prompt = self._prompts[index]
        seed = self.task_seed(index)
        return Task(
            id=f"{self.env_name}/seed={seed}",
            prompt=prompt,
            reference=None,
            metadata={"openenv_url": self.base_url, "seed": seed},
        )

    @property
    def tasks(self) -> tuple[Task, ...]:
        """Every task (each one not yet seen resets the environment once on the server)."""
        return tuple(self.task(i) for i in range(self.size))

    def __len__(self) -> int:
        return self.size

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"task_index {index} is out of range (0..{self.size - 1})")

    # -- episode ---------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[EnvState, dict[str, Any]]:
        """Start task ``options["task_index"]`` (default 0): a new session, reset on the server."""
        index = int((options or {}).get("task_index", 0))
        self._check_index(index)
        data = self._fresh_data(index)
        live = self._take(index, data)
        self._keep(index, data, live)
        state = EnvState(
            task_index=index,
            observation=Observation(prompt=self._prompts[index], available_tools=self._tools),
            data=data,
        )
        info = {
            "task_id": f"{self.env_name}/seed={data['seed']}",
            "task_index": index,
            "seed": seed,
            "openenv_seed": data["seed"],
        }
        return state, info

    def step(self, state: EnvState, action: Action) -> StepResult:
        """Send the action's calls to the server in order (no calls: the episode ends)."""
        check_action(state, action)
        play = _Play(state.task_index, state.data)
        results = tuple(self._act(play, call) for call in action.tool_calls)
        new_data = {**state.data, "actions": play.actions, "rewards": play.rewards}
        step_count = state.step_count + 1
        terminated = play.server_done or not action.tool_calls
        truncated = not terminated and step_count >= self.max_steps
        episode_return = float(sum(play.rewards))
        correct: bool | None = None
        info: dict[str, Any] = {"tool_results": results, "step": step_count}
        if terminated:
            correct = episode_return >= self.success_reward
            ended_by = "server" if play.server_done else "model"
            info.update(correct=correct, ended_by=ended_by, openenv_return=episode_return)
        elif truncated:
            correct = False
            info["truncated_reason"] = f"the episode did not end within {self.max_steps} steps"
        if play.failure:
            info["openenv_error"] = play.failure
        self._settle(state, play, new_data, over=terminated or truncated)
        context = StepContext(
            calls=action.tool_calls,
            results=results,
            previous_calls=state.call_keys,
            text=action.text,
            correct=correct,
            done=terminated or truncated,
            info={"openenv_rewards": play.step_rewards},
        )
        next_state = dataclasses.replace(
            state,
            observation=Observation(
                prompt=state.observation.prompt, available_tools=self._tools, tool_results=results
            ),
            step_count=step_count,
            done=terminated or truncated,
            call_keys=state.call_keys + tuple(call_key(c) for c in action.tool_calls),
            data=new_data,
        )
        return StepResult(
            state=next_state,
            signals=compute_signals(self.rewards, context),
            terminated=terminated,
            truncated=truncated,
            info=info,
        )

    def _act(self, play: _Play, call: ToolCall) -> ToolResult:
        """Send one call to the server (opening the state's session on the first one)."""
        if call.name != self.action.name:
            return ToolResult.failure(
                call.id, call.name, f"unknown tool {call.name!r}; available: {self.action.name}"
            )
        if play.server_done or play.failure:
            why = "the episode ended" if play.server_done else "the environment failed"
            return ToolResult.failure(call.id, call.name, f"ignored: {why} earlier")
        try:
            arguments = self.action.validate_arguments(_given(call))
        except Exception as exc:  # the model gets the problem and may act again
            return ToolResult.failure(call.id, call.name, exc)
        try:
            if play.live is None:
                play.live = self._take(play.index, play.data)
            observation, reward, play.server_done = self._send(play.live, arguments)
        except (_StepFailed, ConnectionError, RuntimeError) as exc:
            play.failure = str(exc)
            return ToolResult.failure(call.id, call.name, play.failure)
        play.actions.append(arguments)
        play.rewards.append(reward)
        play.step_rewards.append(reward)
        text = observation_text(observation, self.observation_field)
        return ToolResult.success(
            call.id, call.name, text, openenv_reward=reward, openenv_done=play.server_done
        )

    def _settle(
        self, state: EnvState, play: _Play, new_data: dict[str, Any], *, over: bool
    ) -> None:
        """Keep the step's session for the next state, or close it (failed or episode over)."""
        if play.live is not None and not play.failure and not over:
            self._keep(state.task_index, new_data, play.live)
        elif play.live is not None:
            play.live.close()
        if over:  # a fresh session of this state is not needed now
            self._drop(state.task_index, state.data)

    async def astep(self, state: EnvState, action: Action) -> StepResult:
        """Async :meth:`step` (in a worker thread: the session client is blocking)."""
        return await asyncio.to_thread(self.step, state, action)

    def close(self) -> None:
        """Close every session and stop the server started here (if any)."""
        with self._lock:
            live, self._live = list(self._live.values()), OrderedDict()
        for one in live:
            one.close()
        if self.server is not None:
            self.server.close()
        super().close()

    # -- sessions --------------------------------------------------------------------------------

    def _fresh_data(self, index: int) -> dict[str, Any]:
        return {"seed": self.task_seed(index), "actions": [], "rewards": []}

    def _open(self, index: int) -> _Live:
        """A new session on the server, reset for task ``index``.

        Servers limit their sessions (OpenEnv's template allows one), and the sessions kept for
        the latest states count: when a session cannot be had, the kept ones are closed (their
        states replay when stepped) and it is tried once more.
        """
        try:
            return self._open_once(index)
        except ConnectionError:
            with self._lock:
                idle, self._live = list(self._live.values()), OrderedDict()
            if not idle:
                raise
            for one in idle:
                one.close()
            return self._open_once(index)

    def _open_once(self, index: int) -> _Live:
        client = self._client_class(
            base_url=self.base_url,
            connect_timeout_s=self.connect_timeout,
            message_timeout_s=self.message_timeout,
        ).sync()
        try:
            client.connect()
            first = client.reset(seed=self.task_seed(index), **self.reset_kwargs)
        except Exception as exc:
            _Live(client).close()
            raise ConnectionError(
                f"the OpenEnv server at {self.base_url} did not start an episode: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        observation = first.observation if isinstance(first.observation, Mapping) else {}
        text = observation_text(observation, self.observation_field)
        self._prompts[index] = f"{self.instructions}\n\n{text}" if self.instructions else text
        return _Live(client)

    def _send(
        self, live: _Live, arguments: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any], float, bool]:
        try:
            result = live.client.step(dict(arguments))
        except Exception as exc:
            raise _StepFailed(f"the OpenEnv server failed on this action: {exc}") from exc
        live.actions += 1
        observation = result.observation if isinstance(result.observation, Mapping) else {}
        reward = float(result.reward) if result.reward is not None else 0.0
        return observation, reward, bool(result.done)

    def _key(self, index: int, data: Mapping[str, Any]) -> str:
        text = json.dumps([index, data.get("seed"), data.get("actions", [])], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _take(self, index: int, data: Mapping[str, Any]) -> _Live:
        """The session of a state: the kept one (so no one else steps it), or a new one that
        replays the state's actions."""
        with self._lock:
            live = self._live.pop(self._key(index, data), None)
        if live is not None:
            return live
        live = self._open(index)
        try:
            for number, (arguments, recorded) in enumerate(
                zip(data.get("actions", []), data.get("rewards", []), strict=True), 1
            ):
                _obs, reward, _done = self._send(live, arguments)
                if abs(reward - float(recorded)) > 1e-9:
                    raise RuntimeError(
                        f"replaying {self.name} (seed {data.get('seed')}) diverged at action "
                        f"{number}: reward {reward}, recorded {recorded}"
                    )
        except BaseException:
            live.close()
            raise
        return live

    def _keep(self, index: int, data: Mapping[str, Any], live: _Live) -> None:
        evicted: list[_Live] = []
        with self._lock:
            old = self._live.pop(self._key(index, data), None)
            if old is not None:
                evicted.append(old)
            self._live[self._key(index, data)] = live
            while len(self._live) > _CACHE_SIZE:
                evicted.append(self._live.popitem(last=False)[1])
        for one in evicted:
            one.close()  # the server limits sessions: give them back

    def _drop(self, index: int, data: Mapping[str, Any]) -> None:
        with self._lock:
            live = self._live.pop(self._key(index, data), None)
        if live is not None:
            live.close()


def _given(call: ToolCall) -> Any:
    raw = call.raw_arguments
    if not call.arguments and raw is not None and raw.strip() not in ("", "null", "{}"):
        return raw
    return call.arguments


def build(name: str, *, tool_types: tuple[str, ...] = (), **options: Any) -> ToolEnvironment:
    """The adapter: ``environment_registry.get(name=..., adapter="openenv", ...)``.

    ``name`` labels the environment (``openenv:<name>``). Options: ``base_url`` or ``server``
    (with ``app_dir`` and ``server_environ``), ``size``, ``seed``, ``reset_kwargs``, ``instructions``, ``tool_name``,
    ``observation_field``, ``rewards``, ``max_steps``, ``success_reward``,
    ``connect_timeout``, ``message_timeout``, ``startup_timeout`` (see
    :class:`OpenEnvEnvironment`).
    """
    return OpenEnvEnvironment(name, **options)
