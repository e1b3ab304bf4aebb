"""Resources and prompts for :class:`~tooluse.execution.mcp.MCPToolServer` to serve, declared
with :func:`mcp_resource` and :func:`mcp_prompt` (so ``tooluse mcp serve FILE`` finds them)::

    from tooluse.execution.mcp import mcp_prompt, mcp_resource

    @mcp_resource("notes://today", mime_type="text/plain")
    def today() -> str:
        "Today's notes."
        return "Buy milk."

    @mcp_resource("notes://day/{day}")          # a template: {day} is the function's argument
    def notes_of(day: str) -> str:
        "The notes of one day."
        return f"Nothing on {day}."

    @mcp_prompt
    def review(code: str, language: str = "python") -> str:
        '''Review a piece of code.

        Args:
            code: The code to review.
            language: Its language.
        '''
        return f"Review this {language} code:\\n{code}"

A resource function returns text (``str``), data (``bytes``, an :class:`~tooluse.Image` or a
:class:`~tooluse.File`) or anything JSON-able (served as ``application/json`` text). A prompt
function's parameters are the prompt's arguments (required unless they have a default; always
strings on the wire) and it returns a text (one user message), an
:class:`~tooluse.Image` or a :class:`~tooluse.File` (a user message holding it), a
:class:`~tooluse.messages.ChatMessage` or a list of these (MCP prompts hold user and assistant
messages only). Either may be async. No ``mcp`` import here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from tooluse.errors import ToolDefinitionError

__all__ = [
    "PromptArgument",
    "ServedPrompt",
    "ServedResource",
    "TaskSupport",
    "mcp_prompt",
    "mcp_resource",
    "served_declaration",
    "task_support_of",
]

F = TypeVar("F", bound=Callable[..., Any])

_ATTRIBUTE = "__tooluse_mcp_served__"

TaskSupport = Literal["forbidden", "optional", "required"]
"""A served tool's ``execution.taskSupport`` (protocol 2025-11-25 tasks): whether a client may
(``optional``), must (``required``) or may not (``forbidden``) run its calls as tasks."""


@dataclass(frozen=True, kw_only=True)
class ServedResource:
    """A resource to serve: a fixed ``uri``, or a URI template whose ``{variables}`` are the
    function's parameters (a resource template)."""

    uri: str
    function: Callable[..., Any]
    name: str
    description: str = ""
    mime_type: str | None = None

    @property
    def is_template(self) -> bool:
        """Whether ``uri`` is a template (holds ``{...}``)."""
        opening = self.uri.find("{")
        return opening != -1 and self.uri.find("}", opening) != -1


@dataclass(frozen=True, kw_only=True)
class PromptArgument:
    """One argument of a served prompt."""

    name: str
    description: str = ""
    required: bool = True


@dataclass(frozen=True, kw_only=True)
class ServedPrompt:
    """A prompt to serve; its arguments come from the function's signature and docstring."""

    name: str
    function: Callable[..., Any]
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


def _docs(function: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The function's description and its documented parameters."""
    from tooluse.tools.callable_schema import docstring_text, parse_docstring

    doc = parse_docstring(inspect.getdoc(function) or "")
    params = {p.arg_name: p.description or "" for p in doc.params}
    return docstring_text(doc), params


def mcp_resource(
    uri: str,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[F], F]:
    """Mark a function as a served resource at ``uri`` (see the module docs); the function is
    returned unchanged. ``name`` defaults to the function's name, ``description`` to its
    docstring."""
    if not isinstance(uri, str) or "://" not in uri:
        raise ToolDefinitionError(
            f"an MCP resource needs a URI such as 'notes://today', got {uri!r}"
        )

    def mark(function: F) -> F:
        text, _ = _docs(function)
        declared = ServedResource(
            uri=uri,
            function=function,
            name=name or function.__name__,
            description=description if description is not None else text,
            mime_type=mime_type,
        )
        if declared.is_template:
            _check_template_parameters(declared)
        setattr(function, _ATTRIBUTE, declared)
        return function

    return mark


def _check_template_parameters(resource: ServedResource) -> None:
    import re

    variables = set(re.findall(r"{[+#./;?&]?([A-Za-z0-9_]+)", resource.uri))
    parameters = set(inspect.signature(resource.function).parameters)
    if variables != parameters:
        raise ToolDefinitionError(
            f"resource template {resource.uri!r} has the variables {sorted(variables)} but "
            f"{resource.name}() takes {sorted(parameters)}; they must be the same"
        )


@overload
def mcp_prompt(function: F, /) -> F: ...
@overload
def mcp_prompt(*, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...


def mcp_prompt(
    function: Any = None, /, *, name: str | None = None, description: str | None = None
) -> Any:
    """Mark a function as a served prompt (``@mcp_prompt`` or ``@mcp_prompt(name=...)``); the
    function is returned unchanged."""

    def mark(target: F) -> F:
        text, documented = _docs(target)
        arguments = []
        for parameter in inspect.signature(target).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"prompt {target.__name__}() cannot take *args or **kwargs: "
                    "its parameters are the prompt's arguments"
                )
            arguments.append(
                PromptArgument(
                    name=parameter.name,
                    description=documented.get(parameter.name, ""),
                    required=parameter.default is parameter.empty,
                )
            )
        declared = ServedPrompt(
            name=name or target.__name__,
            function=target,
            description=description if description is not None else text,
            arguments=tuple(arguments),
        )
        setattr(target, _ATTRIBUTE, declared)
        return target

    return mark(function) if function is not None else mark


def served_declaration(value: Any) -> ServedResource | ServedPrompt | None:
    """The resource or prompt ``value`` declares (itself, or what its decorator recorded)."""
    if isinstance(value, (ServedResource, ServedPrompt)):
        return value
    declared = getattr(value, _ATTRIBUTE, None)
    return declared if isinstance(declared, (ServedResource, ServedPrompt)) else None


def task_support_of(
    setting: str | Mapping[str, str], names: Sequence[str]
) -> dict[str, TaskSupport]:
    """Each tool's ``execution.taskSupport`` from the server's ``tasks`` setting: one value for
    every tool, or a mapping naming the tools that may (or must) run as tasks (others:
    ``forbidden``). ``ValueError`` names a bad value or an unknown tool."""
    allowed = ("forbidden", "optional", "required")
    chosen = {name: setting for name in names} if isinstance(setting, str) else dict(setting)
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        raise ValueError(f"tasks= names tools that are not served: {', '.join(unknown)}")
    bad = sorted({value for value in chosen.values() if value not in allowed})
    if bad:
        raise ValueError(f"a tool's task support is one of {', '.join(allowed)}, not {bad[0]!r}")
    return {name: chosen.get(name, "forbidden") for name in names}  # type: ignore[misc]
