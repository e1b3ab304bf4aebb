"""Injected tool parameters: values the caller supplies at run time, never the model.

Three ways to mark a parameter as injected, all hidden from the exported schema:

- ``Injected[T]`` (an ``Annotated`` marker) under any name: filled from ``injected[name]``;
- a parameter annotated with :class:`ToolContext` under any name: receives the call context;
- a parameter named ``agent`` (Mesa-LLM convention): receives ``injected["agent"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

__all__ = ["INJECTED", "Injected", "InjectionKind", "ToolContext", "injection_kind"]

T = TypeVar("T")

InjectionKind = Literal["value", "context", "agent"]


class _InjectedMarker:
    """The ``Annotated`` metadata object that marks a parameter as injected."""

    _instance: _InjectedMarker | None = None

    def __new__(cls) -> _InjectedMarker:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "INJECTED"


INJECTED = _InjectedMarker()

# ``Injected[Database]`` is ``Annotated[Database, INJECTED]``: type checkers see ``Database``.
Injected = Annotated[T, INJECTED]


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """What a running tool may know about its call (inject it by annotating a parameter).

    ``values`` holds every injected value the caller passed (for example a database handle).
    """

    call_id: str = ""
    tool_name: str = ""
    agent: Any = None
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        """One injected value by name."""
        return self.values.get(key, default)


def _text_kind(text: str) -> InjectionKind | None:
    compact = text.replace(" ", "")
    last = compact.rsplit(".", 1)[-1]
    if last == "ToolContext" or compact.endswith(".ToolContext"):
        return "context"
    head = compact.split("[", 1)[0].rsplit(".", 1)[-1]
    if head == "Injected":
        return "context" if compact.split("[", 1)[1].startswith("ToolContext") else "value"
    if head == "Annotated":
        inner = compact.split("[", 1)[1]
        if inner.split(",", 1)[0].rsplit(".", 1)[-1] == "ToolContext":
            return "context"
        if "INJECTED" in inner:
            return "value"
    return None


def injection_kind(name: str, annotation: Any) -> InjectionKind | None:
    """How a parameter is injected, or ``None`` when the model supplies it."""
    if annotation is ToolContext:
        return "context"
    if isinstance(annotation, str):
        kind = _text_kind(annotation)
        if kind is not None:
            return kind
    elif get_origin(annotation) is Annotated:
        args = get_args(annotation)
        if any(meta is INJECTED for meta in args[1:]):
            return "context" if args[0] is ToolContext else "value"
        if args[0] is ToolContext:
            return "context"
    if name.lower() == "agent":
        return "agent"
    return None
