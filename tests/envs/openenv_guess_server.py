"""A small real OpenEnv environment for the adapter tests: guess a hidden number.

Built on openenv-core's own ``Environment``, ``Action`` and ``Observation`` types and served by
its ``create_app`` (FastAPI, run with uvicorn), exactly as OpenEnv environments ship:

    python -m uvicorn openenv_guess_server:app --app-dir tests/envs --port 8000

``reset(seed=...)`` picks the number from the seed (1..100); each ``guess`` is answered with
"higher" or "lower", and the right one ends the episode with reward 1.0. A guess of 0 makes the
environment raise (to test how failures inside an environment reach the model).
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class GuessAction(Action):
    """Guess the hidden number."""

    guess: int = Field(..., ge=0, le=100, description="Your guess, a whole number from 1 to 100.")


class GuessObservation(Observation):
    """What the environment says about the last guess."""

    message: str = Field(default="", description="The environment's answer.")


class GuessEnvironment(Environment[GuessAction, GuessObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._target = 0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> GuessObservation:
        self._target = random.Random(seed).randint(1, 100)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return GuessObservation(
            message="I picked a whole number from 1 to 100. Guess it: I answer higher or lower.",
            done=False,
            reward=0.0,
        )

    def step(
        self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any
    ) -> GuessObservation:
        if action.guess == 0:
            raise RuntimeError("the guess 0 breaks this environment")
        self._state.step_count += 1
        if action.guess == self._target:
            return GuessObservation(
                message=f"Correct: {action.guess} after {self._state.step_count} guesses.",
                done=True,
                reward=1.0,
            )
        hint = "higher" if action.guess < self._target else "lower"
        return GuessObservation(message=f"{action.guess} is wrong; go {hint}.", reward=0.0)

    @property
    def state(self) -> State:
        return self._state


def target_for(seed: int | None) -> int:
    """The number ``reset(seed=seed)`` hides (what the tests' scripted player guesses)."""
    return random.Random(seed).randint(1, 100)


# GUESS_MAX_SESSIONS limits the server's concurrent sessions (OpenEnv's template allows one).
app = create_app(
    GuessEnvironment,
    GuessAction,
    GuessObservation,
    env_name="guess",
    max_concurrent_envs=int(os.environ.get("GUESS_MAX_SESSIONS", "8")),
)
