"""``ToolManager``: the Mesa-LLM compatible tool manager.

Holds ``{name: function}`` for one group of agents, produces OpenAI schemas, and runs the tool
calls in a model response: arguments are validated (with the model-facing error on failure),
the calling agent is injected, async tools run in parallel, and every call id gets exactly one
result dict (errors are data, never exceptions).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from tooluse.errors import ToolArgumentError, ToolNotFoundError
from tooluse.messages import ToolCall, new_call_id, render_output
from tooluse.tools.argument_validation import parse_arguments
from tooluse.tools.callable_schema import ToolDefinitionWarning, parse_docstring
from tooluse.tools.class_tool import Tool
from tooluse.tools.definition import ToolDefinition
from tooluse.tools.normalise import TOOL_ATTRIBUTE, as_tool
from tooluse.tools.registry import DEFAULT_REGISTRY, ToolRegistry

__all__ = ["ToolManager", "UnknownToolError", "tool_calls_of"]


class UnknownToolError(ToolNotFoundError, ValueError):
    """A call names a tool the manager does not hold (a ``ValueError`` too, as in Mesa-LLM)."""

    @classmethod
    def worded(cls, name: str, available: list[str], text: str) -> UnknownToolError:
        """The error for ``name`` with the message ``text`` (Mesa-LLM's wording)."""
        error = cls(name, available)
        error.model_message = text
        error.args = (text,)
        return error


def _returns_text(definition: ToolDefinition) -> str:
    """The text of the docstring's Returns section, or ``""``."""
    fn = definition.function
    if fn is None:
        return ""
    doc = parse_docstring(inspect.getdoc(fn) or "")
    returns = doc.returns.description if doc.returns is not None else None
    return " ".join((returns or "").split())


def _without_unknown(definition: ToolDefinition, raw: Any) -> dict[str, Any] | None:
    """The arguments without the names the tool does not take, or ``None`` when none is
    dropped (or the arguments cannot be read). A value for a hidden parameter (the injected
    ``agent``) is never dropped: the model is told it is unknown, as the loop tells it, so it
    cannot believe it chose the agent."""
    schema = definition.parameters_schema
    if schema.get("additionalProperties") not in (False, None):
        return None
    try:
        arguments, _ = parse_arguments(raw, definition.name)
    except ToolArgumentError:
        return None
    if set(arguments) & set(definition.injected):
        return None
    known = set(schema.get("properties") or ())
    kept = {k: v for k, v in arguments.items() if k in known}
    return kept if len(kept) < len(arguments) else None


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

    @staticmethod
    def _schema(definition: ToolDefinition) -> dict[str, Any]:
        """The OpenAI schema, its description ending in the docstring's Returns text as in
        Mesa-LLM (``"Summary. returns: what it gives"``)."""
        schema = definition.to_openai_schema()
        returns = _returns_text(definition)
        if returns:
            function = schema["function"]
            function["description"] = f"{function.get('description', '')} returns: {returns}"
        return schema

    def get_tool_schema(self, fn: Any, schema_name: str) -> dict[str, Any]:
        """OpenAI schema of ``fn`` under the name ``schema_name``.

        As in Mesa-LLM, a function that is not a tool (no ``@tool``, no ``__tool_schema__``)
        answers ``{"error": "Tool <name> missing __tool_schema__"}``, and a function carrying
        a ``__tool_schema__`` dict answers that dict.
        """
        given = getattr(fn, "__tool_schema__", None)
        if isinstance(given, Mapping):
            return dict(given)
        if not isinstance(getattr(fn, TOOL_ATTRIBUTE, None), ToolDefinition) and not isinstance(
            fn, (ToolDefinition, Tool)
        ):
            return {"error": f"Tool {schema_name} missing __tool_schema__"}
        definition = as_tool(fn)
        if definition.name != schema_name:
            from dataclasses import replace

            definition = replace(definition, name=schema_name)
        return self._schema(definition)

    def get_all_tools_schema(self, selected_tools: list[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI schemas: all tools (``None``), none (``[]``) or exactly those named, in order.

        Names the manager does not hold raise :class:`UnknownToolError` (a ``ValueError``)
        naming them all and the tools available, as Mesa-LLM does.
        """
        if selected_tools is None:
            names = list(self._definitions)
        else:
            names = list(selected_tools)
            unknown = [name for name in names if name not in self._definitions]
            if unknown:
                available = sorted(self._definitions)
                raise UnknownToolError.worded(
                    unknown[0],
                    available,
                    f"Unknown tool name(s): {unknown}. Available tools: {available}",
                )
        return [self._schema(self.definition(name)) for name in names]

    def call(self, name: str, arguments: Any = None, *, agent: Any = None) -> str:
        """Run one tool with validated arguments; returns its output as text.

        ``agent`` is injected into tools that take one; as in Mesa-LLM it may also come inside
        ``arguments`` (``call("move", {"agent": a, "direction": "North"})``). A tool returning
        ``None`` answers ``"<name> executed successfully"``. Raises :class:`UnknownToolError`
        (also a ``ValueError``), ``ToolArgumentError`` or what the tool raised.
        """
        if name not in self._definitions:
            available = sorted(self._definitions)
            raise UnknownToolError.worded(
                name, available, f"Tool {name!r} not found; available tools: {available}"
            )
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
            arguments = self._validated(definition, _arguments_of(call))
        except Exception as exc:  # the model's mistake: reported back as data
            return self._error(call, exc)
        return definition, arguments

    @staticmethod
    def _validated(definition: ToolDefinition, raw: Any) -> dict[str, Any]:
        """Validated arguments; as in Mesa-LLM, names the tool does not take are dropped
        when the rest is a valid call (else the error names them, with "did you mean")."""
        try:
            return definition.validate_arguments(raw)
        except ToolArgumentError as first:
            kept = _without_unknown(definition, raw)
            if kept is None:
                raise
            try:
                return definition.validate_arguments(kept)
            except ToolArgumentError:
                raise first from None

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
