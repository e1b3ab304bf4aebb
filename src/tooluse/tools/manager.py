"""``ToolManager``: the Mesa-LLM compatible tool manager.

Holds ``{name: function}`` for one group of agents, produces OpenAI schemas, and runs the tool
calls in a model response: arguments are validated (with the model-facing error on failure),
the calling agent is injected, async tools run in parallel, and every call id gets exactly one
result dict (errors are data, never exceptions).
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from tooluse.errors import ToolNotFoundError
from tooluse.messages import ToolCall, new_call_id, render_output
from tooluse.tools.callable_schema import ToolDefinitionWarning
from tooluse.tools.definition import ToolDefinition
from tooluse.tools.normalise import as_tool
from tooluse.tools.registry import DEFAULT_REGISTRY, ToolRegistry

__all__ = ["ToolManager", "UnknownToolError", "tool_calls_of"]


class UnknownToolError(ToolNotFoundError, ValueError):
    """A call names a tool the manager does not hold (a ``ValueError`` too, as in Mesa-LLM)."""


def _text_output(name: str, output: Any) -> str:
    # Mesa-LLM answers a tool that returns nothing with this sentence, not an empty text
    return f"{name} executed successfully" if output is None else render_output(output)


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def tool_calls_of(response: Any) -> list[ToolCall]:
    """The tool calls in a model response of any common shape.

    Accepts a ``GenerationResult``/``ChatMessage`` (``.tool_calls`` of ``ToolCall``), an
    OpenAI/LiteLLM response or message (``choices[0].message.tool_calls`` with ``function.name``
    and JSON-text ``function.arguments``), their dict forms, or a list of calls.
    """
    if response is None:
        return []
    choices = _field(response, "choices")
    if isinstance(choices, (list, tuple)) and choices:
        response = _field(choices[0], "message", choices[0])
    raw_calls = response if isinstance(response, (list, tuple)) else _field(response, "tool_calls")
    calls: list[ToolCall] = []
    for raw in raw_calls or ():
        if isinstance(raw, ToolCall):
            calls.append(raw)
            continue
        function = _field(raw, "function", raw)
        name = _field(function, "name", "")
        arguments = _field(function, "arguments", None)
        call_id = _field(raw, "id") or new_call_id()
        if isinstance(arguments, Mapping):
            calls.append(ToolCall(id=str(call_id), name=str(name), arguments=dict(arguments)))
        else:
            calls.append(
                ToolCall(
                    id=str(call_id),
                    name=str(name),
                    arguments={},
                    raw_arguments=None if arguments is None else str(arguments),
                )
            )
    return calls


def _arguments_of(call: ToolCall) -> Any:
    if not call.arguments and call.raw_arguments is not None:
        return call.raw_arguments
    return call.arguments


class ToolManager:
    """Tools for one group of agents (Mesa-LLM ``ToolManager``).

    A new manager starts with every tool in ``registry`` (``DEFAULT_REGISTRY``: all ``@tool``
    functions) plus ``extra_tools``, and receives tools registered there later.
    """

    instances: ClassVar[list[ToolManager]] = []

    def __init__(
        self,
        extra_tools: Mapping[str, Callable[..., Any]] | None = None,
        *,
        registry: ToolRegistry | None = DEFAULT_REGISTRY,
    ) -> None:
        self.tools: dict[str, Callable[..., Any]] = {}
        self._definitions: dict[str, ToolDefinition] = {}
        self._lock = threading.RLock()
        if registry is not None:
            for name in registry.names():
                self._add(registry.get(name), registry.get_object(name))
            registry.add_listener(self._on_registered)
        for name, fn in (extra_tools or {}).items():
            definition = as_tool(fn)
            if definition.name != name:
                definition = ToolDefinition.from_callable(fn, name=name)
            self._add(definition, fn)
        ToolManager.instances.append(self)

    def _on_registered(self, definition: ToolDefinition, obj: Any) -> None:
        self._add(definition, obj)

    def _add(self, definition: ToolDefinition, obj: Any) -> None:
        with self._lock:
            self._definitions[definition.name] = definition
            self.tools[definition.name] = obj

    def register(self, fn: Any) -> ToolDefinition:
        """Register a tool (a function, ``@tool`` function, ``Tool``, definition...) by name.

        As in Mesa-LLM, a tool registered under a name already taken replaces the earlier
        one; when that is a different tool, a :class:`ToolDefinitionWarning` names it.
        """
        definition = as_tool(fn)
        with self._lock:
            earlier = self.tools.get(definition.name)
        if earlier is not None and earlier is not fn:
            warnings.warn(
                f"ToolManager: the tool {definition.name!r} replaces an earlier tool of that name",
                ToolDefinitionWarning,
                stacklevel=2,
            )
        self._add(definition, fn)
        return definition

    @classmethod
    def add_tool_to_all(cls, fn: Any) -> None:
        """Register ``fn`` in every existing manager."""
        for manager in list(cls.instances):
            manager.register(fn)

    def has_tool(self, name: str) -> bool:
        return name in self._definitions

    def definition(self, name: str) -> ToolDefinition:
        """The definition of a registered tool; raises :class:`ToolNotFoundError`."""
        found = self._definitions.get(name)
        if found is None:
            raise UnknownToolError(name, list(self._definitions))
        return found

    def get_tool_schema(self, fn: Any, schema_name: str) -> dict[str, Any]:
        """OpenAI schema of ``fn`` under the name ``schema_name``."""
        definition = as_tool(fn)
        if definition.name != schema_name:
            from dataclasses import replace

            definition = replace(definition, name=schema_name)
        return definition.to_openai_schema()

    def get_all_tools_schema(self, selected_tools: list[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI schemas: all tools (``None``), none (``[]``) or exactly those named, in order."""
        if selected_tools is None:
            names = list(self._definitions)
        else:
            names = list(selected_tools)
        return [self.definition(name).to_openai_schema() for name in names]

    def call(self, name: str, arguments: Any = None, *, agent: Any = None) -> str:
        """Run one tool with validated arguments; returns its output as text.

        ``agent`` is injected into tools that take one; as in Mesa-LLM it may also come inside
        ``arguments`` (``call("move", {"agent": a, "direction": "North"})``). A tool returning
        ``None`` answers ``"<name> executed successfully"``. Raises :class:`UnknownToolError`
        (also a ``ValueError``), ``ToolArgumentError`` or what the tool raised.
        """
        definition = self.definition(name)
        if (
            isinstance(arguments, Mapping)
            and "agent" in arguments
            and "agent" not in (definition.parameters_schema.get("properties") or {})
        ):
            arguments = dict(arguments)
            given = arguments.pop("agent")
            agent = given if agent is None else agent
        injected = {"agent": agent} if agent is not None else None
        output = definition.invoke(arguments, injected=injected)
        return _text_output(name, output)

    def _result(self, call: ToolCall, output: str, is_error: bool) -> dict[str, Any]:
        return {
            "tool_call_id": call.id,
            "role": "tool",
            "name": call.name,
            "response": output,
            "is_error": is_error,
        }

    def _error(self, call: ToolCall, exc: BaseException) -> dict[str, Any]:
        text = getattr(exc, "model_message", None) or f"{type(exc).__name__}: {exc}"
        if not text.startswith(("Error", "error")):
            text = f"Error: {text}"
        return self._result(call, text, True)

    def _prepare(
        self, agent: Any, call: ToolCall
    ) -> tuple[ToolDefinition, dict[str, Any]] | dict[str, Any]:
        try:
            definition = self.definition(call.name)
            arguments = definition.validate_arguments(_arguments_of(call))
        except Exception as exc:  # the model's mistake: reported back as data
            return self._error(call, exc)
        return definition, arguments

    async def acall_tools(self, agent: Any, llm_response: Any) -> list[dict[str, Any]]:
        """Run every tool call in ``llm_response``; async tools run in parallel.

        Returns one dict per call id, in call order: ``tool_call_id``, ``role`` ("tool"),
        ``name``, ``response`` (text) and ``is_error``.
        """
        calls = tool_calls_of(llm_response)
        results: list[dict[str, Any] | None] = [None] * len(calls)
        pending: list[tuple[int, Any]] = []
        for index, call in enumerate(calls):
            prepared = self._prepare(agent, call)
            if isinstance(prepared, dict):
                results[index] = prepared
                continue
            definition, arguments = prepared
            injected = {"agent": agent}
            if definition.is_async:
                pending.append(
                    (
                        index,
                        definition.ainvoke(
                            arguments, injected=injected, call_id=call.id, validate=False
                        ),
                    )
                )
                continue
            try:
                output = definition.invoke(
                    arguments, injected=injected, call_id=call.id, validate=False
                )
                results[index] = self._result(call, _text_output(call.name, output), False)
            except Exception as exc:  # a failing tool must not break the other calls
                results[index] = self._error(call, exc)
        if pending:
            outcomes = await asyncio.gather(*(c for _, c in pending), return_exceptions=True)
            for (index, _), outcome in zip(pending, outcomes, strict=True):
                call = calls[index]
                if isinstance(outcome, BaseException):
                    if not isinstance(outcome, Exception):
                        raise outcome
                    results[index] = self._error(call, outcome)
                else:
                    results[index] = self._result(call, _text_output(call.name, outcome), False)
        return [r for r in results if r is not None]

    def call_tools(self, agent: Any, llm_response: Any) -> list[dict[str, Any]]:
        """Synchronous :meth:`acall_tools`; safe to call from inside a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.acall_tools(agent, llm_response))
        # inside a running loop: run on a private loop in a helper thread
        box: dict[str, Any] = {}

        def worker() -> None:
            try:
                box["value"] = asyncio.run(self.acall_tools(agent, llm_response))
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=worker, name="tooluse-call-tools")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"ToolManager({list(self.tools)!r})"
