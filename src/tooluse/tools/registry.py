"""Tool registries and the ``@tool`` decorator.

A :class:`ToolRegistry` maps names to tool definitions (and the objects they came from).
Duplicate names raise :class:`ToolDefinitionError` unless ``replace=True``; re-registering the
same function (a module reload) is allowed. Scoped registries see their parent's tools and may
shadow them without touching the parent. ``DEFAULT_REGISTRY`` is the process-wide registry
``@tool`` writes to.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, overload

from tooluse.errors import ToolDefinitionError, ToolNotFoundError
from tooluse.tools.callable_schema import is_unbound_method
from tooluse.tools.definition import ToolDefinition
from tooluse.tools.normalise import TOOL_ATTRIBUTE, as_tool

__all__ = ["DEFAULT_REGISTRY", "ToolRegistry", "tool"]

F = TypeVar("F", bound=Callable[..., Any])


def _identity(obj: Any) -> tuple[str, str] | None:
    """Where a function was defined; the same place means the same tool (reloads)."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return module, qualname
    return None


class ToolRegistry:
    """Name -> tool. ``parent`` makes a scoped registry that falls back to the parent."""

    def __init__(self, tools: Any = (), *, parent: ToolRegistry | None = None) -> None:
        self.parent = parent
        self._definitions: dict[str, ToolDefinition] = {}
        self._objects: dict[str, Any] = {}
        self._listeners: list[Callable[[ToolDefinition, Any], None]] = []
        self._lock = threading.RLock()
        for obj in tools:
            self.register(obj)

    def register(
        self, obj: Any, *, name: str | None = None, replace: bool = False
    ) -> ToolDefinition:
        """Add a tool (anything :func:`as_tool` accepts); returns its definition."""
        definition = as_tool(obj)
        if name is not None and name != definition.name:
            from dataclasses import replace as dc_replace

            definition = dc_replace(definition, name=name)
        with self._lock:
            existing = self._objects.get(definition.name)
            if (
                definition.name in self._definitions
                and not replace
                and not (
                    existing is obj
                    or (_identity(existing) and _identity(existing) == _identity(obj))
                )
            ):
                raise ToolDefinitionError(
                    f"a tool named {definition.name!r} is already registered; pass "
                    "replace=True to replace it"
                )
            self._definitions[definition.name] = definition
            self._objects[definition.name] = obj
            listeners = list(self._listeners)
        for listener in listeners:
            listener(definition, obj)
        return definition

    def unregister(self, name: str) -> None:
        """Remove a tool from this registry (not from the parent)."""
        with self._lock:
            if name not in self._definitions:
                raise ToolNotFoundError(name, self.names())
            del self._definitions[name]
            del self._objects[name]

    def get(self, name: str) -> ToolDefinition:
        """The definition registered under ``name``; raises :class:`ToolNotFoundError`."""
        found = self._definitions.get(name)
        if found is not None:
            return found
        if self.parent is not None and name in self.parent:
            return self.parent.get(name)
        raise ToolNotFoundError(name, self.names())

    def get_object(self, name: str) -> Any:
        """The object ``name`` was registered from (a function, a ``Tool`` instance, ...)."""
        if name in self._objects:
            return self._objects[name]
        if self.parent is not None and name in self.parent:
            return self.parent.get_object(name)
        raise ToolNotFoundError(name, self.names())

    def resolve(self, names: Any) -> tuple[ToolDefinition, ...]:
        """Definitions for a list of names, in that order."""
        return tuple(self.get(n) for n in names)

    def names(self) -> list[str]:
        """All visible tool names (this registry's, then the parent's not shadowed)."""
        names = list(self._definitions)
        if self.parent is not None:
            names += [n for n in self.parent.names() if n not in self._definitions]
        return names

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """All visible definitions, in :meth:`names` order."""
        return tuple(self.get(n) for n in self.names())

    def scoped(self) -> ToolRegistry:
        """A child registry that sees this one's tools and may add or shadow its own."""
        return ToolRegistry(parent=self)

    def add_listener(self, listener: Callable[[ToolDefinition, Any], None]) -> None:
        """Call ``listener(definition, obj)`` after every future registration."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[ToolDefinition, Any], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def __contains__(self, name: object) -> bool:
        return name in self._definitions or (self.parent is not None and name in self.parent)

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(self.definitions())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names()!r})"


DEFAULT_REGISTRY = ToolRegistry()


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    is_terminal: bool = False,
    registry: ToolRegistry | None = None,
    tool_manager: Any = None,
    ignore_agent: bool = True,
    replace: bool = False,
    requires_approval: bool = False,
    idempotent: bool = False,
    callers: tuple[str, ...] | str | None = None,
) -> Callable[[F], F]: ...


def tool(  # noqa: PLR0913 - the decorator's options, all keyword-only
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    is_terminal: bool = False,
    registry: ToolRegistry | None = None,
    tool_manager: Any = None,
    ignore_agent: bool = True,
    replace: bool = False,
    requires_approval: bool = False,
    idempotent: bool = False,
    callers: tuple[str, ...] | str | None = None,
) -> Any:
    """Make a function a tool: bare (``@tool``) or with options (``@tool(name=...)``).

    The function stays directly callable; its definition is attached (see :func:`as_tool`).
    It is registered in ``registry`` (default: ``DEFAULT_REGISTRY``), or only in
    ``tool_manager`` when one is given (Mesa-LLM style). A parameter named ``agent`` is always
    injected, never shown to the model (``ignore_agent`` is accepted for Mesa-LLM
    compatibility). ``requires_approval=True`` pauses a run before each call of the tool until
    a person decides; ``idempotent=True`` lets a resumed run repeat a call a crash interrupted;
    ``callers`` says who may call it in code mode (``"direct"``, ``"code"`` or both).

    On a method in a class body the instance is never a parameter: the tool is
    ``instance.method`` (bound on access), and nothing is registered until there is an
    instance to call. A bound method (``tool(obj.method)``) is registered bound.
    """
    del ignore_agent  # the agent parameter is always injected

    def decorate(func: F) -> F:
        definition = ToolDefinition.from_callable(
            func, name=name, description=description, is_terminal=is_terminal
        )
        if requires_approval or idempotent or callers is not None:
            definition = dataclasses.replace(
                definition,
                requires_approval=requires_approval,
                idempotent=idempotent,
                callers=None if callers is None else tuple(_as_tuple(callers)),
            )
        if not inspect.ismethod(func):  # a bound method is registered as it is
            try:
                setattr(func, TOOL_ATTRIBUTE, definition)
            except (AttributeError, TypeError) as exc:
                raise ToolDefinitionError(f"cannot attach a tool definition to {func!r}") from exc
        if is_unbound_method(func):
            # no instance exists yet: the tool is `instance.method`, bound on access
            return func
        entry = definition if inspect.ismethod(func) else func
        if tool_manager is not None:
            tool_manager.register(entry)
        else:
            (registry if registry is not None else DEFAULT_REGISTRY).register(
                entry, replace=replace
            )
        return func

    if fn is not None:
        return decorate(fn)
    return decorate


def _as_tuple(callers: tuple[str, ...] | str) -> tuple[str, ...]:
    return (callers,) if isinstance(callers, str) else tuple(callers)
