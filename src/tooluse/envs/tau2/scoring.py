"""τ²-bench scoring, equal to the package's evaluator (its ``all`` evaluation).

A conversation scores only when it ended by the agent's stop (solo mode: the ``done`` tool) or
the user's; any other end (the step or error limit, an agent or user failure) scores 0. A
task without evaluation criteria scores 1. Otherwise the reward is the product of the parts
named in the task's ``reward_basis``:

- ``DB``: the agent's and the user's database after the conversation equal (by the package's
  hash) those of a fresh environment on which the task's expected actions were run;
- ``ENV_ASSERTION``: each of the task's assertions holds on the conversation's environment;
- ``ACTION``: each expected action was called (same name; the arguments named in its
  ``compare_args``, or all the arguments of the call when it has none, equal);
- ``COMMUNICATE``: each piece of required information appears in an agent message (lower
  case, commas removed).

As in the package, the ``DB``/``ENV_ASSERTION`` part is 1 when the task has neither expected
actions nor assertions, and an empty list of actions or information passes. Natural-language
assertions (``NL_ASSERTION``, which need an LLM judge) are not part of the package's ``all``
evaluation and are not scored here either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SCORED_ENDS", "Tau2Score", "communicated", "matches_action", "score_conversation"]

#: The ends of a conversation that are scored (the others score 0).
SCORED_ENDS = ("agent_stop", "user_stop")
_ENV_BASES = ("DB", "ENV_ASSERTION")


@dataclass(frozen=True, kw_only=True)
class Tau2Score:
    """A conversation's reward and its parts (``breakdown``: reward part -> value)."""

    reward: float
    breakdown: dict[str, float] = field(default_factory=dict)
    db_match: bool | None = None
    env_assertions: tuple[bool, ...] = ()
    actions: tuple[bool, ...] = ()
    communicated: tuple[bool, ...] = ()
    note: str = ""

    @property
    def success(self) -> bool:
        """Whether the task is solved (the package's ``reward == 1``)."""
        return self.reward >= 1.0 - 1e-6

    def to_dict(self) -> dict[str, Any]:
        return {
            "reward": self.reward,
            "breakdown": dict(self.breakdown),
            "db_match": self.db_match,
            "env_assertions": list(self.env_assertions),
            "actions": list(self.actions),
            "communicated": list(self.communicated),
            "note": self.note,
        }


def matches_action(action: Any, name: str, arguments: Mapping[str, Any]) -> bool:
    """Whether a call ``name(arguments)`` is the expected ``action`` (see the module)."""
    if action.name != name:
        return False
    keys = list(arguments) if action.compare_args is None else list(action.compare_args)
    if not keys:
        return True
    wanted = {k: v for k, v in action.arguments.items() if k in keys}
    given = {k: v for k, v in arguments.items() if k in keys}
    return given == wanted


def communicated(info: str, records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``info`` appears in an agent message with text."""
    needle = info.lower()
    for record in records:
        content = record.get("content")
        if record["role"] != "assistant" or not isinstance(content, str) or not content.strip():
            continue
        if needle in content.lower().replace(",", ""):
            return True
    return False


def _calls(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [
        call
        for record in records
        if record["role"] in ("assistant", "user")
        for call in record.get("tool_calls") or ()
    ]


@dataclass(frozen=True, kw_only=True)
class _EnvPart:
    reward: float
    breakdown: dict[str, float]
    db_match: bool | None
    assertions: tuple[bool, ...]


def _environment_part(
    criteria: Any, basis: set[str], environment: Any, gold_hashes: tuple[Any, Any] | None
) -> _EnvPart:
    """The ``DB`` and ``ENV_ASSERTION`` part on the conversation's ``environment``.

    ``gold_hashes`` are the databases' hashes after the expected actions (``None`` when the
    task has neither actions nor assertions)."""
    if gold_hashes is None:
        return _EnvPart(reward=1.0, breakdown={}, db_match=True, assertions=())
    db_match = gold_hashes == (environment.get_db_hash(), environment.get_user_db_hash())
    assertions = []
    for assertion in criteria.env_assertions or ():
        try:
            held = bool(environment.run_env_assertion(assertion, raise_assertion_error=False))
        except Exception:  # an assertion that cannot run on this state does not hold
            held = False
        assertions.append(held)
    db_reward = 1.0 if db_match else 0.0
    assertion_reward = 1.0 if all(assertions) else 0.0
    reward, breakdown = 1.0, {}
    if "DB" in basis:
        breakdown["DB"] = db_reward
        reward *= db_reward
    if "ENV_ASSERTION" in basis:
        breakdown["ENV_ASSERTION"] = assertion_reward
        reward *= assertion_reward
    return _EnvPart(
        reward=reward, breakdown=breakdown, db_match=db_match, assertions=tuple(assertions)
    )


def needs_gold_environment(task: Any) -> bool:
    """Whether scoring ``task`` compares databases (it has expected actions or assertions)."""
    criteria = task.evaluation_criteria
    return criteria is not None and not (
        criteria.actions is None and criteria.env_assertions is None
    )


def score_conversation(
    task: Any,
    records: Sequence[Mapping[str, Any]],
    end: str,
    environment: Any,
    gold_hashes: tuple[Any, Any] | None,
) -> Tau2Score:
    """The reward of a conversation (``records``: its messages, the task's history first)
    that ended with ``end``, on the ``environment`` it left (see the module)."""
    if end not in SCORED_ENDS:
        return Tau2Score(reward=0.0, note=f"the conversation ended early ({end})")
    criteria = task.evaluation_criteria
    if criteria is None:
        return Tau2Score(reward=1.0, note="no evaluation criteria")
    basis = {getattr(b, "value", str(b)) for b in criteria.reward_basis}
    env_part = _environment_part(criteria, basis, environment, gold_hashes)
    calls = _calls(records)
    actions = tuple(
        any(matches_action(a, c["name"], c.get("arguments") or {}) for c in calls)
        for a in criteria.actions or ()
    )
    infos = tuple(communicated(info, records) for info in criteria.communicate_info or ())
    reward, breakdown = 1.0, {}
    if basis & set(_ENV_BASES):
        breakdown.update(env_part.breakdown)
        reward *= env_part.reward
    if "ACTION" in basis:
        breakdown["ACTION"] = 1.0 if all(actions) else 0.0
        reward *= breakdown["ACTION"]
    if "COMMUNICATE" in basis:
        breakdown["COMMUNICATE"] = 1.0 if all(infos) else 0.0
        reward *= breakdown["COMMUNICATE"]
    note = "NL assertions are not scored" if "NL_ASSERTION" in basis else ""
    return Tau2Score(
        reward=reward,
        breakdown=breakdown,
        db_match=env_part.db_match,
        env_assertions=env_part.assertions,
        actions=actions,
        communicated=infos,
        note=note,
    )
